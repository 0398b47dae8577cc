/* list.c - the cursor-based batch iterator behind `cairn list`.
 *
 * A listing is planned once (the datasets to visit, in tree order), then
 * read in batches.  Each batch is one short read transaction that walks
 * snapshots by (dataset id, createtxg) from the cursor and loads only the
 * projected columns, until batch_size rows or batch_time_us have passed.
 * Keying the cursor on the dataset id and createtxg (which a rename never
 * changes) is what makes concurrent renames safe: nothing is seen twice.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statvfs.h>

#include "catalog/dataset.h"
#include "store/store.h"
#include "data/tree.h"

typedef struct unit {
	int64_t ds;
	char *name; /* for ordering; rows use the name current at read time */
	int type;
	bool ds_row, snaps, bms;
	int64_t only_snap; /* > 0: this one snapshot */
	int64_t only_bm;   /* > 0: this one bookmark */
	size_t order;      /* argument order, the tie-break */
} unit_t;

struct cairn_list {
	cairn_store *st;
	cairn_list_spec spec;
	unit_t *units;
	size_t nunits, capunits;
	uint32_t bsize;
	int64_t btime_ns;
	uint64_t batches;
	sqlite3_stmt *snaps, *ds, *agg, *one, *bms; /* those the units need */
	bool prepared;
};

static const uint32_t DS_AGG_FIELDS = 1u << CAIRN_F_USED | 1u << CAIRN_F_REFERENCED |
				      1u << CAIRN_F_LOGICALREFERENCED;

