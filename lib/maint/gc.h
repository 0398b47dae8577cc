/* gc.h - the parts of garbage collection that verify and the unit tests
 * share with gc.c: the batched toucher ("marker"), the index walker, the
 * bounded reachability set, snapshot iteration and directory helpers.
 * The public entry points are in cairn.h (the "gc" group).
 */
#ifndef CAIRN_GC_H
#define CAIRN_GC_H

#include <signal.h>

#include "maint/lru.h"
#include "maint/refset.h"
#include "store/store.h"

#define GC_NDIRS 65536
#define GC_IO_THREADS 16

/* Chunk directory (0..65535) of a digest: its first two bytes. */
static inline unsigned gc_dir_of(const digest_t *d)
{
	return (unsigned)d->b[0] << 8 | d->b[1];
}
/* "xxxx", lower-case hex. */
void gc_dir_name(unsigned dir, char out[5]);

/* Name kinds inside a chunk directory. */
enum gc_name_kind {
	GC_NAME_OTHER = 0, /* anything else: left alone (e.g. <digest>.bad) */
	GC_NAME_CHUNK,     /* 64 lower-case hex digits in the right directory */
	GC_NAME_TEMP,      /* <64 hex>.tmp.<pid>.<n>: chunkstore_put's temporary */
	GC_NAME_QUARANTINE /* <64 hex>.gc: a chunk sweep was removing */
};
/* Classifies name found in directory dir; *pid gets a temporary's pid. */
enum gc_name_kind gc_name_kind(const char *name, unsigned dir, int *pid);

/* Directory fds a batch may keep open, from RLIMIT_NOFILE (half of it,
 * leaving the rest to the chunk store's own cache and the catalog). */
unsigned gc_fd_budget(void);

/* ---- the marker: LRU, bounded pending list, sorted flushes ---- */

typedef struct gc_marker gc_marker_t;

/* A referenced chunk that does not exist; owner is what the caller passed
 * with it (gc.c: a snapshot id, or minus a partial receive's id). */
typedef void (*gc_missing_fn)(const digest_t *d, int64_t owner, void *arg);

typedef struct gc_marker_opts {
	int chunkfd;            /* the .chunks directory; stays the caller's */
	cairn_gc_order order;
	size_t batch;           /* pending touches per flush; >= 1 */
	size_t cache_capacity;  /* LRU digests; 0 = no cache */
	unsigned fd_budget;     /* directory fds one flush may hold; 0 = gc_fd_budget() */
	/* Threads that open (and for inode order read) a flush's directories:
	 * these are random metadata reads on a cold cache, so more threads
	 * than cores keep the device busy.  0 = GC_IO_THREADS. */
	int io_threads;
	gc_missing_fn missing;
	void *arg;
} gc_marker_opts_t;

typedef struct gc_mark_stats {
	uint64_t offered;        /* references given to gc_marker_add */
	uint64_t hits, misses;   /* cache answers; without a cache every offer is a miss */
	uint64_t touched;        /* utimensat calls that succeeded */
	uint64_t missing;        /* touches that found no chunk */
	uint64_t flushes;
	uint64_t dirs_opened;    /* directory opens by flushes */
	uint64_t dirs_read;      /* directories read for inode numbers */
	uint64_t path_touches;   /* touches by "xxxx/<hex>" path (no dir fd left) */
	uint64_t restored;       /* quarantined chunks put back */
	size_t memory;           /* bytes the marker allocated */
} gc_mark_stats_t;

int gc_marker_new(const gc_marker_opts_t *o, gc_marker_t **out);
/* Offers n references on behalf of owner.  Each one the cache has seen in
 * this run is skipped; the others are queued, and a full pending list is
 * flushed (sorted, then touched).  Returns 0, or the negative errno of a
 * touch that failed other than with ENOENT: then marking is incomplete
 * and nothing may be swept. */
int gc_marker_add(gc_marker_t *m, const digest_t *d, size_t n, int64_t owner);
/* Touches everything pending.  Same returns. */
int gc_marker_flush(gc_marker_t *m);
/* Each flush touches the chunks of one contiguous part of its sorted list
 * per thread (1 = in the calling thread; the default). */
void gc_marker_set_threads(gc_marker_t *m, int threads);
void gc_marker_stats(const gc_marker_t *m, gc_mark_stats_t *out);
void gc_marker_free(gc_marker_t *m);

/* The straightforward reference the batched path must agree with: one
 * utimensat per chunk, on arrival, by path.  0, -ENOENT, -errno. */
int gc_touch_reference(int chunkfd, const digest_t *d);

/* ---- the index walker ---- */

typedef struct gc_idxwalk gc_idxwalk_t;

/* Receives the records of an index stream in order, a chunk's worth at a
 * time.  Returns 0 to go on, 1 to stop reading this stream, <0 to fail. */
typedef int (*gc_refs_fn)(const chunk_ref_t *refs, size_t n, void *arg);

