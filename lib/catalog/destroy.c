/* destroy.c - destroying datasets, snapshots and bookmarks in one
 * transaction, keeping the survivors' space accounting true. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "catalog/dataset.h"
#include "catalog/snapshot.h"
#include "crypt/encroot.h"
#include "crypt/keyring.h"
#include "data/snapio.h"
#include "store/store.h"

typedef struct victim {
	int64_t id, ds;
	uint64_t createtxg;
	uint32_t userrefs;
	char *name; /* full "ds@snap" */
} victim_t;

/* What destroying encryption roots leaves for the end of the outermost
 * transaction: their keys, and the claims that keep commands from taking
 * them meanwhile.  The keys leave the keyring only after the final commit:
 * a receive's -F destroy is part of the receive, which may still roll back
 * and bring the root back, and then with its key loaded, as it was.
 * The claims last as long, not only to the release of the destroy's own
 * savepoint: that release is no commit, every other process still sees
 * the root, and its key stays loaded until the final commit, so a command
 * that took the key in between would have the root destroyed and its key
 * unloaded under it, the busy dataset zfs refuses to destroy.  A claim
 * cannot be taken again at the commit either (a busy root found then
 * could no longer refuse anything).  In a receive the outermost
 * transaction is the commit of the group that applies the -F destroys
 * (its first), so later groups run unclaimed; a dry run's, which only
 * rolls back, keeps no claim past the busy check (cairn_destroy). */
typedef struct keydrop {
	char (*keys)[64]; /* keyring names of the roots removed (two each at most) */
	size_t nkeys;
	/* encroot_key_claim's locks, all roots' through one descriptor (-1:
	 * none): no command takes the keys meanwhile */
	int claimfd;
} keydrop_t;

typedef struct plan {
	victim_t *v;
	size_t n, cap;
	int64_t *ds; /* datasets to remove, deepest last in name order */
	size_t nds;
	char **dsnames;
	keydrop_t *drop; /* until catalog_on_end takes it */
	bool for_other; /* destroying for rollback or prune: -d means nothing there */
} plan_t;

/* catalog_on_end of a destroy: unloads the roots' keys once it committed
 * (nothing else could reach them once the datasets are gone), then lets
 * go of the claims. */
static void keydrop_end(void *arg, bool committed)
{
	keydrop_t *d = arg;
	for (size_t i = 0; committed && i < d->nkeys; i++)
		keyring_unload(d->keys[i]);
	/* after the unload: a command that waited then finds no key */
	if (d->claimfd >= 0)
		close(d->claimfd);
	free(d->keys);
	free(d);
}

static void plan_free(plan_t *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].name);
	for (size_t i = 0; i < p->nds; i++)
		free(p->dsnames[i]);
	free(p->v);
	free(p->ds);
	free(p->dsnames);
	if (p->drop)
		keydrop_end(p->drop, false);
}

static int keydrop_get(plan_t *p)
{
	if (p->drop)
		return 0;
	if (!(p->drop = calloc(1, sizeof(*p->drop))))
		return -ENOMEM;
	p->drop->claimfd = -1;
	return 0;
}

/* zfs refuses to destroy a dataset in use ("dataset is busy"): an
 * encryption root is, while a running command holds its key (a backup, a
 * restore, a plain send...).  All roots are checked before anything changes;
 * the claims keep new users of their keys out until keydrop_end.  A root
 * that cannot be claimed at all (the lock file not writable by this user)
 * is refused too: whether it is busy cannot be told. */
static int claim_root_keys(cairn_store *st, plan_t *p)
{
	int r = 0;
	for (size_t i = 0; r == 0 && i < p->nds; i++) {
		ds_row_t ds = {0};
		r = catalog_ds_by_id(st->cat, p->ds[i], &ds);
		int root = r == 0 ? encroot_is_root(st, &ds) : 0;
		if (r == 0 && root < 0)
			r = root;
		else if (root == 1 && (r = keydrop_get(p)) == 0)
			r = encroot_key_claim(st, &ds, &p->drop->claimfd); /* names why */
		ds_row_clear(&ds);
	}
	return r;
}

/* Notes the keyring name of dataset id if it is an encryption root: its
 * loaded key goes after the commit, as in zfs (keydrop_end). */
