/* pool.h - worker threads that hash, compress and store chunks.
 *
 * The reader thread cuts chunks and hands copies to the pool; workers
 * compute the SHA-256, compress and write (chunkstore_put is thread safe).
 * Results are collected in submission order, so the tree stream stays in
 * file order.  In-flight bytes are bounded by the caller waiting for the
 * oldest job.
 */
#ifndef CAIRN_POOL_H
#define CAIRN_POOL_H

#include <stdatomic.h>

#include "store/chunkstore.h"

typedef struct pool pool_t;

typedef struct chunkjob {
	uint8_t *data; /* owned by the job; freed when done */
	size_t len;
	int level;
	chunk_ref_t ref; /* out */
	bool was_new;    /* out */
	int err;         /* out */
	/* When set, the worker calls run(j) instead of storing data: other
	 * work (recv's chunk checks) on the same threads.  Zeroed jobs, as
	 * backup makes them, store. */
	void (*run)(struct chunkjob *j);
	atomic_int done;
	struct chunkjob *next;
} chunkjob_t;

/* nthreads 0 = the number of online CPUs, one more when the workers store
 * chunks in cs (their writes wait for the disk).  NULL on failure. */
pool_t *pool_new(chunkstore_t *cs, int nthreads);
/* Makes the workers store chunks under an encryption root's keys (keyed
 * ids, encrypted blobs); k stays owned by the caller and must outlive the
 * jobs.  Call before the first submit. */
void pool_set_key(pool_t *p, const crypt_keys_t *k);
void pool_free(pool_t *p);
void pool_submit(pool_t *p, chunkjob_t *j);
/* Blocks until j is done. */
void pool_wait(pool_t *p, chunkjob_t *j);
/* Takes j back if no worker has started it: true, and j will never run
 * (its done stays 0); false when it is running or done (pool_wait then).
 * Lets the submitter run a job itself rather than wait for a worker. */
bool pool_cancel(pool_t *p, chunkjob_t *j);

#endif
