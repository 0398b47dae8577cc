/* chunkcache.h - a bounded local copy of remote chunk blobs (LRU).
 *
 * A store whose chunks live in a bucket keeps only markers locally
 * (chunkstore.h), so every read of a chunk is a GET.  The cache keeps the
 * blobs read most recently in <store>/cache/<64 hex>, exactly as the bucket
 * holds them (an encrypted blob stays encrypted), up to a size limit (the
 * s3_cache_mb setting).  Restores, sends and GC's index reads that come
 * back to the same chunks then cost no request.
 *
 * - A hit sets the file's mtime: mtime is the LRU clock (not atime, which
 *   noatime mounts do not keep).
 * - Inserts are written to a temporary name and renamed, so a reader never
 *   sees a partial blob; a crash leaves at most a temporary file, removed by
 *   the next eviction.
 * - The size is known after one scan of the directory per process; when an
 *   insert takes it over the limit, the oldest files go until it is at 80 %
 *   of the limit.  Several processes may share a cache: each eviction
 *   rescans, so their estimates cannot drift for long.
 * - The cache is never trusted: callers decode (and so verify) every blob,
 *   and drop an entry that fails (chunkcache_drop), then ask the bucket.
 * Every call is best effort and thread safe; a failing cache only costs
 * requests.
 */
#ifndef CAIRN_CHUNKCACHE_H
#define CAIRN_CHUNKCACHE_H

#include <stdint.h>

#include "util.h"

typedef struct chunkcache chunkcache_t;

typedef struct chunkcache_stats {
	uint64_t hits, misses, inserts, evictions;
	uint64_t bytes; /* the size estimate (0 before the first insert sizes it) */
} chunkcache_stats;

/* Opens (creating) <store_dirfd>/cache with a limit of max_bytes.  max_bytes
 * 0 means no cache: *out is NULL and every call below is a no-op on NULL.
 * Returns 0 or a negative errno. */
int chunkcache_open(int store_dirfd, uint64_t max_bytes, chunkcache_t **out);
void chunkcache_close(chunkcache_t *c);

/* Reads d's blob into out (replaced).  0 on a hit, -ENOENT on a miss (or
 * any failure to read: the caller goes to the bucket). */
int chunkcache_get(chunkcache_t *c, const digest_t *d, buf_t *out);
/* Keeps a copy of d's blob (len bytes), evicting old entries as needed. */
void chunkcache_put(chunkcache_t *c, const digest_t *d, const void *blob, size_t len);
/* Forgets d (a blob that failed to decode, or a chunk deleted remotely). */
void chunkcache_drop(chunkcache_t *c, const digest_t *d);
void chunkcache_get_stats(chunkcache_t *c, chunkcache_stats *out);

#endif
