/* dataset.c - creating datasets and resolving their properties. */
#include "catalog/dataset.h"
#include "data/exclude.h"
#include "crypt/encroot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static bool is_user_prop(const char *p)
{
	return strchr(p, ':') != NULL;
}

int dataset_lookup(cairn_store *st, const char *name, ds_row_t *out)
{
	char why[256];
	if (cairn_name_check(name, false, why, sizeof(why)) < 0)
		return store_err(st, CAIRN_EBADNAME, "%s: %s", name, why);
	int r = catalog_ds_by_name(st->cat, name, out);
	if (r == -ENOENT)
		return store_err(st, r, "%s: dataset does not exist", name);
	if (r < 0)
		return store_err(st, r, "%s: %s", name, catalog_errmsg(st->cat));
	return 0;
}

int snapshot_split(cairn_store *st, const char *full, ds_row_t *ds, const char **snap)
{
	char why[256];
	const char *at = strchr(full, '@');
	if (!at)
		return store_err(st, CAIRN_EBADNAME, "%s: not a snapshot name (expected DATASET@NAME)",
				 full);
	if (cairn_name_check(full, true, why, sizeof(why)) < 0)
		return store_err(st, CAIRN_EBADNAME, "%s: %s", full, why);
	char *dsname = strndup(full, at - full);
	if (!dsname)
		return -ENOMEM;
	int r = dataset_lookup(st, dsname, ds);
	free(dsname);
	*snap = at + 1;
	return r;
}

int derived_name_check(cairn_store *st, const char *ds, char sep, const char *name)
{
	char full[600], why[256];
	snprintf(full, sizeof(full), "%s%c%s", ds, sep, name);
	if (cairn_name_check(full, true, why, sizeof(why)) < 0)
		return store_err(st, CAIRN_EBADNAME, "%s: %s", full, why);
	return 0;
}

static int parse_level(const char *v, int *level)
{
	if (!strcmp(v, "off")) {
		*level = 0;
		return 0;
	}
	if (!strcmp(v, "on") || !strcmp(v, "zstd")) {
		*level = -1; /* the store default */
		return 0;
	}
	if (!strncmp(v, "zstd-", 5))
		v += 5;
	char *end;
	long n = strtol(v, &end, 10);
	if (end == v || *end || n < 1 || n > 19)
		return -EINVAL;
	*level = n;
	return 0;
}

/* exclude (patterns, checked now so a bad one fails at set time),
 * exclude_caches and cairnignore (on/off). */
static int exclude_prop_normalize(cairn_store *st, const char *prop, const char *value,
				  char **norm)
{
	if (!strcmp(prop, "exclude")) {
		char why[512];
		if (exclude_list_check(value, why, sizeof(why)) < 0)
			return store_err(st, CAIRN_EBADPROP, "exclude=%s: %s", value, why);
	} else if (strcmp(value, "on") && strcmp(value, "off")) {
		return store_err(st, CAIRN_EBADPROP, "%s=%s: expected on or off", prop, value);
	}
	*norm = strdup(value);
	return *norm ? 0 : -ENOMEM;
}

