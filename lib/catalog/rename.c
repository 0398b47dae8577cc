/* rename.c - renaming snapshots and datasets, and inheriting properties. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "crypt/encroot.h"
#include "data/exclude.h"
#include "catalog/dataset.h"
#include "store/store.h"

static int run_sql(cairn_store *st, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	int r = rc == SQLITE_DONE ? 0 : rc == SQLITE_CONSTRAINT ? -EEXIST : -EIO;
	sqlite3_finalize(s);
	return r;
}

/* Runs an UPDATE that gives the names under `from` the prefix `to`
 * (?1 = to, ?2 = from, ?3 = strlen(from)). */
static int move_prefix(cairn_store *st, const char *sql, const char *from, const char *to,
		       size_t fl)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(catalog_db(st->cat), sql, -1, &s, NULL))
		return -EIO;
	sqlite3_bind_text(s, 1, to, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, from, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, (int64_t)fl);
	return run_sql(st, s);
}

static int rename_snapshot(cairn_store *st, const char *from, const char *to, bool recursive)
{
	ds_row_t ds = {0};
	const char *oldname;
	int r = snapshot_split(st, from, &ds, &oldname);
	if (r < 0)
		return r;
	const char *newname = strchr(to, '@') ? strchr(to, '@') + 1 : to;
	char why[256], full[600];
	snprintf(full, sizeof(full), "%s@%s", ds.name, newname);
	if (strchr(to, '@') && (strncmp(to, ds.name, strlen(ds.name)) || to[strlen(ds.name)] != '@'))
		r = store_err(st, -EINVAL, "%s: snapshots can only be renamed within their dataset",
			      to);
	else if (cairn_name_check(full, true, why, sizeof(why)) < 0)
		r = store_err(st, CAIRN_EBADNAME, "%s: %s", full, why);
	/* As zfs opens the operand first: with -r too, the named snapshot
	 * must exist (descendants without it are skipped). */
	snap_row_t named = {0};
	if (r == 0 && catalog_snap_lookup(st->cat, ds.id, oldname, &named) < 0)
		r = store_err(st, -ENOENT, "%s: snapshot does not exist", from);
	snap_row_clear(&named);
	int64_t *ids = NULL;
	size_t n = 1;
	if (r == 0 && recursive)
		r = catalog_ds_subtree(st->cat, ds.id, &ids, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		int64_t id = recursive ? ids[i] : ds.id;
		snap_row_t exist = {0};
		if (catalog_snap_lookup(st->cat, id, oldname, &exist) < 0)
			continue;
		snap_row_clear(&exist);
		ds_row_t d = {0};
		r = catalog_ds_by_id(st->cat, id, &d);
		if (r == 0)
			r = derived_name_check(st, d.name, '@', newname);
		if (r == 0 && catalog_snap_lookup(st->cat, id, newname, &exist) == 0) {
			r = store_err(st, -EEXIST, "%s@%s: snapshot already exists", d.name, newname);
			snap_row_clear(&exist);
		}
		ds_row_clear(&d);
		if (r < 0)
			break;
		sqlite3_stmt *s;
		if (sqlite3_prepare_v2(catalog_db(st->cat),
				       "UPDATE snapshot SET name=? WHERE dataset=? AND name=?", -1, &s,
				       NULL)) {
			r = -EIO;
			break;
		}
		sqlite3_bind_text(s, 1, newname, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, id);
		sqlite3_bind_text(s, 3, oldname, -1, SQLITE_STATIC);
		r = run_sql(st, s);
	}
	free(ids);
	ds_row_clear(&ds);
	return r;
}

/* After a dataset moved to `to`: every name under it must stay valid, as
 * zfs checks before a rename (the full names of its descendants, their
 * snapshots and bookmarks at most 255 bytes, at most 50 components). */
