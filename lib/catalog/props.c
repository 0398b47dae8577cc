/* props.c - received property values, inherit -S, user properties on
 * snapshots, the user properties `get all` shows, and the space figures
 * zfs derives (usedby*, logicalused, written@SNAP).  docs/ZFS-COMPAT.md
 * says how each is computed on a deduplicating store. */
#include "catalog/rprops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "catalog/dataset.h"
#include "crypt/encroot.h"
#include "data/exclude.h"
#include "data/snapio.h"

static bool is_user_prop(const char *p)
{
	return strchr(p, ':') != NULL;
}

/* The properties inherit accepts: those a value can be set for and that
 * children inherit (zfs: inherit of anything else is refused). */
static bool inheritable(const char *prop)
{
	return !strcmp(prop, "source") || !strcmp(prop, "compression") ||
	       !strcmp(prop, "chunksize") || exclude_is_prop(prop) || is_user_prop(prop);
}

/* ---- received values ---- */

int props_receive(cairn_store *st, const char *name, const cairn_prop *props, size_t n)
{
	uint64_t txg;
	int r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	ds_row_t ds = {0};
	r = dataset_lookup(st, name, &ds);
	const char **names = calloc(n + 1, sizeof(*names));
	char **values = calloc(n + 1, sizeof(*values));
	if (r == 0 && (!names || !values))
		r = -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (!strcmp(props[i].name, "type"))
			continue; /* fixed at creation */
		r = encroot_set_check(st, &ds, props[i].name);
		if (r == 0)
			r = dataset_prop_normalize(st, props[i].name, props[i].value, &values[k]);
		if (r == 0)
			names[k++] = props[i].name;
	}
	if (r == 0) {
		r = catalog_rprop_replace(st->cat, ds.id, names, (const char *const *)values, k);
		if (r == -EROFS)
			r = store_err(st, r, "%s: this store predates received properties and "
					     "was not upgraded when opened (it is read-only, or "
					     "another command held its write lock: run again)",
				      name);
		else if (r < 0)
			r = store_err(st, r, "%s: %s", name, catalog_errmsg(st->cat));
	}
	for (size_t i = 0; i < k; i++)
		free(values[i]);
	free(values);
	free(names);
	ds_row_clear(&ds);
	return store_txn_end(st, r);
}

int cairn_prop_get_received(cairn_store *st, const char *name, const char *prop, char **value)
{
	clear_out(value, NULL);
	int r = STORE_ENTER(st, name, prop, value);
	if (r < 0)
		return r;
	if (strchr(name, '@') || strchr(name, '#')) {
		*value = strdup("-"); /* snapshots and bookmarks receive no values */
		return *value ? 0 : -ENOMEM;
	}
	ds_row_t ds = {0};
	r = dataset_lookup(st, name, &ds);
	if (r == 0) {
		r = catalog_rprop_get(st->cat, ds.id, prop, value, NULL);
		if (r == -ENOENT) {
			*value = strdup("-");
			r = *value ? 0 : -ENOMEM;
		} else if (r < 0) {
			r = store_err(st, r, "%s: %s", name, catalog_errmsg(st->cat));
		}
	}
	ds_row_clear(&ds);
	return r;
}

/* ---- inherit ---- */

/* One snapshot's user property dropped (the snapshot inherits it from its
 * dataset again). */
static int snap_prop_drop(cairn_store *st, int64_t snap, const char *prop)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat), "DELETE FROM sprop WHERE snapshot=? AND name=?",
			       -1, &q, NULL))
		return catalog_error(st->cat);
	sqlite3_bind_int64(q, 1, snap);
	sqlite3_bind_text(q, 2, prop, -1, SQLITE_STATIC);
	int r = sqlite3_step(q) == SQLITE_DONE ? 0 : catalog_error(st->cat);
	sqlite3_finalize(q);
	return r;
}

/* ds@snap, and with recursive the snapshot of that name in every
 * descendant that has one (zfs -r on a snapshot). */