int dataset_prop_normalize(cairn_store *st, const char *prop, const char *value, char **norm)
{
	char buf[64];
	int e = encroot_prop_normalize(st, prop, value, norm);
	if (e)
		return e < 0 ? e : 0;
	if (!strcmp(prop, "source")) {
		if (strcmp(value, "none") && value[0] != '/')
			return store_err(st, CAIRN_EBADPROP,
					 "source=%s: must be an absolute path or 'none'", value);
		*norm = strdup(value);
	} else if (!strcmp(prop, "compression")) {
		int level;
		if (parse_level(value, &level) < 0)
			return store_err(st, CAIRN_EBADPROP,
					 "compression=%s: expected off, on, zstd or zstd-1..zstd-19",
					 value);
		if (level < 0)
			level = store_setting(st, "compression");
		if (level == 0)
			snprintf(buf, sizeof(buf), "off");
		else
			snprintf(buf, sizeof(buf), "zstd-%d", level);
		*norm = strdup(buf);
	} else if (!strcmp(prop, "chunksize")) {
		char *end;
		errno = 0;
		unsigned long long n = strtoull(value, &end, 10);
		int shift = 0;
		if (*end == 'K' || *end == 'k')
			shift = 10, end++;
		else if (*end == 'M' || *end == 'm')
			shift = 20, end++;
		/* Digits only (strtoull would take " +64K"), and range-checked
		 * before scaling: a huge count must not wrap round to a valid
		 * size. */
		bool bad = errno || value[0] < '0' || value[0] > '9' || n > ((8ull << 20) >> shift);
		n <<= shift;
		if (bad || end == value || *end || n < (64u << 10) || n > (8u << 20) || (n & (n - 1)))
			return store_err(st, CAIRN_EBADPROP,
					 "chunksize=%s: must be a power of two from 64K to 8M",
					 value);
		snprintf(buf, sizeof(buf), "%llu", n);
		*norm = strdup(buf);
	} else if (exclude_is_prop(prop)) {
		return exclude_prop_normalize(st, prop, value, norm);
	} else if (is_user_prop(prop)) {
		char why[256];
		/* A user property name is module:name in dataset-name characters. */
		if (cairn_name_check(prop, false, why, sizeof(why)) < 0 || strchr(prop, '/'))
			return store_err(st, CAIRN_EBADPROP, "%s: invalid user property name", prop);
		if (strlen(value) > 8192)
			return store_err(st, CAIRN_EBADPROP, "%s: value longer than 8192 bytes",
					 prop);
		/* Listings print values as JSON, which is UTF-8 (docs/ROBUSTNESS.md). */
		size_t bad_at;
		if (!utf8_valid(value, &bad_at))
			return store_err(st, CAIRN_EBADPROP,
					 "%s: value is not valid UTF-8 (byte %zu)", prop, bad_at);
		*norm = strdup(value);
	} else {
		return store_err(st, CAIRN_EBADPROP, "%s: unknown or read-only property", prop);
	}
	return *norm ? 0 : -ENOMEM;
}

static char *prop_default(cairn_store *st, const char *prop)
{
	char buf[64];
	if (!strcmp(prop, "compression")) {
		int64_t l = store_setting(st, "compression");
		if (l)
			snprintf(buf, sizeof(buf), "zstd-%lld", (long long)l);
		else
			snprintf(buf, sizeof(buf), "off");
	} else if (!strcmp(prop, "chunksize")) {
		snprintf(buf, sizeof(buf), "%lld", (long long)store_setting(st, "chunk_size"));
	} else if (!strcmp(prop, "source")) {
		snprintf(buf, sizeof(buf), "none");
	} else if (exclude_is_prop(prop)) {
		snprintf(buf, sizeof(buf), "%s", !strcmp(prop, "exclude_caches") ? "off" :
						 !strcmp(prop, "cairnignore") ? "on" : "");
	} else {
		return NULL;
	}
	return strdup(buf);
}

/* Partial receive state shows as two read-only properties. */
static int recv_prop(cairn_store *st, const ds_row_t *ds, const char *prop, char **value,
		     char **source)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat), "SELECT token FROM recvstate WHERE dataset=?",
			       -1, &q, NULL))
		return store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
	sqlite3_bind_text(q, 1, ds->name, -1, SQLITE_STATIC);
	bool partial = sqlite3_step(q) == SQLITE_ROW;
	if (!strcmp(prop, "inconsistent"))
		*value = strdup(partial ? "on" : "off");
	else
		*value = strdup(partial ? (const char *)sqlite3_column_text(q, 0) : "-");
	sqlite3_finalize(q);
	if (source)
		*source = strdup("-");
	return *value ? 0 : -ENOMEM;
}

int dataset_prop(cairn_store *st, const ds_row_t *ds, const char *prop, char **value,
		 char **source)
{
	*value = NULL;
	if (source)
		*source = NULL;
	if (!strcmp(prop, "receive_resume_token") || !strcmp(prop, "inconsistent"))
		return recv_prop(st, ds, prop, value, source);
	int e = encroot_prop(st, ds, prop, value, source);
	if (e)
		return e < 0 ? e : 0;
	if (strcmp(prop, "source") && strcmp(prop, "compression") && strcmp(prop, "chunksize") &&
	    !exclude_is_prop(prop) &&
	    !is_user_prop(prop))
		return store_err(st, CAIRN_EBADPROP, "%s: unknown property", prop);
	ds_row_t cur = {0};
	int64_t id = ds->id;
	int r;
	bool first = true;
	while (id) {
		r = catalog_ds_by_id(st->cat, id, &cur);
		if (r < 0)
			return store_err(st, r, "%s: %s", ds->name, catalog_errmsg(st->cat));
		char *v = NULL;
		bool received;
		r = catalog_prop_effective(st->cat, id, prop, &v, &received);
		if (r == 0) {
			if (!strcmp(prop, "source") && !first && strcmp(v, "none")) {
				/* Inherited like a ZFS mountpoint: parent path + the
				 * child's name relative to the parent. */
				char *full;
				if (asprintf(&full, "%s%s%s", v, strcmp(v, "/") ? "/" : "",
					     ds->name + strlen(cur.name) + 1) < 0)
					full = NULL;
				free(v);
				v = full;
			}
			*value = v;
			if (source) {
				if (first)
					*source = strdup(received ? "received" : "local");
				else if (asprintf(source, "inherited from %s", cur.name) < 0)
					*source = NULL;
			}
			ds_row_clear(&cur);
			return *value ? 0 : -ENOMEM;
		}
		if (r != -ENOENT) {
			ds_row_clear(&cur);
			return store_err(st, r, "%s: %s", ds->name, catalog_errmsg(st->cat));
		}
		id = cur.parent;
		first = false;
		ds_row_clear(&cur);
	}
	if (is_user_prop(prop)) {
		*value = strdup("-");
		if (source)
			*source = strdup("-");
		return 0;
	}
	*value = prop_default(st, prop);
	if (source)
		*source = strdup("default");
	return *value ? 0 : -ENOMEM;
}