typedef struct gc_idxwalk_stats {
	uint64_t chunks_read, chunks_skipped, bytes_read, records;
} gc_idxwalk_stats_t;

/* edge_capacity: index chunks whose boundary bytes are remembered, so that
 * a chunk already parsed in this walk (by any stream) is not read again;
 * 0 = read every chunk. */
int gc_idxwalk_new(size_t edge_capacity, gc_idxwalk_t **out);
/* Forgets every remembered chunk. */
void gc_idxwalk_reset(gc_idxwalk_t *w);
/* Before reading a stream, `threads` threads open each of its chunks that
 * will be read (through chunkfd, the .chunks directory, which stays the
 * caller's) and start reading it ahead: on a cold cache the walk then
 * waits for no metadata read.  0 threads = off (the default).  With a
 * chunkfd, a stream chunk found missing is also looked for as a "<hex>.gc"
 * left by a killed sweep, and put back. */
void gc_idxwalk_set_prefetch(gc_idxwalk_t *w, int chunkfd, int threads);
/* Reads the index stream whose packed root refs are roots[0 .. nroots *
 * CHUNK_REF_WIRE).  The records of a chunk this walker parsed before, at
 * the same record alignment, are not delivered again (they were delivered
 * then); records that straddle its boundaries are.  Returns 0, or -ENOENT,
 * CAIRN_ECORRUPT, -EIO... with *failed naming the chunk when reading one
 * failed (failed zeroed when the stream itself is malformed). */
int gc_idxwalk_stream(gc_idxwalk_t *w, chunkstore_t *cs, const uint8_t *roots, size_t nroots,
		      gc_refs_fn fn, void *arg, chunk_ref_t *failed);
void gc_idxwalk_stats(const gc_idxwalk_t *w, gc_idxwalk_stats_t *out);
void gc_idxwalk_free(gc_idxwalk_t *w);

/* Feeds every chunk a tree stream references (extents and bundles) to fn,
 * in tree order, in groups.  For a snapshot whose index cannot be read. */
int gc_tree_refs(chunkstore_t *cs, const buf_t *tree_roots, gc_refs_fn fn, void *arg,
		 chunk_ref_t *failed);

/* ---- a reachability set over a range of directories ----
 * Exact membership for digests in directories [lo, hi), in at most
 * `budget` entries: when the set outgrows the budget, hi moves down and
 * the entries beyond it are dropped.  Callers walk every source, then use
 * the set for [lo, hi), then start again from lo = hi. */
typedef struct gc_range {
	unsigned lo, hi; /* hi is exclusive, up to GC_NDIRS */
	size_t budget;
	refset_t set;
	uint32_t *hist; /* entries per directory, for choosing a new hi */
} gc_range_t;

int gc_range_init(gc_range_t *r, unsigned lo, size_t budget);
/* Adds the refs in [lo, hi).  Returns 1 if some ref lay at or beyond hi
 * (sorted input can stop there), else 0; -ENOMEM. */
int gc_range_add(gc_range_t *r, const chunk_ref_t *refs, size_t n);
void gc_range_free(gc_range_t *r);

/* ---- sources: what keeps chunks alive ---- */

typedef struct gc_source {
	int64_t owner;   /* snapshot id; minus the id of a partial receive */
	char *name;      /* "ds@snap", or "receive into DS" */
	buf_t tree, idx; /* packed root refs (tree is empty for a receive) */
	uint64_t logical; /* logicalreferenced of a snapshot */
} gc_source_t;

typedef struct gc_srciter {
	cairn_store *st;
	/* either every partial receive, then every snapshot by (dataset,
	 * createtxg); or the snapshots listed in ids */
	const int64_t *ids;
	size_t nids, nexti;
	bool with_recv;
	int phase; /* 0 receives, 1 snapshots, 2 done */
	int64_t cur_ds, cur_txg, cur_recv;
	gc_source_t *batch;
	size_t n, next, cap;
} gc_srciter_t;

/* Iterates sources in bounded batches, each batch read in one short read
 * transaction.  ids == NULL: every snapshot (with_recv: first every
 * partial receive; a receive that completes during the walk has then
 * committed its snapshot before the snapshots are read). */
void gc_srciter_init(gc_srciter_t *it, cairn_store *st, const int64_t *ids, size_t nids,
		     bool with_recv);
/* 1 and *out (owned by the iterator, valid until the next call), 0 at the
 * end, <0 on a catalog error (errdetail set). */
int gc_srciter_next(gc_srciter_t *it, gc_source_t **out);
void gc_srciter_free(gc_srciter_t *it);

/* "ds@snap" of a snapshot id (malloc'd), or NULL. */
char *gc_snapshot_name(cairn_store *st, int64_t id);

/* Inode numbers of n items (stride bytes apart, each starting with its
 * digest, sorted by digest, all of directory dirfd): read from the
 * directory's entries into the u64 at ino_off of each item (0 for a name
 * not found). */
int gc_dir_inodes(int dirfd, void *items, size_t stride, size_t n, size_t ino_off);

#endif
