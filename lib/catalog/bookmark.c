/* bookmark.c - bookmarks: a snapshot's identity and chunk index, no data. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "catalog/dataset.h"
#include "store/store.h"

typedef struct bmsrc {
	uint64_t guid, createtxg, referenced;
	int64_t creation;
	buf_t idx;
} bmsrc_t;

static int source_snapshot(cairn_store *st, const char *src, int64_t *ds, bmsrc_t *b)
{
	ds_row_t d = {0};
	const char *sname;
	int r = snapshot_split(st, src, &d, &sname);
	snap_row_t s = {0};
	if (r == 0 && (r = catalog_snap_lookup(st->cat, d.id, sname, &s)) == -ENOENT)
		r = store_err(st, r, "%s: snapshot does not exist", src);
	buf_t tree = {0};
	if (r == 0)
		r = catalog_snap_roots(st->cat, s.id, &tree, &b->idx);
	b->guid = s.guid;
	b->createtxg = s.createtxg;
	b->creation = s.creation;
	b->referenced = s.referenced;
	*ds = d.id;
	buf_free(&tree);
	snap_row_clear(&s);
	ds_row_clear(&d);
	return r;
}

static int source_bookmark(cairn_store *st, const char *src, int64_t *ds, bmsrc_t *b)
{
	const char *h = strchr(src, '#');
	char *dsname = strndup(src, h - src);
	ds_row_t d = {0};
	int r = dsname ? dataset_lookup(st, dsname, &d) : -ENOMEM;
	free(dsname);
	sqlite3_stmt *s = NULL;
	if (r == 0 && sqlite3_prepare_v2(catalog_db(st->cat),
					 "SELECT guid, createtxg, creation, referenced, idx FROM bookmark"
					 " WHERE dataset=? AND name=?",
					 -1, &s, NULL))
		r = -EIO;
	if (r == 0) {
		sqlite3_bind_int64(s, 1, d.id);
		sqlite3_bind_text(s, 2, h + 1, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW) {
			b->guid = sqlite3_column_int64(s, 0);
			b->createtxg = sqlite3_column_int64(s, 1);
			b->creation = sqlite3_column_int64(s, 2);
			b->referenced = sqlite3_column_int64(s, 3);
			r = buf_append(&b->idx, sqlite3_column_blob(s, 4), sqlite3_column_bytes(s, 4));
		} else {
			r = store_err(st, -ENOENT, "%s: bookmark does not exist", src);
		}
	}
	sqlite3_finalize(s);
	*ds = d.id;
	ds_row_clear(&d);
	return r;
}

static int insert(cairn_store *st, int64_t ds, const char *name, const bmsrc_t *b,
		  const char *full)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "INSERT INTO bookmark(dataset, name, guid, createtxg, creation,"
			       " referenced, idx) VALUES(?, ?, ?, ?, ?, ?, ?)",
			       -1, &s, NULL))
		return store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
	sqlite3_bind_int64(s, 1, ds);
	sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, (int64_t)b->guid);
	sqlite3_bind_int64(s, 4, (int64_t)b->createtxg);
	sqlite3_bind_int64(s, 5, b->creation);
	sqlite3_bind_int64(s, 6, (int64_t)b->referenced);
	sqlite3_bind_blob(s, 7, b->idx.data ? (void *)b->idx.data : "", b->idx.len, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if ((rc & 0xff) == SQLITE_CONSTRAINT)
		return store_err(st, -EEXIST, "%s: bookmark already exists", full);
	return rc == SQLITE_DONE ? 0 : store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
}

/* One bookmark inside the open write transaction. */
static int bookmark_one(cairn_store *st, const char *source, const char *bookmark)
{
	bool from_bm = strchr(source, '#') != NULL;
	if (!from_bm && !strchr(source, '@'))
		return store_err(st, -EINVAL, "%s: not a snapshot or bookmark", source);
	bmsrc_t b = {0};
	int64_t ds;
	int r = from_bm ? source_bookmark(st, source, &ds, &b) : source_snapshot(st, source, &ds, &b);
	/* "ds#name", "#name" or "name": a bookmark lives in its snapshot's dataset. */
	const char *h = strchr(bookmark, '#');
	const char *bname = h ? h + 1 : bookmark;
	size_t dslen = strcspn(source, "@#");
	char full[600];
	snprintf(full, sizeof(full), "%.*s#%s", (int)dslen, source, bname);
	char why[256];
	if (r == 0 && h && h != bookmark &&
	    ((size_t)(h - bookmark) != dslen || strncmp(bookmark, source, dslen)))
		r = store_err(st, -EINVAL, "%s: a bookmark must be in its snapshot's dataset (%.*s)",
			      bookmark, (int)dslen, source);
	if (r == 0 && cairn_name_check(full, true, why, sizeof(why)) < 0)
		r = store_err(st, CAIRN_EBADNAME, "%s: %s", full, why);
	if (r == 0)
		r = insert(st, ds, bname, &b, full);
	buf_free(&b.idx);
	return r;
}

int cairn_bookmark_many(cairn_store *st, const char *const *sources, size_t n,
			const char *bookmark)
{
	int r = STORE_ENTER(st, bookmark);
	if (r == 0)
		r = store_check_names(st, __func__, "sources", sources, n);
	if (r < 0)
		return r;
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	for (size_t i = 0; r == 0 && i < n; i++)
		r = bookmark_one(st, sources[i], bookmark);
	return store_txn_end(st, r);
}

int cairn_bookmark(cairn_store *st, const char *source, const char *bookmark)
{
	return cairn_bookmark_many(st, &source, 1, bookmark);
}
