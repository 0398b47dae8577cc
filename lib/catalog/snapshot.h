/* snapshot.h - committing a new snapshot row, shared by backup and recv. */
#ifndef CAIRN_SNAPSHOT_H
#define CAIRN_SNAPSHOT_H

#include "store/store.h"

typedef struct snapnew {
	int64_t ds;
	const char *dsname, *name;
	uint64_t guid;
	int64_t creation;
	const buf_t *tree, *idx; /* packed root refs */
	uint64_t referenced, logical;
	const cairn_prop *props; /* user properties */
	size_t nprops;
	int64_t id; /* out */
	cairn_warn_fn warn; /* space accounting skipped (accounting_skipped) */
	void *warn_arg;
} snapnew_t;

/* Inserts the snapshot inside the open write transaction with createtxg
 * txg, computing its written/used and the predecessor's new used from the
 * sorted indexes. */
int snapshot_insert(cairn_store *st, snapnew_t *s, uint64_t txg);

/* Space accounting (used, written, what a destroy frees) reads index
 * chunks.  zfs needs no data to take or destroy a snapshot, so a damaged
 * (CAIRN_ECORRUPT) or missing (-ENOENT) index chunk of an existing snapshot
 * must not stop either.  When r is such a failure to read chunk *failed,
 * of the index of snapshot `whose`, this reports it through warn (st's, when NULL) as
 * "space accounting of WHO: index of WHOSE, chunk HEX" and returns true;
 * the caller then keeps the figures of `who` it could not compute as they
 * were.  Any other error (the catalog's, a backend that fails, memory)
 * returns false. */
bool accounting_skipped(cairn_store *st, int r, const chunk_ref_t *failed, const char *who,
			const char *whose, cairn_warn_fn warn, void *arg);

#endif