static int unit_add(cairn_list *l, const unit_t *u)
{
	for (size_t i = 0; i < l->nunits; i++)
		if (l->units[i].ds == u->ds && l->units[i].only_snap == u->only_snap &&
		    l->units[i].only_bm == u->only_bm) {
			l->units[i].ds_row |= u->ds_row;
			l->units[i].snaps |= u->snaps;
			l->units[i].bms |= u->bms;
			free(u->name);
			return 0;
		}
	if (l->nunits == l->capunits) {
		size_t n = l->capunits ? l->capunits * 2 : 16;
		unit_t *p = realloc(l->units, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->units = p;
		l->capunits = n;
	}
	l->units[l->nunits++] = *u;
	return 0;
}

static int depth_of(const char *name)
{
	int d = 0;
	for (; *name; name++)
		d += *name == '/';
	return d;
}

/* Adds the units for one dataset root and its descendants within depth. */
static int plan_dataset(cairn_list *l, const ds_row_t *root, size_t order)
{
	int64_t *ids;
	size_t n;
	int r = catalog_ds_subtree(l->st->cat, root->id, &ids, &n);
	if (r < 0)
		return store_err(l->st, r, "catalog: %s", catalog_errmsg(l->st->cat));
	int base = depth_of(root->name), types = l->spec.types, depth = l->spec.depth;
	for (size_t i = 0; r == 0 && i < n; i++) {
		ds_row_t ds = {0};
		r = catalog_ds_by_id(l->st->cat, ids[i], &ds);
		if (r < 0)
			break;
		int d = depth_of(ds.name) - base;
		if (depth >= 0 && d > depth) {
			ds_row_clear(&ds);
			continue;
		}
		unit_t u = {.ds = ds.id, .name = ds.name, .type = ds.type, .order = order,
			    .ds_row = (types & ds.type) != 0,
			    .snaps = (types & CAIRN_TYPE_SNAPSHOT) && (depth < 0 || d + 1 <= depth),
			    .bms = (types & CAIRN_TYPE_BOOKMARK) && (depth < 0 || d + 1 <= depth)};
		ds.name = NULL;
		if (u.ds_row || u.snaps || u.bms)
			r = unit_add(l, &u); /* a unit with nothing to list costs a batch */
		else
			free(u.name);
	}
	free(ids);
	return r;
}

static int plan_bookmark(cairn_list *l, const char *root, size_t order, ds_row_t *ds)
{
	const char *h = strchr(root, '#');
	char *dsname = strndup(root, h - root);
	int r = dsname ? dataset_lookup(l->st, dsname, ds) : -ENOMEM;
	free(dsname);
	sqlite3_stmt *s = NULL;
	if (r == 0 && sqlite3_prepare_v2(catalog_db(l->st->cat),
					 "SELECT id FROM bookmark WHERE dataset=? AND name=?", -1, &s,
					 NULL))
		r = -EIO;
	if (r == 0) {
		sqlite3_bind_int64(s, 1, ds->id);
		sqlite3_bind_text(s, 2, h + 1, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW) {
			unit_t u = {.ds = ds->id, .name = ds->name, .type = ds->type, .bms = true,
				    .only_bm = sqlite3_column_int64(s, 0), .order = order};
			ds->name = NULL;
			r = unit_add(l, &u);
		} else {
			r = store_err(l->st, -ENOENT, "%s: bookmark does not exist", root);
		}
	}
	sqlite3_finalize(s);
	return r;
}

static int plan_root(cairn_list *l, const char *root, size_t order)
{
	ds_row_t ds = {0};
	int r;
	if (strchr(root, '@')) {
		const char *sname;
		r = snapshot_split(l->st, root, &ds, &sname);
		snap_row_t s = {0};
		if (r == 0 && (r = catalog_snap_lookup(l->st->cat, ds.id, sname, &s)) == -ENOENT)
			r = store_err(l->st, r, "%s: snapshot does not exist", root);
		if (r == 0) {
			unit_t u = {.ds = ds.id, .name = ds.name, .type = ds.type, .snaps = true,
				    .only_snap = s.id, .order = order};
			ds.name = NULL;
			r = unit_add(l, &u);
		}
		snap_row_clear(&s);
	} else if (strchr(root, '#')) {
		r = plan_bookmark(l, root, order, &ds);
	} else {
		r = dataset_lookup(l->st, root, &ds);
		if (r == 0)
			r = plan_dataset(l, &ds, order);
	}
	ds_row_clear(&ds);
	return r;
}

/* Component-wise name order, as a depth-first walk visits datasets. */
static int unit_cmp(const void *a, const void *b)
{
	const unit_t *x = a, *y = b;
	int c = tree_path_cmp(x->name, y->name);
	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int plan(cairn_list *l)
{
	int r = catalog_begin_read(l->st->cat);
	if (r < 0)
		return store_err(l->st, r, "catalog: %s", catalog_errmsg(l->st->cat));
	if (l->spec.nroots == 0) {
		sqlite3_stmt *s;
		r = sqlite3_prepare_v2(catalog_db(l->st->cat),
				       "SELECT id FROM dataset WHERE parent = 0 ORDER BY name", -1, &s,
				       NULL) == SQLITE_OK ? 0 : -EIO;
		while (r == 0 && sqlite3_step(s) == SQLITE_ROW) {
			ds_row_t ds = {0};
			r = catalog_ds_by_id(l->st->cat, sqlite3_column_int64(s, 0), &ds);
			if (r == 0)
				r = plan_dataset(l, &ds, 0);
			ds_row_clear(&ds);
		}
		sqlite3_finalize(s);
	}
	for (size_t i = 0; r == 0 && i < l->spec.nroots; i++)
		r = plan_root(l, l->spec.roots[i], i);
	catalog_end_read(l->st->cat);
	if (r == 0 && l->nunits)
		qsort(l->units, l->nunits, sizeof(*l->units), unit_cmp);
	return r;
}

static int prepare(cairn_list *l)
{
	sqlite3 *db = catalog_db(l->st->cat);
	const char *snaps =
		"SELECT id, name, guid, createtxg, creation, userrefs, defer_destroy, used,"
		" referenced, logicalreferenced, written, lastverified FROM snapshot"
		" WHERE dataset = ?1 AND createtxg > ?2 AND (?3 = 0 OR id = ?3)"
		" ORDER BY createtxg LIMIT ?4";
	const char *ds = "SELECT name, guid, createtxg, creation FROM dataset WHERE id = ?";
	/* A dataset's space: what its snapshots and its descendants' wrote,
	 * and what its newest snapshot references. */
	const char *agg =
		"SELECT (SELECT COALESCE(SUM(s.written), 0) FROM snapshot s JOIN dataset d"
		"  ON s.dataset = d.id WHERE d.id = ?1 OR (d.name > ?2 || '/' AND d.name < ?2 || '0')),"
		" (SELECT referenced FROM snapshot WHERE dataset = ?1 ORDER BY createtxg DESC LIMIT 1),"
		" (SELECT logicalreferenced FROM snapshot WHERE dataset = ?1"
		"  ORDER BY createtxg DESC LIMIT 1)";
	/* The reference path: one full row per query. */
	const char *one =
		"SELECT id FROM snapshot WHERE dataset = ?1 AND createtxg > ?2"
		" AND (?3 = 0 OR id = ?3) ORDER BY createtxg LIMIT 1";
	const char *bms =
		"SELECT id, name, guid, createtxg, creation, referenced FROM bookmark"
		" WHERE dataset = ?1 AND (createtxg, id) > (?2, ?3) AND (?4 = 0 OR id = ?4)"
		" ORDER BY createtxg, id LIMIT ?5";
	/* Only the statements this listing's units will run: compiling SQL is
	 * a good part of a short listing's fixed cost. */
	bool ds_rows = false, snap_rows = false, bm_rows = false;
	for (size_t i = 0; i < l->nunits; i++) {
		ds_rows |= l->units[i].ds_row;
		snap_rows |= l->units[i].snaps;
		bm_rows |= l->units[i].bms;
	}
	bool need_agg = ds_rows && (l->spec.fields & DS_AGG_FIELDS);
	bool need_one = snap_rows && l->spec.reference;
	bool need_snaps = snap_rows && !l->spec.reference;
	if ((bm_rows && sqlite3_prepare_v3(db, bms, -1, SQLITE_PREPARE_PERSISTENT, &l->bms, NULL)) ||
	    (need_snaps &&
	     sqlite3_prepare_v3(db, snaps, -1, SQLITE_PREPARE_PERSISTENT, &l->snaps, NULL)) ||
	    sqlite3_prepare_v3(db, ds, -1, SQLITE_PREPARE_PERSISTENT, &l->ds, NULL) ||
	    (need_agg && sqlite3_prepare_v3(db, agg, -1, SQLITE_PREPARE_PERSISTENT, &l->agg, NULL)) ||
	    (need_one && sqlite3_prepare_v3(db, one, -1, SQLITE_PREPARE_PERSISTENT, &l->one, NULL)))
		return store_err(l->st, -EIO, "catalog: %s", catalog_errmsg(l->st->cat));
	l->prepared = true;
	return 0;
}

int cairn_list_open(cairn_store *st, const cairn_list_spec *spec, cairn_list **out)
{
	if (out)
		*out = NULL;
	int r = STORE_ENTER(st, out);
	if (r < 0)
		return r;
	if (!spec)
		return store_err(st, -EINVAL, "list: no spec (a zeroed one lists every dataset)");
	r = store_check_names(st, __func__, "spec->roots", spec->roots, spec->nroots);
	if (r < 0)
		return r;
	cairn_list *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->st = st;
	l->spec = *spec;
	if (!l->spec.types)
		l->spec.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME;
	int64_t bs = spec->batch_size, bt = spec->batch_time_us;
	if (!bs)
		r = cairn_config_get(st, "list_batch_size", &bs, NULL);
	if (r == 0 && !bt)
		r = cairn_config_get(st, "list_batch_time_us", &bt, NULL);
	if (r == 0 && (bs < 1 || bs > 4096))
		r = store_err(st, CAIRN_EBADPROP, "batch size %lld is out of range (allowed 1..4096)",
			      (long long)bs);
	if (r == 0 && (bt < 1 || bt > 100000))
		r = store_err(st, CAIRN_EBADPROP,
			      "batch time %lld us is out of range (allowed 1..100000)", (long long)bt);
	l->bsize = bs;
	l->btime_ns = bt * 1000;
	/* The statements are compiled by the first cairn_list_next(), for
	 * the planned units: a caller that only checks what a root names
	 * (cmd_list's root_exists) compiles none. */
	if (r == 0)
		r = plan(l);
	if (r < 0) {
		cairn_list_close(l);
		return r;
	}
	*out = l;
	return 0;
}

void cairn_list_close(cairn_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nunits; i++)
		free(l->units[i].name);
	free(l->units);
	sqlite3_finalize(l->snaps);
	sqlite3_finalize(l->ds);
	sqlite3_finalize(l->agg);
	sqlite3_finalize(l->one);
	sqlite3_finalize(l->bms);
	free(l);
}

uint64_t cairn_list_batches(const cairn_list *l)
{
	return l ? l->batches : 0;
}

void cairn_list_batch_free(cairn_list_batch *b)
{
	if (!b)
		return;
	free(b->type);
	free(b->name);
	for (int f = 0; f < CAIRN_F_COUNT; f++)
		free(b->field[f]);
	free(b->arena);
	memset(b, 0, sizeof(*b));
}

/* ---- filling a batch ---- */

static int batch_reserve(cairn_list_batch *b, uint32_t fields, size_t rows)
{
	if (b->cap >= rows)
		return 0;
	uint8_t *t = realloc(b->type, rows);
	const char **nm = t ? realloc(b->name, rows * sizeof(char *)) : NULL;
	if (t)
		b->type = t;
	if (!nm)
		return -ENOMEM;
	b->name = nm;
	for (int f = 0; f < CAIRN_F_COUNT; f++) {
		if (!(fields & (1u << f)))
			continue;
		uint64_t *p = realloc(b->field[f], rows * sizeof(uint64_t));
		if (!p)
			return -ENOMEM;
		b->field[f] = p;
	}
	b->cap = rows;
	return 0;
}

/* Appends a row; its name is stored as an arena offset until the batch
 * is complete (the arena may move). */
static int row_add(cairn_list_batch *b, int type, const char *ds, const char *snap)
{
	size_t dl = strlen(ds), sl = snap ? strlen(snap) + 1 : 0, need = dl + sl + 1;
	if (b->arena_len + need > b->arena_cap) {
		size_t cap = b->arena_cap ? b->arena_cap : 16384;
		while (cap < b->arena_len + need)
			cap *= 2;
		char *p = realloc(b->arena, cap);
		if (!p)
			return -ENOMEM;
		b->arena = p;
		b->arena_cap = cap;
	}
	char *dst = b->arena + b->arena_len;
	memcpy(dst, ds, dl);
	if (snap) {
		dst[dl] = '@';
		memcpy(dst + dl + 1, snap, sl - 1);
	}
	dst[dl + sl] = 0;
	b->type[b->n] = type;
	b->name[b->n] = (const char *)(uintptr_t)b->arena_len;
	b->arena_len += need;
	b->n++;
	return 0;
}

static void set_field(cairn_list_batch *b, uint32_t fields, int f, uint64_t v)
{
	if (fields & (1u << f))
		b->field[f][b->n - 1] = v;
}

/* Emits the dataset's own row.  Returns 1 if emitted, 0 if it is gone. */
static int emit_dataset(cairn_list *l, const unit_t *u, const char *name,
			cairn_list_batch *b)
{
	uint32_t f = l->spec.fields;
	sqlite3_stmt *s = l->ds;
	int r = row_add(b, u->type, name, NULL);
	if (r < 0)
		return r;
	set_field(b, f, CAIRN_F_GUID, sqlite3_column_int64(s, 1));
	set_field(b, f, CAIRN_F_CREATETXG, sqlite3_column_int64(s, 2));
	set_field(b, f, CAIRN_F_CREATION, sqlite3_column_int64(s, 3));
	set_field(b, f, CAIRN_F_OBJSETID, u->ds);
	set_field(b, f, CAIRN_F_USERREFS, 0);
	set_field(b, f, CAIRN_F_DEFER_DESTROY, 0);
	set_field(b, f, CAIRN_F_WRITTEN, 0);
	set_field(b, f, CAIRN_F_LASTVERIFIED, 0);
	if (f & DS_AGG_FIELDS) {
		sqlite3_stmt *a = l->agg;
		sqlite3_bind_int64(a, 1, u->ds);
		sqlite3_bind_text(a, 2, name, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(a) != SQLITE_ROW) {
			sqlite3_reset(a);
			return -EIO;
		}
		set_field(b, f, CAIRN_F_USED, sqlite3_column_int64(a, 0));
		set_field(b, f, CAIRN_F_REFERENCED, sqlite3_column_int64(a, 1));
		set_field(b, f, CAIRN_F_LOGICALREFERENCED, sqlite3_column_int64(a, 2));
		sqlite3_reset(a);
	}
	return 1;
}

/* Only the projected columns are read out of the row. */
static int emit_snapshot(cairn_list *l, sqlite3_stmt *s, const char *dsname, cairn_list_batch *b)
{
	static const struct {
		int field, col;
	} map[] = {
		{CAIRN_F_OBJSETID, 0},	   {CAIRN_F_GUID, 2},
		{CAIRN_F_CREATETXG, 3},	   {CAIRN_F_CREATION, 4},
		{CAIRN_F_USERREFS, 5},	   {CAIRN_F_DEFER_DESTROY, 6},
		{CAIRN_F_USED, 7},	   {CAIRN_F_REFERENCED, 8},
		{CAIRN_F_LOGICALREFERENCED, 9}, {CAIRN_F_WRITTEN, 10},
		{CAIRN_F_LASTVERIFIED, 11},
	};
	uint32_t f = l->spec.fields;
	int r = row_add(b, CAIRN_TYPE_SNAPSHOT, dsname, (const char *)sqlite3_column_text(s, 1));
	if (r < 0)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (f & (1u << map[i].field))
			b->field[map[i].field][b->n - 1] = sqlite3_column_int64(s, map[i].col);
	return 0;
}

/* Batched: one query returns up to `room` snapshots of the unit. */
static int snaps_batched(cairn_list *l, const unit_t *u, const char *dsname,
			 cairn_list_cursor *c, cairn_list_batch *b, size_t room, int64_t t0,
			 bool *unit_done, bool *time_up)
{
	sqlite3_stmt *s = l->snaps;
	sqlite3_bind_int64(s, 1, u->ds);
	sqlite3_bind_int64(s, 2, (int64_t)c->txg);
	sqlite3_bind_int64(s, 3, u->only_snap);
	/* One row more than fits tells whether the unit is done, so a listing
	 * that ends on a batch boundary needs no extra, empty transaction. */
	sqlite3_bind_int64(s, 4, room + 1);
	size_t got = 0;
	bool more = false;
	int rc, r = 0;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (got == room) {
			more = true;
			break;
		}
		r = emit_snapshot(l, s, dsname, b);
		if (r < 0)
			break;
		c->txg = sqlite3_column_int64(s, 3);
		got++;
		if (mono_ns() - t0 >= l->btime_ns) {
			*time_up = true;
			break;
		}
	}
	if (r == 0 && rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = -EIO;
	sqlite3_reset(s);
	*unit_done = r == 0 && !*time_up && !more;
	return r;
}

/* Reference: find the next id, then load the full row by id, one query
 * pair per snapshot, the way a naive catalog walk would. */
static int snaps_reference(cairn_list *l, const unit_t *u, const char *dsname,
			   cairn_list_cursor *c, cairn_list_batch *b, bool *unit_done)
{
	sqlite3_stmt *s = l->one;
	*unit_done = false;
	sqlite3_bind_int64(s, 1, u->ds);
	sqlite3_bind_int64(s, 2, (int64_t)c->txg);
	sqlite3_bind_int64(s, 3, u->only_snap);
	int rc = sqlite3_step(s);
	int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_reset(s);
	if (rc != SQLITE_ROW) {
		*unit_done = true;
		return rc == SQLITE_DONE ? 0 : -EIO;
	}
	sqlite3_stmt *full;
	if (sqlite3_prepare_v2(catalog_db(l->st->cat),
			       "SELECT id, name, guid, createtxg, creation, userrefs, defer_destroy,"
			       " used, referenced, logicalreferenced, written, lastverified FROM snapshot"
			       " WHERE id=?",
			       -1, &full, NULL))
		return -EIO;
	sqlite3_bind_int64(full, 1, id);
	int r = -EIO;
	if (sqlite3_step(full) == SQLITE_ROW) {
		r = emit_snapshot(l, full, dsname, b);
		c->txg = sqlite3_column_int64(full, 3);
	}
	sqlite3_finalize(full);
	return r;
}

/* Bookmarks of a unit, after its snapshots; keyed by (createtxg, id)
 * since bookmarks of one snapshot share a createtxg. */
static int bookmarks(cairn_list *l, const unit_t *u, const char *dsname, cairn_list_cursor *c,
		     cairn_list_batch *b, size_t room, int64_t t0, bool *unit_done, bool *time_up)
{
	sqlite3_stmt *s = l->bms;
	uint32_t f = l->spec.fields;
	sqlite3_bind_int64(s, 1, u->ds);
	sqlite3_bind_int64(s, 2, (int64_t)c->txg);
	sqlite3_bind_int64(s, 3, c->id);
	sqlite3_bind_int64(s, 4, u->only_bm);
	sqlite3_bind_int64(s, 5, room + 1);
	size_t got = 0;
	bool more = false;
	int rc, r = 0;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (got == room) {
			more = true;
			break;
		}
		size_t dl = strlen(dsname);
		const char *bm = (const char *)sqlite3_column_text(s, 1);
		char *full = malloc(dl + strlen(bm) + 2);
		if (!full) {
			r = -ENOMEM;
			break;
		}
		sprintf(full, "%s#%s", dsname, bm);
		r = row_add(b, CAIRN_TYPE_BOOKMARK, full, NULL);
		free(full);
		if (r < 0)
			break;
		c->id = sqlite3_column_int64(s, 0);
		c->txg = sqlite3_column_int64(s, 3);
		set_field(b, f, CAIRN_F_OBJSETID, 0);
		set_field(b, f, CAIRN_F_GUID, sqlite3_column_int64(s, 2));
		set_field(b, f, CAIRN_F_CREATETXG, c->txg);
		set_field(b, f, CAIRN_F_CREATION, sqlite3_column_int64(s, 4));
		set_field(b, f, CAIRN_F_REFERENCED, sqlite3_column_int64(s, 5));
		set_field(b, f, CAIRN_F_USERREFS, 0);
		set_field(b, f, CAIRN_F_DEFER_DESTROY, 0);
		set_field(b, f, CAIRN_F_USED, 0);
		set_field(b, f, CAIRN_F_LOGICALREFERENCED, 0);
		set_field(b, f, CAIRN_F_WRITTEN, 0);
		set_field(b, f, CAIRN_F_LASTVERIFIED, 0);
		got++;
		if (mono_ns() - t0 >= l->btime_ns) {
			*time_up = true;
			break;
		}
	}
	if (r == 0 && rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = -EIO;
	sqlite3_reset(s);
	*unit_done = r == 0 && !*time_up && !more;
	return r;
}

/* One unit's rows from the cursor on: its dataset row (state 0), its
 * snapshots (state 1), its bookmarks (state 2). */
static int fill_unit(cairn_list *l, const unit_t *u, const char *name, cairn_list_cursor *c,
		     cairn_list_batch *b, size_t limit, int64_t t0, bool *unit_done, bool *time_up)
{
	int r = 0;
	bool phase_done;
	if (c->state == 0) {
		c->state = 1;
		if (u->ds_row) {
			r = emit_dataset(l, u, name, b);
			if (r < 0)
				return r;
			*time_up = mono_ns() - t0 >= l->btime_ns;
		}
	}
	if (c->state == 1 && !*time_up && b->n < limit) {
		phase_done = true;
		if (u->snaps && l->spec.reference)
			r = snaps_reference(l, u, name, c, b, &phase_done);
		else if (u->snaps)
			r = snaps_batched(l, u, name, c, b, limit - b->n, t0, &phase_done, time_up);
		if (r < 0)
			return r;
		if (phase_done) {
			c->state = 2;
			c->txg = 0;
			c->id = 0;
		}
	}
	if (c->state == 2 && !u->bms) {
		*unit_done = true; /* nothing to query: the unit ends here */
	} else if (c->state == 2 && !*time_up && b->n < limit) {
		phase_done = true;
		r = bookmarks(l, u, name, c, b, limit - b->n, t0, &phase_done, time_up);
		*unit_done = phase_done;
	}
	return r;
}

static int fill(cairn_list *l, cairn_list_cursor *c, cairn_list_batch *b)
{
	int64_t t0 = mono_ns();
	size_t limit = l->spec.reference ? 1 : l->bsize;
	while (b->n < limit && c->unit < l->nunits) {
		const unit_t *u = &l->units[c->unit];
		sqlite3_bind_int64(l->ds, 1, u->ds);
		int rc = sqlite3_step(l->ds);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
			sqlite3_reset(l->ds);
			return -EIO;
		}
		bool exists = rc == SQLITE_ROW;
		bool unit_done = !exists, time_up = false;
		int r = 0;
		if (exists) {
			char *name = strdup((const char *)sqlite3_column_text(l->ds, 0));
			r = name ? fill_unit(l, u, name, c, b, limit, t0, &unit_done, &time_up)
				 : -ENOMEM;
			free(name);
		}
		sqlite3_reset(l->ds);
		if (r < 0)
			return r;
		if (unit_done) {
			c->unit++;
			c->txg = 0;
			c->id = 0;
			c->state = 0;
		}
		if (time_up)
			break;
	}
	return 0;
}

