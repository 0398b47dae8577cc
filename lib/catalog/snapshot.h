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
} snapnew_t;

/* Inserts the snapshot inside the open write transaction with createtxg
 * txg, computing its written/used and the predecessor's new used from the
 * sorted indexes. */
int snapshot_insert(cairn_store *st, snapnew_t *s, uint64_t txg);

#endif
