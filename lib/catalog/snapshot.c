/* snapshot.c - see snapshot.h. */
#include "catalog/snapshot.h"

#include <errno.h>
#include <stdio.h>

#include "data/snapio.h"

bool accounting_skipped(int r, const chunk_ref_t *failed, const char *who, cairn_warn_fn warn,
			void *arg)
{
	if ((r != CAIRN_ECORRUPT && r != -ENOENT) || !failed->plain_len)
		return false;
	if (warn) {
		char hex[DIGEST_HEX_LEN + 1], obj[1200];
		digest_to_hex(&failed->digest, hex);
		snprintf(obj, sizeof(obj), "%s: space accounting: index chunk %s", who, hex);
		warn(obj, r, arg);
	}
	return true;
}

/* written of the new snapshot, and the new used of its predecessor.  When
 * an index chunk cannot be read, written counts everything the snapshot
 * references, as for a first snapshot, and the predecessor keeps its used. */
static int account(cairn_store *st, const snapnew_t *s, snap_row_t *row)
{
	snap_row_t prev = {0}, pprev = {0};
	buf_t pidx = {0}, ppidx = {0};
	chunk_ref_t failed = {0};
	row->written = row->used = s->referenced;
	int r = catalog_snap_prev(st->cat, s->ds, UINT64_MAX, &prev);
	if (r == -ENOENT)
		return 0;
	if (r == 0)
		r = catalog_snap_index(st->cat, prev.id, &pidx);
	uint64_t written = 0, pused = 0;
	if (r == 0)
		r = index_unique_bytes(st->cs, s->idx, &pidx, NULL, &written, &failed);
	if (r == 0) {
		row->written = row->used = written;
		int q = catalog_snap_prev(st->cat, s->ds, prev.createtxg, &pprev);
		if (q == 0)
			r = catalog_snap_index(st->cat, pprev.id, &ppidx);
		else if (q != -ENOENT)
			r = q;
	}
	if (r == 0)
		r = index_unique_bytes(st->cs, &pidx, pprev.id ? &ppidx : NULL, s->idx, &pused,
				       &failed);
	if (r == 0) {
		r = catalog_snap_set_used(st->cat, prev.id, pused);
	} else {
		char who[1024];
		snprintf(who, sizeof(who), "%s@%s", s->dsname, s->name);
		if (accounting_skipped(r, &failed, who, s->warn, s->warn_arg))
			r = 0;
	}
	snap_row_clear(&prev);
	snap_row_clear(&pprev);
	buf_free(&pidx);
	buf_free(&ppidx);
	return r;
}

int snapshot_insert(cairn_store *st, snapnew_t *s, uint64_t txg)
{
	snap_row_t row = {.dataset = s->ds, .name = (char *)s->name, .guid = s->guid,
			  .createtxg = txg, .creation = s->creation, .referenced = s->referenced,
			  .logicalreferenced = s->logical};
	int r = account(st, s, &row);
	if (r < 0)
		return store_err(st, r, "%s@%s: space accounting: %s", s->dsname, s->name,
				 cairn_strerror(r));
	r = catalog_snap_insert(st->cat, &row, s->tree, s->idx);
	if (r == -EEXIST)
		return store_err(st, r, "%s@%s: snapshot already exists", s->dsname, s->name);
	if (r < 0)
		return store_err(st, r, "%s@%s: %s", s->dsname, s->name, catalog_errmsg(st->cat));
	s->id = row.id;
	for (size_t k = 0; r == 0 && k < s->nprops; k++)
		r = catalog_snap_prop_set(st->cat, row.id, s->props[k].name, s->props[k].value);
	return r;
}