static int note_root_key(cairn_store *st, plan_t *p, int64_t id)
{
	ds_row_t ds = {0};
	int r = catalog_ds_by_id(st->cat, id, &ds);
	if (r == 0 && encroot_is_root(st, &ds) == 1 && (r = keydrop_get(p)) == 0) {
		keydrop_t *d = p->drop;
		/* Two names a root: its key's, and the one an earlier build
		 * gave it (by guid), which nothing could reach after this. */
		if (!d->keys && !(d->keys = calloc(2 * p->nds, sizeof(*d->keys))))
			r = -ENOMEM;
		else if (encroot_desc(st, &ds, d->keys[d->nkeys]) == 0)
			d->nkeys++;
		if (r == 0 && encroot_legacy_desc(st, &ds, d->keys[d->nkeys]) == 0)
			d->nkeys++;
	}
	ds_row_clear(&ds);
	return r < 0 ? r : 0;
}

static int victim_add(plan_t *p, const snap_row_t *s, const char *dsname)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].id == s->id)
			return 0;
	if (p->n == p->cap) {
		size_t n = p->cap ? p->cap * 2 : 16;
		victim_t *q = realloc(p->v, n * sizeof(*q));
		if (!q)
			return -ENOMEM;
		p->v = q;
		p->cap = n;
	}
	victim_t *v = &p->v[p->n];
	v->id = s->id;
	v->ds = s->dataset;
	v->createtxg = s->createtxg;
	v->userrefs = s->userrefs;
	if (asprintf(&v->name, "%s@%s", dsname, s->name) < 0)
		return -ENOMEM;
	p->n++;
	return 0;
}

/* Every snapshot of dataset ds with createtxg in [lo, hi]. */
static int add_range(cairn_store *st, plan_t *p, const ds_row_t *ds, uint64_t lo, uint64_t hi)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT id, name, createtxg, userrefs FROM snapshot WHERE dataset=?"
			       " AND createtxg BETWEEN ? AND ? ORDER BY createtxg",
			       -1, &s, NULL))
		return -EIO;
	sqlite3_bind_int64(s, 1, ds->id);
	sqlite3_bind_int64(s, 2, lo);
	sqlite3_bind_int64(s, 3, hi > INT64_MAX ? INT64_MAX : hi);
	int r = 0;
	while (r == 0 && sqlite3_step(s) == SQLITE_ROW) {
		snap_row_t row = {.id = sqlite3_column_int64(s, 0), .dataset = ds->id,
				  .name = (char *)sqlite3_column_text(s, 1),
				  .createtxg = sqlite3_column_int64(s, 2),
				  .userrefs = sqlite3_column_int(s, 3)};
		r = victim_add(p, &row, ds->name);
	}
	sqlite3_finalize(s);
	return r;
}

static int snap_txg(cairn_store *st, const ds_row_t *ds, const char *name, uint64_t *txg,
		    bool must)
{
	snap_row_t s = {0};
	int r = catalog_snap_lookup(st->cat, ds->id, name, &s);
	*txg = s.createtxg;
	snap_row_clear(&s);
	if (r == -ENOENT && must)
		return store_err(st, r, "%s@%s: snapshot does not exist", ds->name, name);
	return r;
}

/* One element of "a,b%c,..." applied to one dataset.  With `must`, a
 * missing snapshot is an error (the dataset named on the command line);
 * for descendants under -r it is skipped. */
static int add_spec(cairn_store *st, plan_t *p, const ds_row_t *ds, char *elem, bool must,
		    bool named)
{
	char *pct = strchr(elem, '%');
	char why[256];
	uint64_t lo = 0, hi = UINT64_MAX;
	if (!pct) {
		/* Only the name as given must be valid: a descendant's longer
		 * name that could not be valid cannot exist either, and is
		 * skipped as any descendant without the snapshot. */
		char full[600];
		snprintf(full, sizeof(full), "%s@%s", ds->name, elem);
		if (named && cairn_name_check(full, true, why, sizeof(why)) < 0)
			return store_err(st, CAIRN_EBADNAME, "%s: %s", full, why);
		int r = snap_txg(st, ds, elem, &lo, must);
		if (r == -ENOENT && !must)
			return 0;
		if (r < 0)
			return r;
		return add_range(st, p, ds, lo, lo);
	}
	*pct = 0;
	int r = 0;
	if (*elem)
		r = snap_txg(st, ds, elem, &lo, must);
	if (r == 0 && pct[1])
		r = snap_txg(st, ds, pct + 1, &hi, must);
	if (r == -ENOENT && !must)
		return 0;
	if (r < 0)
		return r;
	if (lo > hi)
		return store_err(st, -EINVAL, "%s@%s%%%s: range is reversed", ds->name, elem,
				 pct + 1);
	return add_range(st, p, ds, lo, hi);
}

