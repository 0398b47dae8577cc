/* store.h - the cairn_store handle shared by every libcairn module. */
#ifndef CAIRN_STORE_H
#define CAIRN_STORE_H

#include "catalog/catalog.h"
#include "data/chunker.h"
#include "store/chunkstore.h"
#include "util.h"

struct cairn_store {
	char *path;
	int dirfd;
	catalog_t *cat;
	chunkstore_t *cs;
	char errdetail[1024];
	int writer_refs; /* writer.h registrations held by this handle */
	int writer_fd;   /* the locked registry file while writer_refs > 0 */
	char writer_name[80];
	/* cairn_chunks_present registered this handle as a writer (held to
	 * cairn_store_close): see touch_as_writer in recv.c. */
	bool touch_writer;
	bool temp_holds_skipped; /* read-only filesystem: see cairn_hold() */
	int64_t published_changes; /* catalog changes already copied to the bucket */
	cairn_warn_fn warn; /* cairn_store_set_warn: for calls with no warn of their own */
	void *warn_arg;
};

/* Remote chunks (backend_store.c).  store_remote_init checks the bucket and
 * writes backend.conf into the new store directory dfd; attach opens the
 * backend of an existing store (no-op for a local one); publish copies the
 * catalog to the bucket when it changed (force: even if not). */
int store_remote_init(int dfd, const cairn_init_opts *o);
/* An unfinished init's directory dfd: the claim on the prefix that it
 * made (marked by STORE_CLAIM_MARK, written before the claim) goes again
 * if it is still its own.  0 when done or nothing to do; <0 when the
 * bucket could not tell (the error detail says so): keep the directory,
 * whose settings are the only record of the claim's id. */
int store_remote_unclaim(int dfd);
#define STORE_CLAIM_MARK "backend.claim"
int store_remote_attach(cairn_store *st);
int store_remote_publish(cairn_store *st, bool force);
/* Before deleting from the bucket: 0 when the prefix's claim (meta/
 * store-id) is this store's (a prefix without one is claimed now);
 * -EPERM naming both ids when another store claimed it. */
int store_remote_check_owner(cairn_store *st);
int store_import(const char *path, const cairn_init_opts *o);
/* Clears cairn_store_init_errdetail(): each init starts without the
 * reason an earlier one of this thread failed. */
void store_init_err_clear(void);
/* Setting up a store (init, import).  begin: makes path (*made) or takes
 * an empty directory, or one an unfinished set-up left (cleared), and
 * marks it unfinished; -EEXIST otherwise.  finish (with the result r so
 * far): on success writes the store marker and drops the unfinished
 * mark; on failure takes back what the set-up made.  Returns r. */
int store_setup_begin(const char *path, bool *made);
int store_setup_finish(const char *path, int dfd, bool made, int r);
/* An unfinished set-up's directory (its mark, no store marker, nothing
 * but names set-up makes): emptied (1), after taking back a claim on a
 * prefix that it made (store_remote_unclaim: a killed init's claim goes
 * when the same command runs again).  0 when it is anything else (left
 * alone), <0 on error, also when the bucket could not be asked about the
 * claim (the directory then stays as it is). */
int store_setup_clear(const char *path);
/* True when path holds a finished store (its marker, written last). */
bool store_is_made(const char *path);

/* Records the failing object and reason for cairn_store_errdetail() and
 * returns err, so callers can `return store_err(st, r, "...", ...)`. */
int store_err(cairn_store *st, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The first step of every cairn_* call on a handle (through STORE_ENTER).
 * A caller's NULL where the call needs a pointer must fail, not crash:
 * -EINVAL when st or one of the n pointers args (named, comma-separated,
 * in names) is NULL, errdetail naming call and argument.  Otherwise
 * errdetail is cleared, so that a call that succeeds does not leave an
 * earlier call's failure there for the caller to take as its own. */
int store_enter(cairn_store *st, const char *call, const char *names, const void *const *args,
		size_t n);
/* STORE_ENTER(st, name, value...): store_enter with the pointers the call
 * requires (none: just st).  The leading NULL keeps the array non-empty. */
#define STORE_ENTER(st, ...)                                                                 \
	store_enter((st), __func__, #__VA_ARGS__, (const void *const[]){NULL, __VA_ARGS__} + 1, \
		    sizeof((const void *const[]){NULL, __VA_ARGS__}) / sizeof(void *) - 1)
/* What a call returns through out pointers is NULL (a count 0) on every
 * failure, the entry check's included, so a caller may free it whatever
 * happened.  Each pointer may itself be NULL (an optional result). */
static inline void clear_out(char **a, char **b)
{
	if (a)
		*a = NULL;
	if (b)
		*b = NULL;
}
static inline void clear_names_out(char ***names, size_t *n)
{
	if (names)
		*names = NULL;
	if (n)
		*n = 0;
}
/* -EINVAL naming call and what when an array of n names (v) or n
 * properties (p, name and value) is NULL or has a NULL entry.  Called
 * before anything is changed, so a bad entry late in the array cannot
 * leave the earlier ones applied.  0 when n is 0, whatever v is. */
int store_check_names(cairn_store *st, const char *call, const char *what,
		      const char *const *v, size_t n);
int store_check_props(cairn_store *st, const char *call, const char *what,
		      const cairn_prop *p, size_t n);

/* store_err for a failed chunk put or chunkstore_flush: "chunk store:
 * <what>: <reason>".  <what> is the failed batch's own description when a
 * batch flush failed (the put that reports it is usually not the chunk at
 * fault), else "writing chunk <hex of d>" (nothing when d is NULL). */
int store_chunk_err(cairn_store *st, int err, const digest_t *d);
/* store_chunk_err for a step that writes through the chunk store (the
 * tree, the chunk index, a resume point): "<during>: chunk store: <what>:
 * <reason>" when a batch's failure explains err, else "<during>: <reason>",
 * since err may then come from the step itself (ENOMEM, a bad record). */
int store_chunk_err_during(cairn_store *st, int err, const char *during);

/* Begins a write transaction (BEGIN IMMEDIATE) and gives its txg; on
 * failure records the catalog's reason in errdetail.  0 or negative errno. */
int store_txn_begin(cairn_store *st, uint64_t *txg);
/* Ends the open write transaction: commits when r == 0 (recording a
 * failed commit in errdetail), else rolls back.  Returns the outcome. */
int store_txn_end(cairn_store *st, int r);

/* Effective integer setting (environment, catalog, default); the key must
 * be in the config table.  Falls back to the default on a bad env value
 * after recording why in errdetail. */
int64_t store_setting(cairn_store *st, const char *key);

/* The FastCDC parameters for tree and index streams: fixed, so that equal
 * trees chunk alike in every store. */
#define META_CHUNK_AVG (64u << 10)

/* Checks that the filesystem holding dirfd updates atimes set with
 * utimensat (GC depends on it).  CAIRN_ENOATIME with a reason in why. */
int store_check_atime(int dirfd, char *why, size_t whylen);

#endif