static int subtree_names_check(cairn_store *st, const char *to)
{
	static const char sql[] =
		"WITH d(id, name) AS (SELECT id, name FROM dataset"
		"  WHERE name = ?1 OR (name > ?1 || '/' AND name < ?1 || '0'))"
		" SELECT n FROM (SELECT name AS n FROM d"
		"  UNION ALL SELECT d.name || '@' || s.name FROM d JOIN snapshot s ON s.dataset = d.id"
		"  UNION ALL SELECT d.name || '#' || b.name FROM d JOIN bookmark b ON b.dataset = d.id)"
		" WHERE length(n) > 255 OR length(n) - length(replace(n, '/', '')) >= 50"
		" LIMIT 1";
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(catalog_db(st->cat), sql, -1, &s, NULL))
		return -EIO;
	sqlite3_bind_text(s, 1, to, -1, SQLITE_STATIC);
	int r = 0, rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		char why[256] = "invalid name";
		const char *n = (const char *)sqlite3_column_text(s, 0);
		cairn_name_check(n, true, why, sizeof(why));
		r = store_err(st, CAIRN_EBADNAME, "%s: %s (after renaming to %s)", n, why, to);
	} else if (rc != SQLITE_DONE) {
		r = -EIO;
	}
	sqlite3_finalize(s);
	return r;
}

static int rename_dataset(cairn_store *st, const char *from, const char *to, bool parents,
			  uint64_t txg)
{
	char why[256];
	if (cairn_name_check(to, false, why, sizeof(why)) < 0)
		return store_err(st, CAIRN_EBADNAME, "%s: %s", to, why);
	ds_row_t ds = {0}, exist = {0}, parent = {0};
	int r = dataset_lookup(st, from, &ds);
	size_t fl = strlen(from);
	if (r == 0 && !strncmp(to, from, fl) && to[fl] == '/')
		r = store_err(st, -EINVAL, "%s: cannot move a dataset into itself", to);
	if (r == 0 && catalog_ds_by_name(st->cat, to, &exist) == 0)
		r = store_err(st, -EEXIST, "%s: dataset already exists", to);
	int64_t parent_id = 0;
	if (r == 0)
		r = dataset_ensure_parent(st, to, parents, txg, &parent_id);
	if (r == 0 && parent_id && catalog_ds_by_id(st->cat, parent_id, &parent) == 0 &&
	    parent.type != CAIRN_TYPE_FILESYSTEM)
		r = store_err(st, -ENOTDIR, "%s: parent is a volume", parent.name);
	if (r == 0)
		r = encroot_rename_check(st, &ds, parent_id, to);
	/* The whole subtree moves: every descendant name gets the new prefix,
	 * and so does the partial receive state kept under those names (a
	 * row left under the new name by an older version's destroy is
	 * stale: the name is free). */
	if (r == 0)
		r = move_prefix(st,
				"UPDATE dataset SET name = ?1 || substr(name, ?3 + 1)"
				" WHERE name = ?2 OR (name > ?2 || '/' AND name < ?2 || '0')",
				from, to, fl);
	if (r == 0)
		r = move_prefix(st,
				"UPDATE OR REPLACE recvstate SET dataset = ?1 || substr(dataset, ?3 + 1)"
				" WHERE dataset = ?2 OR (dataset > ?2 || '/' AND dataset < ?2 || '0')",
				from, to, fl);
	if (r == 0) {
		sqlite3_stmt *s;
		if (sqlite3_prepare_v2(catalog_db(st->cat), "UPDATE dataset SET parent=? WHERE id=?",
				       -1, &s, NULL))
			r = -EIO;
		else {
			sqlite3_bind_int64(s, 1, parent_id);
			sqlite3_bind_int64(s, 2, ds.id);
			r = run_sql(st, s);
		}
	}
	if (r == 0)
		r = subtree_names_check(st, to);
	ds_row_clear(&ds);
	ds_row_clear(&exist);
	ds_row_clear(&parent);
	return r;
}

int cairn_rename(cairn_store *st, const char *from, const char *to, bool recursive,
		 bool parents)
{
	int r = STORE_ENTER(st, from, to);
	if (r < 0)
		return r;
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	if (strchr(from, '@'))
		r = rename_snapshot(st, from, to, recursive);
	else if (strchr(to, '@'))
		r = store_err(st, -EINVAL, "%s: a dataset cannot become a snapshot", to);
	else if (recursive)
		r = store_err(st, -EINVAL, "-r applies to snapshots only");
	else
		r = rename_dataset(st, from, to, parents, txg);
	r = store_txn_end(st, r);
	return r;
}

int cairn_dataset_inherit(cairn_store *st, const char *name, const char *prop, bool recursive)
{
	/* The older entry point: zfs inherit without -S (props.c). */
	return cairn_prop_inherit(st, name, prop, recursive, false);
}