static int plan_snapshots(cairn_store *st, plan_t *p, const char *target, bool recursive)
{
	const char *at = strchr(target, '@');
	char *dsname = strndup(target, at - target);
	ds_row_t ds = {0};
	int r = dsname ? dataset_lookup(st, dsname, &ds) : -ENOMEM;
	free(dsname);
	int64_t *ids = NULL;
	size_t nids = 0;
	if (r == 0 && recursive)
		r = catalog_ds_subtree(st->cat, ds.id, &ids, &nids);
	for (size_t k = 0; r == 0 && k < (recursive ? nids : 1); k++) {
		ds_row_t cur = {0};
		r = recursive ? catalog_ds_by_id(st->cat, ids[k], &cur) : 0;
		const ds_row_t *d = recursive ? &cur : &ds;
		char *list = r == 0 ? strdup(at + 1) : NULL, *save;
		if (r == 0 && !list)
			r = -ENOMEM;
		/* As zfs: names in a list that do not exist are skipped (so are
		 * descendants without the name under -r); a range's ends must
		 * exist in the named dataset. */
		for (char *e = list ? strtok_r(list, ",", &save) : NULL; r == 0 && e;
		     e = strtok_r(NULL, ",", &save))
			r = add_spec(st, p, d, e, d->id == ds.id && strchr(e, '%'), d->id == ds.id);
		free(list);
		ds_row_clear(&cur);
	}
	if (r == 0 && !p->n) {
		bool single = !recursive && !strpbrk(at + 1, ",%");
		r = single ? store_err(st, -ENOENT, "%s: snapshot does not exist", target)
			   : store_err(st, -ENOENT,
				       "%s: could not find any snapshots to destroy; check snapshot "
				       "names", target);
	}
	free(ids);
	ds_row_clear(&ds);
	return r;
}

static int count_rows(cairn_store *st, const char *sql, int64_t id)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(catalog_db(st->cat), sql, -1, &s, NULL))
		return -EIO;
	sqlite3_bind_int64(s, 1, id);
	int n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : -EIO;
	sqlite3_finalize(s);
	return n;
}

static int plan_dataset(cairn_store *st, plan_t *p, const char *target, bool recursive)
{
	ds_row_t ds = {0};
	int r = dataset_lookup(st, target, &ds);
	if (r < 0)
		return r;
	if (!recursive) {
		int kids = count_rows(st, "SELECT COUNT(*) FROM dataset WHERE parent=?", ds.id);
		int snaps = count_rows(st, "SELECT COUNT(*) FROM snapshot WHERE dataset=?", ds.id);
		if (kids > 0 || snaps > 0) {
			r = store_err(st, -EBUSY, "%s: dataset has %s (use -r to destroy them too)",
				      target, kids > 0 ? "children" : "snapshots");
			ds_row_clear(&ds);
			return r;
		}
	}
	r = catalog_ds_subtree(st->cat, ds.id, &p->ds, &p->nds);
	p->dsnames = r == 0 ? calloc(p->nds + 1, sizeof(char *)) : NULL;
	if (r == 0 && !p->dsnames)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < p->nds; i++) {
		ds_row_t d = {0};
		r = catalog_ds_by_id(st->cat, p->ds[i], &d);
		if (r == 0)
			r = add_range(st, p, &d, 0, UINT64_MAX);
		p->dsnames[i] = d.name;
		d.name = NULL;
		ds_row_clear(&d);
	}
	ds_row_clear(&ds);
	return r;
}

/* ---- holds ---- */