int cairn_list_next(cairn_list *l, cairn_list_cursor *c, cairn_list_batch *b)
{
	if (!l)
		return -EINVAL;
	int r = STORE_ENTER(l->st, c, b);
	if (r < 0)
		return r;
	b->n = 0;
	b->arena_len = 0;
	if (c->unit >= l->nunits)
		return 0;
	r = l->prepared ? 0 : prepare(l);
	if (r < 0)
		return r;
	r = batch_reserve(b, l->spec.fields, l->bsize);
	if (r < 0)
		return r;
	r = catalog_begin_read(l->st->cat);
	if (r < 0)
		return store_err(l->st, r, "catalog: %s", catalog_errmsg(l->st->cat));
	/* Loop: a batch may come up empty when every remaining unit is gone. */
	while (r == 0 && b->n == 0 && c->unit < l->nunits)
		r = fill(l, c, b);
	catalog_end_read(l->st->cat);
	l->batches++;
	if (r < 0)
		return store_err(l->st, r, "listing: %s", catalog_errmsg(l->st->cat));
	for (size_t i = 0; i < b->n; i++)
		b->name[i] = b->arena + (uintptr_t)b->name[i];
	return b->n;
}

int cairn_snapshot_get_user(cairn_store *st, const char *snap, const char *prop, char **value)
{
	clear_out(value, NULL);
	int r = STORE_ENTER(st, snap, prop, value);
	if (r < 0)
		return r;
	ds_row_t ds = {0};
	const char *sname;
	r = snapshot_split(st, snap, &ds, &sname);
	snap_row_t s = {0};
	if (r == 0 && (r = catalog_snap_lookup(st->cat, ds.id, sname, &s)) == -ENOENT)
		r = store_err(st, r, "%s: snapshot does not exist", snap);
	if (r == 0) {
		sqlite3_stmt *q;
		r = sqlite3_prepare_v2(catalog_db(st->cat),
				       "SELECT value FROM sprop WHERE snapshot=? AND name=?", -1, &q,
				       NULL) ? -EIO : 0;
		if (r == 0) {
			sqlite3_bind_int64(q, 1, s.id);
			sqlite3_bind_text(q, 2, prop, -1, SQLITE_STATIC);
			const char *v = sqlite3_step(q) == SQLITE_ROW
					      ? (const char *)sqlite3_column_text(q, 0) : "-";
			*value = strdup(v);
			sqlite3_finalize(q);
			r = *value ? 0 : -ENOMEM;
		}
	}
	snap_row_clear(&s);
	ds_row_clear(&ds);
	return r;
}

int cairn_store_available(cairn_store *st, uint64_t *bytes)
{
	int r = STORE_ENTER(st, bytes);
	if (r < 0)
		return r;
	struct statvfs sv;
	if (fstatvfs(st->dirfd, &sv) < 0)
		return -errno;
	*bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}
