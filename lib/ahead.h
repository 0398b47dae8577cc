/* ahead.h - restore's decode-ahead: the entries of a tree stream, with the
 * chunks they need read, checked and decompressed on worker threads ahead
 * of the writer.
 *
 * The writer (restore) takes entries in stream order with ahead_next and,
 * for the entry it holds, its chunks in order with ahead_chunk (content
 * extents) or ahead_bundle (a bundle slice).  Meanwhile the pool's workers
 * decode the chunks of the following entries, in the same order, within a
 * window: at most `window` plain bytes decoded and not yet released (one
 * chunk is always allowed, so a chunk bigger than the window still goes),
 * and at most AHEAD_MAX_ENTRIES entries read ahead; released buffers are
 * kept for reuse up to another `window` bytes.  Memory therefore does not
 * grow with file size or tree size.
 *
 * Whatever the writer does not take of an entry (it failed half way, or
 * skipped the file) is dropped when it asks for the next entry, so the
 * order stays in step.  Bundles are shared by consecutive entries: one
 * decode serves every entry that names the same bundle, as restore's
 * one-bundle cache did before.
 *
 * Single-threaded use: one writer thread calls every function.
 */
#ifndef CAIRN_AHEAD_H
#define CAIRN_AHEAD_H

#include "snapio.h"

#define AHEAD_MAX_ENTRIES 8192
#define AHEAD_DEFAULT_WINDOW (16u << 20)

typedef struct ahead ahead_t;

/* What the writer wants of an entry, decided when it is read ahead. */
typedef enum {
	AHEAD_SKIP = 0, /* not wanted: never returned */
	AHEAD_META,     /* returned, no chunk decoded for it */
	AHEAD_DATA,     /* returned, its content chunks decoded ahead */
} ahead_want_t;
typedef ahead_want_t (*ahead_filter_fn)(const tree_entry_t *e, void *arg);

/* Reads entries from t (which stays the caller's, open until ahead_close)
 * and decodes their chunks from cs under key k (NULL: plain) on nthreads
 * workers (0 = one per CPU).  window 0 = AHEAD_DEFAULT_WINDOW.  filter is
 * called once per entry, in order.  Returns 0, -ENOMEM or -EAGAIN (no
 * thread could be started). */
int ahead_open(ahead_t **out, chunkstore_t *cs, const crypt_keys_t *k, snaptree_t *t,
	       ahead_filter_fn filter, void *arg, size_t window, int nthreads);

/* The next wanted entry: 1 and *e set (owned by the ahead, valid until the
 * next ahead_next or ahead_close), 0 at the end, <0 the tree stream's
 * error (t->m.failed names its chunk), returned only after every entry
 * before the failure.  Drops what was not taken of the previous entry. */
int ahead_next(ahead_t *a, tree_entry_t **e);

/* The decoded bytes of ref, the next content extent of the current entry
 * (holes skipped).  0 and *out valid until the next call of any ahead
 * function; else the chunk's error (-ENOENT missing, CAIRN_ECORRUPT, ...)
 * or -EPROTO when ref is not the chunk the stream order says comes next. */
int ahead_chunk(ahead_t *a, const chunk_ref_t *ref, const buf_t **out);

/* The decoded bundle ref of the current entry, same rules; an entry naming
 * the bundle of the one before gets the same copy (and the same error). */
int ahead_bundle(ahead_t *a, const chunk_ref_t *ref, const buf_t **out);

/* Waits for the workers, frees everything; NULL is allowed. */
void ahead_close(ahead_t *a);

#endif