int dataset_compression(cairn_store *st, const ds_row_t *ds, int *level)
{
	char *v;
	int r = dataset_prop(st, ds, "compression", &v, NULL);
	if (r < 0)
		return r;
	r = parse_level(v, level);
	if (r == 0 && *level < 0)
		*level = store_setting(st, "compression");
	free(v);
	return r < 0 ? store_err(st, CAIRN_EBADPROP, "%s: bad compression value", ds->name) : 0;
}

int dataset_chunksize(cairn_store *st, const ds_row_t *ds, uint32_t *avg)
{
	char *v;
	int r = dataset_prop(st, ds, "chunksize", &v, NULL);
	if (r < 0)
		return r;
	*avg = strtoul(v, NULL, 10);
	free(v);
	return 0;
}

int cairn_dataset_get(cairn_store *st, const char *name, const char *prop, char **value,
		      char **source)
{
	clear_out(value, source);
	int r = STORE_ENTER(st, name, prop, value);
	if (r < 0)
		return r;
	ds_row_t ds = {0};
	r = dataset_lookup(st, name, &ds);
	if (r == 0)
		r = dataset_prop(st, &ds, prop, value, source);
	ds_row_clear(&ds);
	return r;
}

static int props_apply(cairn_store *st, int64_t id, const cairn_prop *props, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(props[i].name, "type"))
			continue; /* fixed at creation */
		char *norm;
		int r = dataset_prop_normalize(st, props[i].name, props[i].value, &norm);
		if (r < 0)
			return r;
		r = catalog_prop_set(st->cat, id, props[i].name, norm);
		free(norm);
		if (r < 0)
			return store_err(st, r, "%s: %s", props[i].name, catalog_errmsg(st->cat));
	}
	return 0;
}

static int insert_one(cairn_store *st, const char *name, int64_t parent, int type, uint64_t txg,
		      int64_t *id)
{
	ds_row_t row = {.name = (char *)name, .parent = parent, .type = type,
			.guid = random_u64(), .createtxg = txg, .creation = time(NULL)};
	int r = catalog_ds_insert(st->cat, &row);
	if (r == -EEXIST)
		return store_err(st, r, "%s: dataset already exists", name);
	if (r < 0)
		return store_err(st, r, "%s: %s", name, catalog_errmsg(st->cat));
	*id = row.id;
	return 0;
}

/* Finds (or with parents, creates) the parent of name; *parent = 0 for a
 * top-level name. */
int dataset_ensure_parent(cairn_store *st, const char *name, bool parents, uint64_t txg,
			 int64_t *parent)
{
	const char *slash = strrchr(name, '/');
	*parent = 0;
	if (!slash)
		return 0;
	char *pname = strndup(name, slash - name);
	if (!pname)
		return -ENOMEM;
	ds_row_t p = {0};
	int r = catalog_ds_by_name(st->cat, pname, &p);
	if (r == 0) {
		*parent = p.id;
		if (p.type != CAIRN_TYPE_FILESYSTEM)
			r = store_err(st, -ENOTDIR, "%s: parent is a volume", pname);
	} else if (r == -ENOENT && parents) {
		int64_t gp;
		r = dataset_ensure_parent(st, pname, parents, txg, &gp);
		if (r == 0)
			r = insert_one(st, pname, gp, CAIRN_TYPE_FILESYSTEM, txg, parent);
	} else if (r == -ENOENT) {
		/* Named after the dataset asked for, as zfs names it. */
		r = store_err(st, r, "%s: parent does not exist (%s; use -p to create it)", name,
			      pname);
	}
	ds_row_clear(&p);
	free(pname);
	return r;
}

