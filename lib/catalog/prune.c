/* prune.c - retention by keep rules, PBS semantics, one transaction. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "catalog/dataset.h"
#include "store/store.h"

typedef struct psnap {
	int64_t id;
	char *name;
	int64_t creation;
	uint32_t userrefs;
	int mark; /* 0 undecided, 1 keep, 2 remove */
	char reason[32];
} psnap_t;

typedef void (*bucket_fn)(int64_t t, char *out, size_t len);

static void fmt_local(int64_t t, const char *fmt, char *out, size_t len)
{
	time_t tt = t;
	struct tm tm;
	/* A time no calendar can show (year beyond int) gets a bucket of its
	 * own instead of an uninitialized struct tm. */
	if (!localtime_r(&tt, &tm) || !strftime(out, len, fmt, &tm))
		snprintf(out, len, "?%lld", (long long)t);
}

static void b_last(int64_t t, char *out, size_t len) { snprintf(out, len, "%p", (void *)out); (void)t; }
static void b_hourly(int64_t t, char *o, size_t l) { fmt_local(t, "%Y-%m-%d %H", o, l); }
static void b_daily(int64_t t, char *o, size_t l) { fmt_local(t, "%Y-%m-%d", o, l); }
static void b_weekly(int64_t t, char *o, size_t l) { fmt_local(t, "%G-W%V", o, l); }
static void b_monthly(int64_t t, char *o, size_t l) { fmt_local(t, "%Y-%m", o, l); }
static void b_yearly(int64_t t, char *o, size_t l) { fmt_local(t, "%Y", o, l); }

static bool seen(char (*keys)[32], size_t n, const char *k)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(keys[i], k))
			return true;
	return false;
}

/* One rule over the snapshots, newest first.  Buckets already covered by a
 * snapshot kept by an earlier rule are skipped; a new bucket keeps its
 * newest snapshot; later snapshots of a filled bucket are removed. */
static int mark_rule(psnap_t *v, size_t n, uint32_t keep, bucket_fn fn, const char *label)
{
	if (!keep)
		return 0;
	char (*have)[32] = calloc(n + 1, 32), (*incl)[32] = calloc(keep + 1, 32);
	if (!have || !incl) {
		free(have);
		free(incl);
		return -ENOMEM;
	}
	size_t nhave = 0, nincl = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].mark == 1 && strcmp(v[i].reason, "held"))
			fn(v[i].creation, have[nhave++], 32);
	for (size_t i = 0; i < n; i++) {
		if (v[i].mark)
			continue;
		char key[32];
		if (fn == b_last)
			snprintf(key, sizeof(key), "%zu", i);
		else
			fn(v[i].creation, key, sizeof(key));
		if (seen(have, nhave, key))
			continue;
		if (!seen(incl, nincl, key)) {
			if (nincl >= keep)
				break;
			snprintf(incl[nincl++], 32, "%s", key);
			v[i].mark = 1;
			snprintf(v[i].reason, sizeof(v[i].reason), "%s %zu", label, nincl);
		} else {
			v[i].mark = 2;
		}
	}
	free(have);
	free(incl);
	return 0;
}

static int load(cairn_store *st, int64_t ds, psnap_t **out, size_t *n, const char *dsname)
{
	sqlite3_stmt *s;
	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT id, name, creation, userrefs FROM snapshot WHERE dataset=?"
			       " ORDER BY createtxg DESC",
			       -1, &s, NULL))
		return -EIO;
	sqlite3_bind_int64(s, 1, ds);
	int r = 0;
	size_t cap = 0;
	while (r == 0 && sqlite3_step(s) == SQLITE_ROW) {
		if (array_reserve(out, &cap, *n + 1, sizeof(**out)) < 0) {
			r = -ENOMEM;
			break;
		}
		psnap_t *e = &(*out)[(*n)++];
		memset(e, 0, sizeof(*e));
		e->id = sqlite3_column_int64(s, 0);
		if (asprintf(&e->name, "%s@%s", dsname, sqlite3_column_text(s, 1)) < 0)
			r = -ENOMEM;
		e->creation = sqlite3_column_int64(s, 2);
		e->userrefs = sqlite3_column_int(s, 3);
	}
	sqlite3_finalize(s);
	return r;
}

int cairn_prune(cairn_store *st, const char *dataset, cairn_prune_opts *o)
{
	int r = STORE_ENTER(st, dataset);
	if (r < 0)
		return r;
	if (!o)
		return store_err(st, -EINVAL, "prune: no options (the keep rules are required)");
	if (!o->keep_last && !o->keep_hourly && !o->keep_daily && !o->keep_weekly &&
	    !o->keep_monthly && !o->keep_yearly && !o->keep_within)
		return store_err(st, -EINVAL,
				 "no keep rule given: refusing to remove every snapshot");
	if (o->keep_within < 0)
		return store_err(st, -EINVAL, "keep_within is negative (%lld s)",
				 (long long)o->keep_within);
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	ds_row_t ds = {0};
	psnap_t *v = NULL;
	size_t n = 0;
	r = dataset_lookup(st, dataset, &ds);
	if (r == 0)
		r = load(st, ds.id, &v, &n, ds.name);
	/* Held snapshots are kept and fill no bucket, like PBS's protected. */
	for (size_t i = 0; r == 0 && i < n; i++)
		if (v[i].userrefs) {
			v[i].mark = 1;
			snprintf(v[i].reason, sizeof(v[i].reason), "held");
		}
	if (r == 0)
		r = mark_rule(v, n, o->keep_last, b_last, "last");
	if (r == 0)
		r = mark_rule(v, n, o->keep_hourly, b_hourly, "hourly");
	if (r == 0)
		r = mark_rule(v, n, o->keep_daily, b_daily, "daily");
	if (r == 0)
		r = mark_rule(v, n, o->keep_weekly, b_weekly, "weekly");
	if (r == 0)
		r = mark_rule(v, n, o->keep_monthly, b_monthly, "monthly");
	if (r == 0)
		r = mark_rule(v, n, o->keep_yearly, b_yearly, "yearly");
	/* Saturating: the newest creation may be anything a catalog holds,
	 * INT64_MIN included. */
	int64_t since = INT64_MIN;
	if (n && __builtin_sub_overflow(v[0].creation, o->keep_within, &since))
		since = INT64_MIN;
	for (size_t i = 0; r == 0 && o->keep_within && i < n; i++)
		if (v[i].mark != 1 && v[i].creation >= since) {
			v[i].mark = 1;
			snprintf(v[i].reason, sizeof(v[i].reason), "within");
		}
	int64_t *gone = calloc(n + 1, sizeof(*gone));
	size_t ngone = 0;
	if (r == 0 && !gone)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++) {
		bool keep = v[i].mark == 1;
		if (o->item)
			o->item(v[i].name, keep, keep ? v[i].reason : "", o->arg);
		if (keep)
			o->kept++;
		else {
			o->removed++;
			gone[ngone++] = v[i].id;
		}
	}
	if (r == 0 && !o->dry_run && ngone)
		r = destroy_snapshots_in_txn(st, gone, ngone, NULL);
	free(gone);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	ds_row_clear(&ds);
	if (o->dry_run && r == 0)
		catalog_rollback(st->cat); /* a dry run leaves the catalog as it was */
	else
		r = store_txn_end(st, r);
	return r;
}