static int hold_tags(cairn_store *st, int64_t snap, char *out, size_t len)
{
	sqlite3_stmt *s;
	out[0] = 0;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT tag FROM hold WHERE snapshot=? ORDER BY tag", -1, &s, NULL))
		return -EIO;
	sqlite3_bind_int64(s, 1, snap);
	size_t used = 0;
	while (sqlite3_step(s) == SQLITE_ROW && used + 1 < len)
		used += snprintf(out + used, len - used, "%s%s", used ? ", " : "",
				 sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return 0;
}

/* ---- accounting ---- */

typedef struct snapent {
	int64_t id;
	bool gone;
} snapent_t;

static int ds_snapshots(cairn_store *st, int64_t ds, snapent_t **out, size_t *n)
{
	sqlite3_stmt *s;
	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT id FROM snapshot WHERE dataset=? ORDER BY createtxg", -1, &s,
			       NULL))
		return -EIO;
	sqlite3_bind_int64(s, 1, ds);
	size_t cap = 0;
	int r = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			snapent_t *p = realloc(*out, cap * sizeof(*p));
			if (!p) {
				r = -ENOMEM;
				break;
			}
			*out = p;
		}
		(*out)[(*n)++] = (snapent_t){.id = sqlite3_column_int64(s, 0)};
	}
	sqlite3_finalize(s);
	return r;
}

/* An index chunk accounting could not read, and whose index it is. */
typedef struct acctfail {
	chunk_ref_t ref;
	int64_t snap;
} acctfail_t;

static int add_index_to(cairn_store *st, int64_t id, refset_t *set, acctfail_t *f)
{
	buf_t idx = {0};
	int r = catalog_snap_index(st->cat, id, &idx);
	idxrd_t x;
	idxrd_open(&x, st->cs, &idx);
	chunk_ref_t ref;
	while (r == 0 && (r = idxrd_next(&x, &ref)) == 1)
		r = refset_add(set, &ref) < 0 ? -ENOMEM : 0;
	if (r < 0 && idxrd_failed(&x, &f->ref))
		f->snap = id;
	idxrd_close(&x);
	buf_free(&idx);
	return r < 0 ? r : 0;
}

/* Bytes of the run's chunks that neither surviving neighbour has. */
static int run_freed(cairn_store *st, const snapent_t *v, size_t lo, size_t hi, int64_t prev,
		     int64_t next, uint64_t *freed, acctfail_t *f)
{
	refset_t run = {0}, keep = {0};
	int r = 0;
	for (size_t i = lo; r == 0 && i < hi; i++)
		r = add_index_to(st, v[i].id, &run, f);
	if (r == 0 && prev)
		r = add_index_to(st, prev, &keep, f);
	if (r == 0 && next)
		r = add_index_to(st, next, &keep, f);
	for (size_t i = 0; r == 0 && i < run.cap; i++) {
		const chunk_ref_t *c = &run.slots[i];
		bool empty = true;
		for (int k = 0; k < DIGEST_LEN && empty; k++)
			empty = !c->digest.b[k];
		if (!empty && !refset_has(&keep, &c->digest))
			*freed += c->stored_len;
	}
	if (r == 0 && run.has_zero && !keep.has_zero)
		*freed += run.zero.stored_len;
	refset_free(&run);
	refset_free(&keep);
	return r;
}

/* index_unique_bytes, with a chunk it could not read put in *f. */
static int unique_bytes(cairn_store *st, const buf_t *self, const buf_t *a, const buf_t *b,
			const int64_t ids[3], uint64_t *bytes, acctfail_t *f)
{
	idxfail_t x;
	int r = index_unique_bytes(st->cs, self, a, b, bytes, &x);
	if (r < 0 && x.ref.plain_len) {
		f->ref = x.ref;
		f->snap = ids[x.input];
	}
	return r;
}

/* Recomputes used (and, when its predecessor changed, written) of id from
 * the indexes; both are written only when both could be computed. */
static int update_survivor(cairn_store *st, int64_t id, int64_t prev, int64_t next,
			   bool prev_changed, acctfail_t *f)
{
	buf_t self = {0}, p = {0}, n = {0};
	int r = catalog_snap_index(st->cat, id, &self);
	if (r == 0 && prev)
		r = catalog_snap_index(st->cat, prev, &p);
	if (r == 0 && next)
		r = catalog_snap_index(st->cat, next, &n);
	const int64_t ids[3] = {id, prev, next};
	uint64_t used = 0, written = 0;
	if (r == 0)
		r = unique_bytes(st, &self, prev ? &p : NULL, next ? &n : NULL, ids, &used, f);
	if (r == 0 && prev_changed)
		r = unique_bytes(st, &self, prev ? &p : NULL, NULL, ids, &written, f);
	if (r == 0)
		r = catalog_snap_set_used(st->cat, id, used);
	if (r == 0 && prev_changed) {
		sqlite3_stmt *s;
		if (sqlite3_prepare_v2(catalog_db(st->cat), "UPDATE snapshot SET written=? WHERE id=?",
				       -1, &s, NULL))
			r = -EIO;
		else {
			sqlite3_bind_int64(s, 1, written);
			sqlite3_bind_int64(s, 2, id);
			r = sqlite3_step(s) == SQLITE_DONE ? 0 : -EIO;
			sqlite3_finalize(s);
		}
	}
	buf_free(&self);
	buf_free(&p);
	buf_free(&n);
	return r;
}

