/* rollback.c - rolling a dataset back to one of its snapshots.
 *
 * A cairn dataset has no writable live state of its own (its source is
 * read at snapshot time), so rolling back means what matters to a receive
 * target: the named snapshot becomes the newest.  Later snapshots and
 * bookmarks go, in ONE transaction, through the same accounting as
 * destroy; zfs refuses unless told to destroy them (-r), and so do we.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/dataset.h"
#include "store/store.h"

typedef struct later {
	int64_t *ids;
	size_t n, cap;
} later_t;

static int later_add(later_t *l, int64_t id)
{
	if (l->n == l->cap) {
		size_t c = l->cap ? l->cap * 2 : 16;
		int64_t *p = realloc(l->ids, c * sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->ids = p;
		l->cap = c;
	}
	l->ids[l->n++] = id;
	return 0;
}

/* Reports (and collects the ids of) the objects of one kind newer than txg. */
static int find_later(cairn_store *st, const ds_row_t *ds, uint64_t txg, bool bookmarks,
		      later_t *out, const cairn_rollback_opts *o)
{
	sqlite3_stmt *q;
	const char *sql = bookmarks ? "SELECT id, name FROM bookmark WHERE dataset=? AND "
				      "createtxg>? ORDER BY createtxg, id"
				    : "SELECT id, name FROM snapshot WHERE dataset=? AND "
				      "createtxg>? ORDER BY createtxg";
	if (sqlite3_prepare_v2(catalog_db(st->cat), sql, -1, &q, NULL))
		return store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
	sqlite3_bind_int64(q, 1, ds->id);
	sqlite3_bind_int64(q, 2, (int64_t)txg);
	int r = 0, rc;
	while (r == 0 && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		r = later_add(out, sqlite3_column_int64(q, 0));
		if (r == 0 && o && o->item) {
			char name[600];
			snprintf(name, sizeof(name), "%s%c%s", ds->name, bookmarks ? '#' : '@',
				 (const char *)sqlite3_column_text(q, 1));
			o->item(name, o->arg);
		}
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
	sqlite3_finalize(q);
	return r;
}

static int drop_bookmarks(cairn_store *st, const later_t *bms)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat), "DELETE FROM bookmark WHERE id=?", -1, &q,
			       NULL))
		return -EIO;
	int r = 0;
	for (size_t i = 0; r == 0 && i < bms->n; i++) {
		sqlite3_bind_int64(q, 1, bms->ids[i]);
		r = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
		sqlite3_reset(q);
	}
	sqlite3_finalize(q);
	return r;
}

int cairn_rollback(cairn_store *st, const char *snap, cairn_rollback_opts *o)
{
	int r = STORE_ENTER(st, snap);
	if (r < 0)
		return r;
	if (!strchr(snap, '@'))
		return store_err(st, CAIRN_EBADNAME, "%s: not a snapshot name", snap);
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	ds_row_t ds = {0};
	snap_row_t s = {0};
	const char *sname;
	later_t snaps = {0}, bms = {0};
	r = snapshot_split(st, snap, &ds, &sname);
	if (r == 0 && (r = catalog_snap_lookup(st->cat, ds.id, sname, &s)) == -ENOENT)
		r = store_err(st, r, "%s: snapshot does not exist", snap);
	if (r == 0)
		r = find_later(st, &ds, s.createtxg, false, &snaps, o);
	if (r == 0)
		r = find_later(st, &ds, s.createtxg, true, &bms, o);
	if (r == 0 && (snaps.n || bms.n) && !(o && o->destroy_later))
		r = store_err(st, -EEXIST, "%s: more recent snapshots or bookmarks exist", snap);
	uint64_t freed = 0;
	if (r == 0 && snaps.n)
		r = destroy_snapshots_in_txn(st, snaps.ids, snaps.n, &freed);
	if (r == 0 && bms.n)
		r = drop_bookmarks(st, &bms);
	if (r < 0 && !st->errdetail[0])
		store_err(st, r, "%s: %s", snap, cairn_strerror(r));
	if (o)
		o->destroyed = r == 0 ? snaps.n + bms.n : 0;
	free(snaps.ids);
	free(bms.ids);
	snap_row_clear(&s);
	ds_row_clear(&ds);
	return store_txn_end(st, r);
}