static int inherit_snapshot(cairn_store *st, const char *full, const char *prop, bool recursive)
{
	if (!is_user_prop(prop))
		return store_err(st, CAIRN_EBADPROP,
				 "%s: only user properties can be inherited by a snapshot", prop);
	ds_row_t ds = {0};
	const char *sname;
	int r = snapshot_split(st, full, &ds, &sname);
	/* The named snapshot must exist, with -r too (as zfs opens it
	 * first); descendants without it are skipped. */
	snap_row_t named = {0};
	if (r == 0 && catalog_snap_lookup(st->cat, ds.id, sname, &named) < 0)
		r = store_err(st, -ENOENT, "%s: snapshot does not exist", full);
	snap_row_clear(&named);
	int64_t *ids = NULL;
	size_t n = 1;
	if (r == 0 && recursive)
		r = catalog_ds_subtree(st->cat, ds.id, &ids, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		snap_row_t s = {0};
		int q = catalog_snap_lookup(st->cat, recursive ? ids[i] : ds.id, sname, &s);
		if (q == 0)
			r = snap_prop_drop(st, s.id, prop);
		else if (q != -ENOENT)
			r = q;
		snap_row_clear(&s);
	}
	if (r < 0 && !st->errdetail[0])
		r = store_err(st, r, "%s: %s", full, catalog_errmsg(st->cat));
	free(ids);
	ds_row_clear(&ds);
	return r;
}

static int inherit_dataset(cairn_store *st, const char *name, const char *prop, bool recursive,
			   bool received)
{
	ds_row_t ds = {0};
	int r = dataset_lookup(st, name, &ds);
	int64_t *ids = NULL;
	size_t n = 1;
	if (r == 0 && recursive)
		r = catalog_ds_subtree(st->cat, ds.id, &ids, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		int64_t id = recursive ? ids[i] : ds.id;
		r = catalog_prop_set(st->cat, id, prop, NULL);
		/* -S: the received value applies again; without it the value
		 * comes from the parent (or the default) and the received one
		 * is only kept, as zfs does. */
		if (r == 0)
			r = catalog_rprop_mask(st->cat, id, prop, !received);
		if (r < 0)
			r = store_err(st, r, "%s: %s", name, catalog_errmsg(st->cat));
	}
	free(ids);
	ds_row_clear(&ds);
	return r;
}

int cairn_prop_inherit(cairn_store *st, const char *name, const char *prop, bool recursive,
		       bool received)
{
	int r = STORE_ENTER(st, name, prop);
	if (r < 0)
		return r;
	if (!inheritable(prop))
		return store_err(st, CAIRN_EBADPROP, "%s: not an inheritable property", prop);
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	r = strchr(name, '@') ? inherit_snapshot(st, name, prop, recursive)
			      : inherit_dataset(st, name, prop, recursive, received);
	return store_txn_end(st, r);
}

/* ---- user properties on snapshots ---- */

static int snap_lookup(cairn_store *st, const char *full, ds_row_t *ds, snap_row_t *s)
{
	const char *sname;
	int r = snapshot_split(st, full, ds, &sname);
	if (r == 0 && (r = catalog_snap_lookup(st->cat, ds->id, sname, s)) == -ENOENT)
		r = store_err(st, r, "%s: snapshot does not exist", full);
	else if (r < 0 && !st->errdetail[0])
		r = store_err(st, r, "%s: %s", full, catalog_errmsg(st->cat));
	return r;
}