/* "ds@snap" of a snapshot id, for a warning. */
static void snap_fullname(cairn_store *st, int64_t id, char *out, size_t len)
{
	sqlite3_stmt *s;
	snprintf(out, len, "snapshot %lld", (long long)id);
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT d.name, s.name FROM snapshot s JOIN dataset d ON d.id = s.dataset"
			       " WHERE s.id=?",
			       -1, &s, NULL))
		return;
	sqlite3_bind_int64(s, 1, id);
	if (sqlite3_step(s) == SQLITE_ROW)
		snprintf(out, len, "%s@%s", sqlite3_column_text(s, 0), sqlite3_column_text(s, 1));
	sqlite3_finalize(s);
}

/* True when r was an index chunk that could not be read (f), reported
 * for the figures of snapshot `who` (accounting_skipped). */
static bool skipped(cairn_store *st, int r, const acctfail_t *f, int64_t who,
		    cairn_destroy_opts *o)
{
	if (!f->ref.plain_len)
		return false;
	char w[1024], of[1024];
	snap_fullname(st, who, w, sizeof(w));
	snap_fullname(st, f->snap, of, sizeof(of));
	if (!accounting_skipped(st, r, &f->ref, w, of, o->warn, o->arg))
		return false;
	o->unaccounted++;
	return true;
}

/* update_survivor; an index chunk that cannot be read leaves this
 * survivor's figures as they were, and is reported. */
static int update_or_warn(cairn_store *st, int64_t id, int64_t prev, int64_t next,
			  bool prev_changed, cairn_destroy_opts *o)
{
	acctfail_t f = {0};
	int r = update_survivor(st, id, prev, next, prev_changed, &f);
	return r == 0 || skipped(st, r, &f, id, o) ? 0 : r;
}

/* The survivors next to a gone run [lo, hi): prev's next changed and
 * next's prev changed. */
static int update_neighbours(cairn_store *st, const snapent_t *v, size_t n, size_t lo,
			     size_t hi, cairn_destroy_opts *o)
{
	int64_t prev = lo ? v[lo - 1].id : 0, next = hi < n ? v[hi].id : 0;
	int64_t pp = 0, nn = 0;
	for (size_t k = lo; k-- > 0;)
		if (!v[k].gone && v[k].id != prev) {
			pp = v[k].id;
			break;
		}
	for (size_t k = hi + 1; k < n; k++)
		if (!v[k].gone) {
			nn = v[k].id;
			break;
		}
	int r = 0;
	if (prev)
		r = update_or_warn(st, prev, pp, next, false, o);
	if (r == 0 && next)
		r = update_or_warn(st, next, prev, nn, true, o);
	return r;
}

/* For one dataset: what the gone snapshots free, and the new used/written
 * of the survivors next to them (only when they survive).  What cannot be
 * counted for a damaged or missing index chunk is reported through
 * o->warn and counted in o->unaccounted (accounting_skipped). */
static int account_dataset(cairn_store *st, int64_t ds, const plan_t *p, bool dataset_gone,
			   cairn_destroy_opts *o)
{
	snapent_t *v;
	size_t n;
	int r = ds_snapshots(st, ds, &v, &n);
	for (size_t i = 0; r == 0 && i < n; i++)
		for (size_t k = 0; k < p->n; k++)
			if (p->v[k].id == v[i].id && p->v[k].userrefs == 0)
				v[i].gone = true;
	for (size_t i = 0; r == 0 && i < n;) {
		if (!v[i].gone) {
			i++;
			continue;
		}
		size_t hi = i;
		while (hi < n && v[hi].gone)
			hi++;
		int64_t prev = i ? v[i - 1].id : 0, next = hi < n ? v[hi].id : 0;
		uint64_t run = 0;
		acctfail_t f = {0};
		r = run_freed(st, v, i, hi, dataset_gone ? 0 : prev, dataset_gone ? 0 : next, &run,
			      &f);
		if (r == 0)
			o->freed += run;
		else if (skipped(st, r, &f, v[i].id, o))
			r = 0;
		if (r == 0 && !o->dry_run && !dataset_gone)
			r = update_neighbours(st, v, n, i, hi, o);
		i = hi;
	}
	free(v);
	return r;
}

