/* snapshot.c - see snapshot.h. */
#include "catalog/snapshot.h"

#include <errno.h>
#include <stdio.h>

#include "data/snapio.h"

bool accounting_skipped(cairn_store *st, int r, const chunk_ref_t *failed, const char *who,
			const char *whose, cairn_warn_fn warn, void *arg)
{
	if ((r != CAIRN_ECORRUPT && r != -ENOENT) || !failed->plain_len)
		return false;
	if (!warn) {
		warn = st->warn;
		arg = st->warn_arg;
	}
	if (warn) {
		char hex[DIGEST_HEX_LEN + 1], obj[2200];
		digest_to_hex(&failed->digest, hex);
		snprintf(obj, sizeof(obj), "space accounting of %s: index of %s, chunk %s", who, whose,
			 hex);
		warn(obj, r, arg);
	}
	return true;
}

/* written of the new snapshot, and the new used of its predecessor.  An
 * index chunk of the predecessor, or of the one before it, that cannot be
 * read leaves the figures it was needed for as they would be without it:
 * written counts all the snapshot references (as for a first snapshot),
 * the predecessor's used stays as it was.  The new snapshot's own index is
 * not excused: the backup that wrote it must not commit it unreadable. */
static int account(cairn_store *st, const snapnew_t *s, snap_row_t *row)
{
	snap_row_t prev = {0}, pprev = {0};
	buf_t pidx = {0}, ppidx = {0};
	idxfail_t f = {0};
	const char *whose = NULL;
	row->written = row->used = s->referenced;
	int r = catalog_snap_prev(st->cat, s->ds, UINT64_MAX, &prev);
	if (r == -ENOENT)
		return 0;
	if (r == 0)
		r = catalog_snap_index(st->cat, prev.id, &pidx);
	uint64_t written = 0, pused = 0;
	if (r == 0) {
		r = index_unique_bytes(st->cs, s->idx, &pidx, NULL, &written, &f);
		whose = f.input == 1 ? prev.name : NULL;
	}
	if (r == 0) {
		row->written = row->used = written;
		int q = catalog_snap_prev(st->cat, s->ds, prev.createtxg, &pprev);
		if (q == 0)
			r = catalog_snap_index(st->cat, pprev.id, &ppidx);
		else if (q != -ENOENT)
			r = q;
	}
	if (r == 0) {
		r = index_unique_bytes(st->cs, &pidx, pprev.id ? &ppidx : NULL, s->idx, &pused, &f);
		whose = f.input == 0 ? prev.name : f.input == 1 ? pprev.name : NULL;
	}
	if (r == 0) {
		r = catalog_snap_set_used(st->cat, prev.id, pused);
	} else if (whose) {
		char who[1024], of[1024];
		snprintf(who, sizeof(who), "%s@%s", s->dsname, s->name);
		snprintf(of, sizeof(of), "%s@%s", s->dsname, whose);
		if (accounting_skipped(st, r, &f.ref, who, of, s->warn, s->warn_arg))
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