int cairn_snapshot_set_user(cairn_store *st, const char *snap, const cairn_prop *props,
			    size_t n)
{
	int r = STORE_ENTER(st, snap);
	if (r == 0)
		r = store_check_props(st, __func__, "props", props, n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (!is_user_prop(props[i].name))
			return store_err(st, CAIRN_EBADPROP,
					 "%s: read-only property (a snapshot takes user "
					 "properties only)",
					 props[i].name);
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	ds_row_t ds = {0};
	snap_row_t s = {0};
	r = snap_lookup(st, snap, &ds, &s);
	for (size_t i = 0; r == 0 && i < n; i++) {
		char *norm;
		r = dataset_prop_normalize(st, props[i].name, props[i].value, &norm);
		if (r == 0) {
			r = catalog_snap_prop_set(st->cat, s.id, props[i].name, norm);
			free(norm);
			if (r < 0)
				r = store_err(st, r, "%s: %s", snap, catalog_errmsg(st->cat));
		}
	}
	snap_row_clear(&s);
	ds_row_clear(&ds);
	return store_txn_end(st, r);
}

int cairn_snapshot_user_get(cairn_store *st, const char *snap, const char *prop, char **value,
			    char **source)
{
	clear_out(value, source);
	int r = STORE_ENTER(st, snap, prop, value);
	if (r < 0)
		return r;
	ds_row_t ds = {0};
	snap_row_t s = {0};
	r = snap_lookup(st, snap, &ds, &s);
	sqlite3_stmt *q = NULL;
	if (r == 0 && sqlite3_prepare_v2(catalog_db(st->cat),
					 "SELECT value FROM sprop WHERE snapshot=? AND name=?", -1,
					 &q, NULL))
		r = store_err(st, catalog_error(st->cat), "%s: %s", snap, catalog_errmsg(st->cat));
	if (r == 0) {
		sqlite3_bind_int64(q, 1, s.id);
		sqlite3_bind_text(q, 2, prop, -1, SQLITE_STATIC);
		if (sqlite3_step(q) == SQLITE_ROW) {
			*value = strdup((const char *)sqlite3_column_text(q, 0));
			if (source)
				*source = strdup("local");
		} else {
			/* zfs: a snapshot inherits user properties from its dataset. */
			char *dsrc = NULL;
			r = dataset_prop(st, &ds, prop, value, &dsrc);
			if (r == 0 && source) {
				if (!strcmp(dsrc, "-") || !strncmp(dsrc, "inherited from ", 15)) {
					*source = dsrc;
					dsrc = NULL;
				} else if (asprintf(source, "inherited from %s", ds.name) < 0) {
					*source = NULL;
				}
			}
			free(dsrc);
		}
	}
	sqlite3_finalize(q);
	if (r == 0 && (!*value || (source && !*source)))
		r = -ENOMEM;
	snap_row_clear(&s);
	ds_row_clear(&ds);
	return r;
}

/* ---- the user properties of an object (get all) ---- */

typedef struct names {
	char **v;
	size_t n;
} names_t;

static int names_add(names_t *ns, const char *name)
{
	for (size_t i = 0; i < ns->n; i++)
		if (!strcmp(ns->v[i], name))
			return 0;
	char **p = realloc(ns->v, (ns->n + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	ns->v = p;
	if (!(ns->v[ns->n] = strdup(name)))
		return -ENOMEM;
	ns->n++;
	return 0;
}

static int names_from(cairn_store *st, const char *sql, int64_t id, names_t *ns)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat), sql, -1, &q, NULL))
		return catalog_error(st->cat);
	sqlite3_bind_int64(q, 1, id);
	int r = 0, rc;
	while (r == 0 && (rc = sqlite3_step(q)) == SQLITE_ROW)
		r = names_add(ns, (const char *)sqlite3_column_text(q, 0));
	if (r == 0 && rc != SQLITE_DONE)
		r = catalog_error(st->cat);
	sqlite3_finalize(q);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cairn_user_props(cairn_store *st, const char *name, char ***names, size_t *n)
{
	clear_names_out(names, n);
	int r = STORE_ENTER(st, name, names, n);
	if (r < 0)
		return r;
	names_t ns = {0};
	ds_row_t ds = {0};
	snap_row_t s = {0};
	if (strchr(name, '#'))
		return 0; /* bookmarks have no user properties */
	if (strchr(name, '@')) {
		r = snap_lookup(st, name, &ds, &s);
		if (r == 0)
			r = names_from(st, "SELECT name FROM sprop WHERE snapshot=?", s.id, &ns);
	} else {
		r = dataset_lookup(st, name, &ds);
	}
	/* Every name set (or received) on the dataset or an ancestor. */
	int64_t id = r == 0 ? ds.id : 0;
	bool rprop = catalog_has_rprop(st->cat);
	while (r == 0 && id) {
		ds_row_t cur = {0};
		r = catalog_ds_by_id(st->cat, id, &cur);
		if (r == 0)
			r = names_from(st, "SELECT name FROM dprop WHERE dataset=? AND name LIKE '%:%'",
				       id, &ns);
		if (r == 0 && rprop)
			r = names_from(st,
				       "SELECT name FROM rprop WHERE dataset=? AND masked=0"
				       " AND name LIKE '%:%'",
				       id, &ns);
		id = cur.parent;
		ds_row_clear(&cur);
	}
	snap_row_clear(&s);
	ds_row_clear(&ds);
	if (r < 0) {
		cairn_user_props_free(ns.v, ns.n);
		return st->errdetail[0] ? r : store_err(st, r, "%s: %s", name,
							 catalog_errmsg(st->cat));
	}
	if (ns.n)
		qsort(ns.v, ns.n, sizeof(*ns.v), cmp_str);
	*names = ns.v;
	*n = ns.n;
	return 0;
}

