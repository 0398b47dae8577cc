/* dataset.h - dataset lookup and property resolution inside libcairn. */
#ifndef CAIRN_DATASET_H
#define CAIRN_DATASET_H

#include "store/store.h"

/* Looks a dataset up by name, with a reason in errdetail on failure. */
int dataset_lookup(cairn_store *st, const char *name, ds_row_t *out);

/* Effective value of a property on dataset ds: local, else inherited
 * (source gets the relative path appended, like a ZFS mountpoint), else
 * the default.  *value malloc'd; *source (may be NULL) malloc'd: "local",
 * "inherited from NAME", "default". */
int dataset_prop(cairn_store *st, const ds_row_t *ds, const char *prop, char **value,
		 char **source);

/* The zstd level (0 = off) and average chunk size a dataset writes with. */
int dataset_compression(cairn_store *st, const ds_row_t *ds, int *level);
int dataset_chunksize(cairn_store *st, const ds_row_t *ds, uint32_t *avg);

/* Validates and normalises a property assignment for a dataset; *norm is
 * malloc'd.  CAIRN_EBADPROP with a reason in errdetail. */
int dataset_prop_normalize(cairn_store *st, const char *prop, const char *value, char **norm);

/* Splits "ds@snap" into a dataset row and the snapshot part (pointer into
 * full); errdetail names what is wrong. */
int snapshot_split(cairn_store *st, const char *full, ds_row_t *ds, const char **snap);

/* Checks a name that an operation makes for a dataset other than the one
 * named (ds, sep '@' or '#', name): a descendant's snapshot under -r is
 * longer than the operand, and must be valid too, as zfs checks each.
 * CAIRN_EBADNAME with the full name in errdetail. */
int derived_name_check(cairn_store *st, const char *ds, char sep, const char *name);

/* Finds the parent of name (*parent = 0 for a top-level name); with
 * parents, creates missing ancestors in the open write transaction. */
int dataset_ensure_parent(cairn_store *st, const char *name, bool parents, uint64_t txg,
			  int64_t *parent);

/* Destroys snapshots (ignoring holds: the caller checked) inside the open
 * write transaction, updating the neighbours' accounting. */
int destroy_snapshots_in_txn(cairn_store *st, const int64_t *ids, size_t n, uint64_t *freed);

/* Removes the temporary holds whose owner is gone: its lock file under
 * <store>/holders is missing or unlocked (see hold.c) (rows from older versions: pid not
 * running, or running with another start time).  Called when a store is
 * opened; one write transaction, only when there is work. */
int hold_reap(cairn_store *st);

#endif
