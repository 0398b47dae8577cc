/* catalog.h - the SQLite catalog: settings, datasets, properties, snapshots.
 *
 * Every command that changes the catalog does it in ONE write transaction
 * (BEGIN IMMEDIATE ... COMMIT), which is one WAL fsync.  Each committed
 * write transaction advances the store-wide txg by one.  Readers use short
 * read transactions so a long listing never pins the WAL.
 */
#ifndef CAIRN_CATALOG_H
#define CAIRN_CATALOG_H

#include <sqlite3.h>

#include "util.h"

typedef struct catalog catalog_t;

typedef struct ds_row {
	int64_t id;
	char *name;     /* malloc'd */
	int64_t parent; /* 0 for a top-level dataset */
	int type;       /* CAIRN_TYPE_FILESYSTEM or CAIRN_TYPE_VOLUME */
	uint64_t guid;
	uint64_t createtxg;
	int64_t creation; /* seconds since the epoch */
} ds_row_t;

typedef struct snap_row {
	int64_t id;
	int64_t dataset;
	char *name; /* the part after '@', malloc'd */
	uint64_t guid;
	uint64_t createtxg;
	int64_t creation;
	uint64_t referenced, logicalreferenced, written, used;
	uint32_t userrefs;
	bool defer_destroy;
} snap_row_t;

void ds_row_clear(ds_row_t *r);
void snap_row_clear(snap_row_t *r);

/* Creates the schema in a new database file.  Returns 0 or -EIO. */
int catalog_create(const char *path);
int catalog_open(const char *path, catalog_t **out);
void catalog_close(catalog_t *c);
sqlite3 *catalog_db(catalog_t *c);
/* The last SQLite error message of this connection. */
const char *catalog_errmsg(catalog_t *c);
/* The most recent SQLite failure on c as a negative errno (-ENOSPC, -EROFS
 * for a read-only filesystem, -EIO...), its message kept for
 * catalog_errmsg() until the next operation, even across a ROLLBACK. */
int catalog_error(catalog_t *c);

/* Write transaction: begin takes the write lock (waiting for other
 * writers, up to 600 s) and allocates the next txg; commit makes it
 * durable.  -EINTR when the wait was cut short (catalog_stop_waits_on). */
int catalog_begin_write(catalog_t *c, uint64_t *txg);
/* While *flag is non-zero, waits for another writer's lock end at once:
 * a command that was asked to stop (its signal handler sets the flag)
 * must not first wait up to 600 s for someone else's commit.  One flag for
 * the process; NULL stops watching. */
void catalog_stop_waits_on(const volatile int *flag);
/* How long c's next write transactions wait for another writer's lock:
 * at most ms milliseconds (-EBUSY after that), or with ms < 0 the usual
 * 600 s again.  For a write a command can do without (a restore's hold). */
void catalog_writer_wait(catalog_t *c, int ms);
int catalog_commit(catalog_t *c);
void catalog_rollback(catalog_t *c);
/* Inside a write transaction: calls fn(arg, committed) once the outermost
 * one ends, committed true when it committed.  A savepoint rolled back
 * takes the calls registered inside it along (committed false, at once).
 * For what must follow only the final commit, outside the catalog (a
 * destroyed root's key leaves the keyring).  0, -EINVAL outside a write
 * transaction, -ENOMEM. */
int catalog_on_end(catalog_t *c, void (*fn)(void *arg, bool committed), void *arg);
/* Called by whoever began the outermost write transaction, in it (not in
 * a savepoint, where it does nothing): that transaction is a rehearsal,
 * which will only ever be rolled back (a dry-run receive's), so nothing
 * done in it happens for real; catalog_rehearsal tells, until it ends. */
void catalog_set_rehearsal(catalog_t *c);
bool catalog_rehearsal(const catalog_t *c);
/* Read transaction: a consistent view until end_read. */
int catalog_begin_read(catalog_t *c);
void catalog_end_read(catalog_t *c);

/* Settings: -ENOENT when not stored. */
int catalog_config_get(catalog_t *c, const char *key, int64_t *value);
int catalog_config_set(catalog_t *c, const char *key, int64_t value);

int catalog_ds_by_name(catalog_t *c, const char *name, ds_row_t *out);   /* -ENOENT */
int catalog_ds_by_id(catalog_t *c, int64_t id, ds_row_t *out);
int catalog_ds_insert(catalog_t *c, ds_row_t *r); /* sets r->id; -EEXIST */
/* Ids of a dataset and all its descendants, in name order. */
int catalog_ds_subtree(catalog_t *c, int64_t id, int64_t **ids, size_t *n);

/* Local property value (malloc'd) or -ENOENT. */
int catalog_prop_get(catalog_t *c, int64_t ds, const char *name, char **value);
int catalog_prop_set(catalog_t *c, int64_t ds, const char *name, const char *value);
/* Received values (recv of a -R stream), see rprop_schema in catalog.c.
 * catalog_rprop_get: the value even when masked (*masked tells; masked
 * may be NULL), or -ENOENT. */
int catalog_rprop_get(catalog_t *c, int64_t ds, const char *name, char **value, bool *masked);
/* The value that applies on ds itself: the local one, else the received
 * one unless masked by inherit.  *received tells which.  -ENOENT: none. */
int catalog_prop_effective(catalog_t *c, int64_t ds, const char *name, char **value,
			   bool *received);
/* Replaces ds's received values by names[i]=values[i] (masks of names
 * still received are kept).  -EROFS on an old store never migrated. */
int catalog_rprop_replace(catalog_t *c, int64_t ds, const char *const *names,
			  const char *const *values, size_t n);
/* Sets or clears the mask (plain inherit / inherit -S) of a received value. */
int catalog_rprop_mask(catalog_t *c, int64_t ds, const char *name, bool masked);
bool catalog_has_rprop(catalog_t *c);
/* False when the hold table had no temporary hold (pid != 0) as the
 * catalog was opened and no write transaction has begun on it since; true
 * otherwise, or when that could not be read. */
bool catalog_may_have_temp_holds(catalog_t *c);

int catalog_snap_lookup(catalog_t *c, int64_t ds, const char *name, snap_row_t *out);
/* The snapshot of ds with the highest createtxg below before_txg
 * (UINT64_MAX: the newest); -ENOENT when none. */
int catalog_snap_prev(catalog_t *c, int64_t ds, uint64_t before_txg, snap_row_t *out);
/* The next snapshot of ds after createtxg after_txg; -ENOENT when none. */
int catalog_snap_next(catalog_t *c, int64_t ds, uint64_t after_txg, snap_row_t *out);
int catalog_snap_insert(catalog_t *c, snap_row_t *r, const buf_t *tree, const buf_t *index);
int catalog_snap_set_used(catalog_t *c, int64_t id, uint64_t used);
/* The packed chunk_ref lists of a snapshot's tree and index streams. */
int catalog_snap_roots(catalog_t *c, int64_t id, buf_t *tree, buf_t *index);
/* catalog_snap_roots for the index root only (space accounting). */
int catalog_snap_index(catalog_t *c, int64_t id, buf_t *index);
int catalog_snap_prop_set(catalog_t *c, int64_t snap, const char *name, const char *value);

#endif