void cairn_user_props_free(char **names, size_t n)
{
	if (!names)
		return;
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* ---- space ---- */

/* Sums over the snapshots of one dataset (own) or of its descendants
 * (children).  logical: each snapshot's written bytes scaled by its own
 * logical/stored ratio (the catalog keeps no per-chunk logical size of
 * what a snapshot wrote). */
static int space_sums(cairn_store *st, const ds_row_t *ds, bool children, uint64_t *written,
		      uint64_t *logical)
{
	sqlite3_stmt *q;
	const char *sql =
		"SELECT COALESCE(SUM(s.written), 0),"
		" COALESCE(SUM(CASE WHEN s.referenced > 0"
		"  THEN s.written * s.logicalreferenced / s.referenced ELSE s.written END), 0)"
		" FROM snapshot s JOIN dataset d ON s.dataset = d.id"
		" WHERE (?3 = 0 AND d.id = ?1) OR (?3 = 1 AND d.name > ?2 || '/' AND d.name < ?2 || '0')";
	if (sqlite3_prepare_v2(catalog_db(st->cat), sql, -1, &q, NULL))
		return catalog_error(st->cat);
	sqlite3_bind_int64(q, 1, ds->id);
	sqlite3_bind_text(q, 2, ds->name, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 3, children);
	int r = 0;
	if (sqlite3_step(q) == SQLITE_ROW) {
		*written = sqlite3_column_int64(q, 0);
		*logical = sqlite3_column_int64(q, 1);
	} else {
		r = catalog_error(st->cat);
	}
	sqlite3_finalize(q);
	return r;
}

int cairn_space_get(cairn_store *st, const char *name, cairn_space *sp)
{
	int r = STORE_ENTER(st, name, sp);
	if (r < 0)
		return r;
	memset(sp, 0, sizeof(*sp));
	r = catalog_begin_read(st->cat);
	if (r < 0)
		return store_err(st, r, "catalog: %s", catalog_errmsg(st->cat));
	ds_row_t ds = {0};
	snap_row_t s = {0}, newest = {0};
	if (strchr(name, '@')) {
		r = snap_lookup(st, name, &ds, &s);
		if (r == 0) {
			sp->used = s.used;
			sp->referenced = s.referenced;
			sp->logicalreferenced = s.logicalreferenced;
			/* 128 bits: the product of two sizes overflows 64. */
			sp->logicalused =
				s.referenced ? (uint64_t)((unsigned __int128)s.used *
							  s.logicalreferenced / s.referenced)
					     : s.used;
			sp->written = s.written;
		}
	} else {
		uint64_t own = 0, ownl = 0, kids = 0, kidsl = 0;
		r = dataset_lookup(st, name, &ds);
		if (r == 0)
			r = space_sums(st, &ds, false, &own, &ownl);
		if (r == 0)
			r = space_sums(st, &ds, true, &kids, &kidsl);
		int q = r == 0 ? catalog_snap_prev(st->cat, ds.id, UINT64_MAX, &newest) : 0;
		if (q < 0 && q != -ENOENT)
			r = q;
		if (r == 0) {
			/* The newest snapshot is the dataset's current state (zfs's
			 * head): what it references is "by dataset", the rest of the
			 * dataset's own space is held only by older snapshots. */
			sp->referenced = newest.referenced;
			sp->logicalreferenced = newest.logicalreferenced;
			sp->usedbydataset = newest.referenced < own ? newest.referenced : own;
			sp->usedbysnapshots = own - sp->usedbydataset;
			sp->usedbychildren = kids;
			sp->used = own + kids;
			sp->logicalused = ownl + kidsl;
			sp->written = 0; /* nothing is written after the newest snapshot */
		}
		if (r < 0 && !st->errdetail[0])
			r = store_err(st, r, "%s: %s", name, catalog_errmsg(st->cat));
	}
	catalog_end_read(st->cat);
	snap_row_clear(&s);
	snap_row_clear(&newest);
	ds_row_clear(&ds);
	return r;
}

int cairn_written_since(cairn_store *st, const char *name, const char *since, uint64_t *bytes)
{
	int r = STORE_ENTER(st, name, since, bytes);
	if (r < 0)
		return r;
	*bytes = 0;
	r = catalog_begin_read(st->cat);
	if (r < 0)
		return store_err(st, r, "catalog: %s", catalog_errmsg(st->cat));
	ds_row_t ds = {0}, sds = {0};
	snap_row_t self = {0}, old = {0};
	bool is_snap = strchr(name, '@') != NULL;
	r = is_snap ? snap_lookup(st, name, &ds, &self) : dataset_lookup(st, name, &ds);
	/* since: "snap" (zfs's short form), "@snap" or "ds@snap", a snapshot
	 * of the same dataset. */
	char full[1024];
	if (r == 0) {
		if (!strchr(since, '@'))
			snprintf(full, sizeof(full), "%s@%s", ds.name, since);
		else if (since[0] == '@')
			snprintf(full, sizeof(full), "%s%s", ds.name, since);
		else
			snprintf(full, sizeof(full), "%s", since);
		r = snap_lookup(st, full, &sds, &old);
	}
	if (r == 0 && sds.id != ds.id)
		r = store_err(st, -EINVAL, "%s: not a snapshot of %s", full, ds.name);
	if (r == 0 && is_snap && old.createtxg > self.createtxg)
		r = store_err(st, -EINVAL, "%s: is newer than %s", full, name);
	/* A dataset's current state is its newest snapshot. */
	if (r == 0 && !is_snap) {
		r = catalog_snap_prev(st->cat, ds.id, UINT64_MAX, &self);
		if (r == -ENOENT)
			r = store_err(st, r, "%s: dataset has no snapshots", name);
	}
	buf_t a = {0}, b = {0};
	if (r == 0)
		r = catalog_snap_index(st->cat, self.id, &a);
	if (r == 0)
		r = catalog_snap_index(st->cat, old.id, &b);
	if (r == 0)
		r = index_unique_bytes(st->cs, &a, &b, NULL, bytes, NULL);
	if (r < 0 && !st->errdetail[0])
		r = store_err(st, r, "%s: written@%s: %s", name, since, cairn_strerror(r));
	catalog_end_read(st->cat);
	buf_free(&a);
	buf_free(&b);
	snap_row_clear(&self);
	snap_row_clear(&old);
	ds_row_clear(&ds);
	ds_row_clear(&sds);
	return r;
}