int cairn_dataset_create(cairn_store *st, const char *name, cairn_type type,
			 const cairn_prop *props, size_t nprops, bool parents)
{
	return cairn_dataset_create_key(st, name, type, props, nprops, parents, NULL);
}

int cairn_dataset_create_key(cairn_store *st, const char *name, cairn_type type,
			     const cairn_prop *props, size_t nprops, bool parents,
			     const cairn_key_opts *ko)
{
	int r = STORE_ENTER(st, name);
	if (r == 0)
		r = store_check_props(st, __func__, "props", props, nprops);
	if (r < 0)
		return r;
	char why[256];
	if (cairn_name_check(name, false, why, sizeof(why)) < 0)
		return store_err(st, CAIRN_EBADNAME, "%s: %s", name, why);
	/* Only these two are datasets: a row of another type (0, a snapshot,
	 * a bookmark) would list as a "snapshot" without an '@', or not at all. */
	if (type != CAIRN_TYPE_FILESYSTEM && type != CAIRN_TYPE_VOLUME)
		return store_err(st, -EINVAL,
				 "%s: type %d is not a dataset type (filesystem or volume)", name,
				 (int)type);
	for (size_t i = 0; i < nprops; i++)
		if (!strcmp(props[i].name, "type")) {
			if (!strcmp(props[i].value, "volume"))
				type = CAIRN_TYPE_VOLUME;
			else if (strcmp(props[i].value, "filesystem"))
				return store_err(st, CAIRN_EBADPROP,
						 "type=%s: expected filesystem or volume",
						 props[i].value);
		}
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	int64_t parent, id;
	r = dataset_ensure_parent(st, name, parents, txg, &parent);
	if (r == 0)
		r = insert_one(st, name, parent, type, txg, &id);
	if (r == 0)
		r = props_apply(st, id, props, nprops);
	crypt_keys_t *newkey = NULL;
	bool check = ko && ko->noop;
	if (r == 0)
		r = encroot_create_in_txn(st, id, name, parent, props, nprops,
					  ko ? ko->secret : NULL, ko ? ko->secret_len : 0, check,
					  &newkey);
	/* A check (ko->noop) went as far as it can without key material:
	 * everything it made is rolled back. */
	if (check) {
		store_txn_end(st, r < 0 ? r : -ECANCELED);
		return r < 0 ? r : 0;
	}
	/* A new root's key is loaded, as zfs create leaves it: before the
	 * commit, so a keyring that refuses it leaves no dataset behind. */
	encroot_loaded_t key;
	bool loaded = false;
	if (r == 0 && newkey) {
		r = encroot_keyring_add(st, name, newkey, ko ? ko->timeout : 0, &key);
		loaded = r == 0;
	}
	r = store_txn_end(st, r);
	if (r < 0 && loaded)
		encroot_keyring_undo(&key);
	crypt_keys_free(newkey);
	return r;
}

int cairn_dataset_set(cairn_store *st, const char *name, const cairn_prop *props, size_t nprops)
{
	int r = STORE_ENTER(st, name);
	if (r == 0)
		r = store_check_props(st, __func__, "props", props, nprops);
	if (r < 0)
		return r;
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	ds_row_t ds = {0};
	r = dataset_lookup(st, name, &ds);
	for (size_t i = 0; r == 0 && i < nprops; i++)
		if (!strcmp(props[i].name, "type"))
			r = store_err(st, CAIRN_EBADPROP, "type: read-only property");
		else
			r = encroot_set_check(st, &ds, props[i].name);
	if (r == 0)
		r = props_apply(st, ds.id, props, nprops);
	ds_row_clear(&ds);
	return store_txn_end(st, r);
}

int cairn_dataset_iter(cairn_store *st, int (*fn)(const char *, cairn_type, void *), void *arg)
{
	int r = STORE_ENTER(st);
	if (r == 0 && !fn)
		r = store_err(st, -EINVAL, "%s: fn is NULL", __func__);
	if (r < 0)
		return r;
	sqlite3_stmt *s;
	r = sqlite3_prepare_v2(catalog_db(st->cat), "SELECT name, type FROM dataset ORDER BY name",
			       -1, &s, NULL);
	if (r != SQLITE_OK)
		return store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
	r = 0;
	while (r == 0 && sqlite3_step(s) == SQLITE_ROW)
		r = fn((const char *)sqlite3_column_text(s, 0), sqlite3_column_int(s, 1), arg);
	sqlite3_finalize(s);
	return r;
}