/* ---- applying ---- */

static int exec_id(cairn_store *st, const char *sql, int64_t id)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(catalog_db(st->cat), sql, -1, &s, NULL))
		return store_err(st, -EIO, "catalog: %s: %s", sql,
				 sqlite3_errmsg(catalog_db(st->cat)));
	sqlite3_bind_int64(s, 1, id);
	int rc = sqlite3_step(s);
	int r = rc == SQLITE_DONE ? 0 : -EIO;
	if (r < 0)
		store_err(st, r, "catalog: %s: %s", sql, sqlite3_errmsg(catalog_db(st->cat)));
	sqlite3_finalize(s);
	return r;
}

static int drop_snapshot(cairn_store *st, int64_t id)
{
	int r = exec_id(st, "DELETE FROM snapshot WHERE id=?", id);
	if (r == 0)
		r = exec_id(st, "DELETE FROM snapdata WHERE snapshot=?", id);
	if (r == 0)
		r = exec_id(st, "DELETE FROM sprop WHERE snapshot=?", id);
	if (r == 0)
		r = exec_id(st, "DELETE FROM hold WHERE snapshot=?", id);
	return r;
}

static int drop_dataset(cairn_store *st, int64_t id)
{
	/* A partial receive into the dataset goes with it, as in zfs. */
	int r = exec_id(st,
			"DELETE FROM recvstate WHERE dataset = (SELECT name FROM dataset WHERE id=?)",
			id);
	if (r == 0)
		r = exec_id(st, "DELETE FROM dataset WHERE id=?", id);
	if (r == 0)
		r = exec_id(st, "DELETE FROM dprop WHERE dataset=?", id);
	if (r == 0)
		r = exec_id(st, "DELETE FROM bookmark WHERE dataset=?", id);
	if (r == 0)
		r = encroot_forget_in_txn(st, id);
	return r;
}

static bool ds_in_plan(const plan_t *p, int64_t ds)
{
	for (size_t i = 0; i < p->nds; i++)
		if (p->ds[i] == ds)
			return true;
	return false;
}

static int victim_cmp(const void *a, const void *b)
{
	const victim_t *x = a, *y = b;
	if (x->ds != y->ds)
		return x->ds < y->ds ? -1 : 1;
	return x->createtxg < y->createtxg ? -1 : x->createtxg > y->createtxg;
}

static int apply(cairn_store *st, plan_t *p, cairn_destroy_opts *o)
{
	/* Held snapshots: all-or-nothing refusal, or deferral with -d. */
	for (size_t i = 0; i < p->n; i++) {
		if (!p->v[i].userrefs)
			continue;
		if (o->defer && !p->nds)
			continue;
		char tags[512];
		hold_tags(st, p->v[i].id, tags, sizeof(tags));
		return store_err(st, CAIRN_EHELD, "%s: snapshot is held (tags: %s)%s", p->v[i].name,
				 tags,
				 p->nds	      ? ""
				 : p->for_other ? "; release it first"
						: "; release it or use destroy -d");
	}
	int r = claim_root_keys(st, p);
	/* Account per dataset before rows go: the indexes are still listed.
	 * Victims are sorted by dataset, so each dataset is visited once. */
	if (p->n)
		qsort(p->v, p->n, sizeof(*p->v), victim_cmp);
	for (size_t i = 0; r == 0 && i < p->n; i++)
		if (i == 0 || p->v[i].ds != p->v[i - 1].ds)
			r = account_dataset(st, p->v[i].ds, p, ds_in_plan(p, p->v[i].ds), o);
	for (size_t i = 0; r == 0 && i < p->n; i++) {
		bool defer = p->v[i].userrefs > 0;
		if (o->item)
			o->item(p->v[i].name, defer ? "defer" : "destroy", o->arg);
		if (o->dry_run)
			continue;
		r = defer ? exec_id(st, "UPDATE snapshot SET defer_destroy=1 WHERE id=?", p->v[i].id)
			  : drop_snapshot(st, p->v[i].id);
	}
	for (size_t i = p->nds; r == 0 && i-- > 0;) {
		if (o->item)
			o->item(p->dsnames[i], "destroy", o->arg);
		if (!o->dry_run && (r = note_root_key(st, p, p->ds[i])) == 0)
			r = drop_dataset(st, p->ds[i]);
	}
	return r;
}

