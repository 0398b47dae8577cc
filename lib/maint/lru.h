/* lru.h - a bounded set of digests that forgets the least recently used.
 *
 * GC's mark phase asks it, for every chunk reference, "was this digest
 * touched (queued for touching) already in this run?".  A yes means the
 * touch is skipped, so the set must never answer yes for a digest it was
 * not given: keys are whole 32-byte digests, compared exactly.  A no for a
 * digest it has forgotten only costs a second touch.
 *
 * Memory: 48 bytes per entry plus a table of 8-byte slots at load <= 1/2,
 * all allocated up front: about 64 MiB for the default 1,048,576 entries.
 *
 * Recency is kept in a doubly linked list threaded through the entry
 * array; eviction takes the tail.  A hit moves its entry to the front only
 * when the entry sits in the older half of the list (more than capacity/2
 * insertions or promotions happened since it was last put in front).  An
 * entry in the newer half is at least capacity/2 insertions away from
 * eviction anyway, and skipping the move keeps a hit to two memory reads
 * (slot and entry) instead of touching both list neighbours.
 *
 * Not thread safe: one marker owns one cache.
 */
#ifndef CAIRN_LRU_H
#define CAIRN_LRU_H

#include "util.h"

typedef struct lru lru_t;

/* A cache for capacity digests (capacity >= 1).  Returns 0, -EINVAL, -ENOMEM. */
int lru_new(size_t capacity, lru_t **out);
void lru_free(lru_t *c);

/* Returns true if d is in the cache (a hit; its recency is refreshed as
 * described above).  Otherwise inserts d, evicting the least recently used
 * entry when the cache is full, and returns false. */
bool lru_check_insert(lru_t *c, const digest_t *d);

/* Does the same for n digests in order (hit[i] gets each answer), with
 * memory prefetches running ahead: the result is identical to n calls of
 * lru_check_insert. */
void lru_check_insert_many(lru_t *c, const digest_t *d, size_t n, bool *hit);

/* True if d is cached; changes nothing. */
bool lru_contains(const lru_t *c, const digest_t *d);

size_t lru_size(const lru_t *c);
size_t lru_capacity(const lru_t *c);
/* Bytes allocated by the cache. */
size_t lru_memory(const lru_t *c);

/* Copies the cached digests, most recently used first, into out (room for
 * lru_size()); for tests. */
size_t lru_dump(const lru_t *c, digest_t *out);

#endif
