/* slab.h - large read buffers shared by the chunks cut from them.
 *
 * Backup reads a large file into a slab and hands each chunk to a worker
 * as a slice of it, instead of copying every chunk into a buffer of its
 * own (that copy was 3-6 % of a first backup's CPU samples).  A slab counts
 * its users: the reader holds one reference and every job cut from it one
 * more.  Whoever drops the last returns it to its pool's short free list,
 * so a backup keeps reusing the pages of a few slabs instead of faulting
 * in fresh memory for every chunk.
 *
 * Thread safety: slab_ref and slab_put may be called from any thread;
 * slab_get from any thread too (the free list has a lock), though backup
 * calls it only from its reader.
 */
#ifndef CAIRN_SLAB_H
#define CAIRN_SLAB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct slabpool slabpool_t;

typedef struct slab {
	atomic_int refs;
	slabpool_t *home;
	struct slab *next; /* on the free list */
	size_t cap;        /* bytes of data */
	uint8_t data[];
} slab_t;

struct slabpool {
	pthread_mutex_t lock;
	slab_t *free;
	unsigned nfree, keep; /* kept on the free list; more are freed */
	atomic_uint out;      /* handed out and not yet returned */
	size_t cap;
};

/* Slabs of cap bytes; up to keep of them are kept for reuse. */
void slabpool_init(slabpool_t *sp, size_t cap, unsigned keep);
/* Frees the kept slabs.  Every slab must have been put back. */
void slabpool_destroy(slabpool_t *sp);
/* A slab with one reference (the caller's); NULL when out of memory.
 * Its data is not cleared. */
slab_t *slab_get(slabpool_t *sp);
void slab_ref(slab_t *s);
/* Drops a reference; the last one returns s to its pool (or frees it). */
void slab_put(slab_t *s);

#endif