int cairn_destroy(cairn_store *st, const char *target, cairn_destroy_opts *o)
{
	int r = STORE_ENTER(st, target);
	if (r < 0)
		return r;
	cairn_destroy_opts none = {0};
	if (!o)
		o = &none;
	o->freed = 0;
	o->unaccounted = 0;
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	plan_t p = {0};
	char why[256];
	if (strchr(target, '#') && cairn_name_check(target, true, why, sizeof(why)) < 0) {
		r = store_err(st, CAIRN_EBADNAME, "%s: %s", target, why);
	} else if (strchr(target, '#')) {
		const char *h = strchr(target, '#');
		char *dsname = strndup(target, h - target);
		ds_row_t ds = {0};
		r = dataset_lookup(st, dsname, &ds);
		free(dsname);
		if (r == 0) {
			sqlite3_stmt *s;
			r = sqlite3_prepare_v2(catalog_db(st->cat),
					       "DELETE FROM bookmark WHERE dataset=? AND name=?", -1, &s,
					       NULL) ? -EIO : 0;
			if (r == 0) {
				sqlite3_bind_int64(s, 1, ds.id);
				sqlite3_bind_text(s, 2, h + 1, -1, SQLITE_STATIC);
				r = sqlite3_step(s) == SQLITE_DONE ? 0 : -EIO;
				if (r == 0 && !sqlite3_changes(catalog_db(st->cat)))
					r = store_err(st, -ENOENT, "%s: bookmark does not exist", target);
				sqlite3_finalize(s);
			}
			if (r == 0 && o->item)
				o->item(target, "destroy", o->arg);
		}
		ds_row_clear(&ds);
	} else if (strchr(target, '@')) {
		r = plan_snapshots(st, &p, target, o->recursive);
		if (r == 0)
			r = apply(st, &p, o);
	} else {
		r = plan_dataset(st, &p, target, o->recursive);
		if (r == 0)
			r = apply(st, &p, o);
	}
	if (r < 0 && !st->errdetail[0])
		store_err(st, r, "%s: %s", target, cairn_strerror(r));
	/* Inside a receive (a -F destroy), the keys wait for its final commit.
	 * Inside a dry run's rehearsal nothing is destroyed for real: the
	 * claims have shown the roots not busy and go now (plan_free), rather
	 * than keep every command from those keys until the dry run ends. */
	if (r == 0 && !o->dry_run && p.drop && !catalog_rehearsal(st->cat)) {
		r = catalog_on_end(st->cat, keydrop_end, p.drop);
		if (r == 0)
			p.drop = NULL;
	}
	if (o->dry_run && r == 0)
		catalog_rollback(st->cat); /* a dry run leaves the catalog as it was */
	else
		r = store_txn_end(st, r);
	plan_free(&p);
	return r;
}

int destroy_snapshots_in_txn(cairn_store *st, const int64_t *ids, size_t n, uint64_t *freed)
{
	plan_t p = {.for_other = true};
	int r = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		snap_row_t s = {0};
		ds_row_t ds = {0};
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(catalog_db(st->cat),
				       "SELECT dataset, name, createtxg, userrefs FROM snapshot WHERE id=?",
				       -1, &q,
				       NULL)) {
			r = -EIO;
			break;
		}
		sqlite3_bind_int64(q, 1, ids[i]);
		if (sqlite3_step(q) == SQLITE_ROW) {
			s.id = ids[i];
			s.dataset = sqlite3_column_int64(q, 0);
			s.name = strdup((const char *)sqlite3_column_text(q, 1));
			s.createtxg = sqlite3_column_int64(q, 2);
			/* A held snapshot refuses (apply), as for cairn_destroy. */
			s.userrefs = sqlite3_column_int64(q, 3);
			r = catalog_ds_by_id(st->cat, s.dataset, &ds);
			if (r == 0)
				r = victim_add(&p, &s, ds.name);
		}
		sqlite3_finalize(q);
		snap_row_clear(&s);
		ds_row_clear(&ds);
	}
	cairn_destroy_opts o = {0};
	if (r == 0)
		r = apply(st, &p, &o);
	if (freed)
		*freed = o.freed;
	plan_free(&p);
	return r;
}
