/* chunkstore.h - the content-addressed chunk directory of a store.
 *
 * A chunk lives in <chunks>/<first 4 hex digits>/<64 hex digits>, as a blob
 * (blob.h).  Writing is crash safe and batched:
 *   1. put() writes new chunks to temporary files "<hex>.tmp.<pid>.<n>";
 *   2. when the batch is full (or on flush), ONE syncfs() makes the data
 *      durable, then every temporary file is renamed to its final name
 *      (a full batch on a thread of its own, while puts go on);
 *   3. flush() ends with a second syncfs() so the renames are durable too.
 * So a final name never holds an incomplete file, and no fsync is paid
 * per chunk.  A chunk that already exists is not rewritten: put() touches
 * its atime (utimensat UTIME_NOW) so that a running GC sees it in use.
 */
#ifndef CAIRN_CHUNKSTORE_H
#define CAIRN_CHUNKSTORE_H

#include <signal.h>

#include "crypt/crypt.h"
#include "util.h"

typedef struct chunkstore chunkstore_t;

/* Creates <dir> (mode 0700).  Its subdirectories 0000..ffff are made on
 * first use, so an empty store is small; stores that have all of them
 * (made by older versions) work the same. */
int chunkstore_create(const char *dir);

/* Opens the chunk directory.  Subdirectory fds are opened lazily and kept. */
int chunkstore_open(const char *dir, chunkstore_t **out);
/* Closes; pending (unflushed) temporary files are removed, not renamed. */
void chunkstore_close(chunkstore_t *cs);

/* Stores one chunk whose SHA-256 digest the caller computed.  If a chunk
 * of that digest exists (on disk, or pending in this batch), nothing is
 * written: the existing file is touched and *was_new is false.
 * level is the zstd level (0 = off).  *stored_len gets the blob size.
 * Thread safe: several threads may put() at once.
 * Returns 0, -ENOSPC, -EIO, ... */
int chunkstore_put(chunkstore_t *cs, const digest_t *d, const void *data, size_t len,
		   int level, uint32_t *stored_len, bool *was_new);

/* Like chunkstore_put, but stores an already-encoded blob the caller has
 * verified (blob_decode against d): received chunks keep their encoding. */
int chunkstore_put_blob(chunkstore_t *cs, const digest_t *d, const void *blob, size_t len,
			uint32_t *stored_len, bool *was_new);

/* chunkstore_put / chunkstore_get for a dataset under an encryption root:
 * with k not NULL the blob is encrypted with k (blob.h version 2) and d
 * is the keyed id HMAC(id key, plain) the caller computed; get checks the
 * GCM tag and that id.  k NULL: exactly chunkstore_put / chunkstore_get
 * (which gives CAIRN_ENOKEY for an encrypted blob). */
int chunkstore_put_key(chunkstore_t *cs, const crypt_keys_t *k, const digest_t *d,
		       const void *data, size_t len, int level, uint32_t *stored_len,
		       bool *was_new);
int chunkstore_get_key(chunkstore_t *cs, const crypt_keys_t *k, const digest_t *d, buf_t *out);

/* Makes every chunk put so far durable under its final name (see above).
 * Returns 0 or a negative errno; on failure, pending chunks are dropped. */
int chunkstore_flush(chunkstore_t *cs);

/* Reads and decodes a chunk, verifying its digest.  out is replaced.
 * Returns 0, -ENOENT (missing), CAIRN_ECORRUPT (bad blob or digest). */
int chunkstore_get(chunkstore_t *cs, const digest_t *d, buf_t *out);

/* Reads a chunk's raw blob bytes without decoding.  out is replaced. */
int chunkstore_get_raw(chunkstore_t *cs, const digest_t *d, buf_t *out);

/* Whether the calling thread's last read of cs (chunkstore_get,
 * chunkstore_get_key, chunkstore_get_raw) failed in the backend: its
 * error is the bucket's answer (-EACCES: HTTP 403), not a local file's
 * (-EACCES: a file this process may not open). */
bool chunkstore_read_failed_remotely(const chunkstore_t *cs);
/* Whether the calling thread's last read of cs got the blob from the
 * backend itself: not from a local file holding it whole, nor from the
 * chunk cache (a read may end with the blob of either while the bucket
 * has no such object). */
bool chunkstore_read_from_bucket(const chunkstore_t *cs);

/* Touches one chunk's atime; returns 0 or -ENOENT.  A file at the chunk's
 * name that is not a non-empty regular file is damage and counts as
 * missing (-ENOENT): the caller stores the chunk again. */
int chunkstore_touch(chunkstore_t *cs, const digest_t *d);

/* "<name>.gc" is a chunk a sweep renamed aside to remove it (maint/gc.c,
 * point 3), or one a sweep killed mid-removal left behind.  Puts it back
 * under name (relative to dirfd; "<hex>" or "<dir>/<hex>") unless that
 * name exists again, in which case the leftover goes.  Returns 1 if a
 * chunk was put back, 0 if there was nothing to do, <0 on error.  A
 * sweep that finds its "<name>.gc" gone keeps the chunk, so putting it
 * back is as safe as writing the chunk anew. */
int chunk_unquarantine(int dirfd, const char *name);

/* True when the local blob at d is sealed (encrypted).  Always false on a
 * remote store (its local files are markers without a header). */
bool chunkstore_sealed_at(chunkstore_t *cs, const digest_t *d);

/* Renames the chunk at d to <digest>.bad (as verify does with a damaged
 * one), so the next put of d stores it again.  0 or negative errno. */
int chunkstore_set_aside(chunkstore_t *cs, const digest_t *d);

/* Like chunkstore_touch, but changes nothing (recv -n must leave the
 * store as it was, atimes included): 0 when the chunk exists (on disk or
 * pending), -ENOENT when not (also, as for touch, when what is at its
 * name is not a non-empty regular file), another negative errno on
 * error. */
int chunkstore_has(chunkstore_t *cs, const digest_t *d);

/* Makes fallback (not owned, must outlive cs) answer the reads that miss
 * in cs: get, get_key, get_raw, and touch and has, which then only look
 * (chunkstore_has).  Nothing is ever written to or touched in fallback.
 * recv -n reads through a scratch store this way.  NULL: none. */
void chunkstore_set_fallback(chunkstore_t *cs, chunkstore_t *fallback);

/* Returns the fd of subdirectory idx (0..65535), opening (and, on first
 * use, making) it if needed; the
 * fd stays owned by cs.  Negative errno on failure. */
int chunkstore_dirfd(chunkstore_t *cs, unsigned idx);

/* Bytes written (new blobs) and chunks written since open. */
uint64_t chunkstore_new_bytes(const chunkstore_t *cs);
uint64_t chunkstore_new_chunks(const chunkstore_t *cs);

/* Forgets the error of a batch flush that nobody reported yet.  For a
 * caller starting a new writing operation on the handle: that batch's
 * chunks are already out of the pending set, so a later put of them writes
 * them again; the failed operation itself has given up. */
void chunkstore_reset_error(chunkstore_t *cs);

/* If a batch flush failed with err and no call took its description yet,
 * copies what the flush was doing into buf ("publishing chunk <hex>",
 * "syncing a batch of N chunks") and returns true.  For the message of a
 * put or chunkstore_flush that returned err: that put's own chunk is
 * usually not the one at fault.  Another errno (the put's own failure)
 * gets false and leaves the description for the report of err.
 * chunkstore_reset_error() and a chunkstore_flush() that returns 0 forget
 * it. */
bool chunkstore_batch_failure(chunkstore_t *cs, int err, char *buf, size_t len);

/* Count of syncfs() calls made since open (tests check batching). */
uint64_t chunkstore_sync_count(const chunkstore_t *cs);

/* Count of new chunks that became ready while a flush was publishing
 * (tests check that puts and flushes overlapped). */
uint64_t chunkstore_puts_during_flush(const chunkstore_t *cs);

/* The most chunks that were ever waiting for a flush that had not begun
 * (tests check the bound: a batch, plus one chunk per writer). */
uint32_t chunkstore_peak_ready(chunkstore_t *cs);

/* Waits until every batch found full so far is flushed and no flush runs
 * (tests use it to count syncs and files at a known point). */
void chunkstore_wait_flushes(chunkstore_t *cs);

/* Pending-batch limits: flush automatically after this many chunks or
 * bytes (defaults 4096 chunks, 256 MiB).  The put() that fills a batch
 * hands it to the store's flusher thread and returns; a failure of that
 * flush is reported by the next chunkstore_flush(). */
void chunkstore_set_batch(chunkstore_t *cs, uint32_t max_chunks, uint64_t max_bytes);

/* Whether new chunks of 64 KiB or more that chunkstore_put() and
 * chunkstore_put_key() store are written with O_DIRECT (default
 * on; the store setting direct_io).  Off, or on a file system that refuses
 * O_DIRECT, every chunk goes through the page cache. */
void chunkstore_set_direct(chunkstore_t *cs, bool on);

/* ---- remote chunks (backend.h) ----
 *
 * With a backend, blobs live remotely and each local chunk file is a
 * marker: a sparse file of the blob's size holding no data, created only
 * after the backend acknowledged the upload.  Markers are the known-chunk
 * set (dedup and GC marking need no request); get() fetches from the
 * backend.  A batch flush uploads its chunks in parallel instead of
 * syncfs; the temporary file of a chunk is its upload intent (below). */

struct backend;

/* Hands be to cs (closed by chunkstore_close).  lockpath is the intent
 * lock file (created if missing).  Returns 0 or a negative errno. */
int chunkstore_set_backend(chunkstore_t *cs, struct backend *be, const char *lockpath);
/* The backend, or NULL for a local store. */
struct backend *chunkstore_backend(const chunkstore_t *cs);
/* Hands cs the cache of remote blobs it reads through (chunkcache.h; cs
 * closes it).  NULL: no cache. */
struct chunkcache;
void chunkstore_set_cache(chunkstore_t *cs, struct chunkcache *cache);
/* While set, the calling thread's reads of cs skip the cache (verify
 * checks what the bucket holds) and keep nothing in it (a verify would
 * evict the working set).  Only the calling thread's: another thread
 * reading cs meanwhile (a restore beside the verify) still uses the
 * cache, so every thread that reads for the verify sets it itself.  One
 * store per thread at a time: setting it for another store moves it. */
void chunkstore_cache_bypass(chunkstore_t *cs, bool bypass);

typedef struct chunkstore_rsweep {
	uint64_t listed, kept_recent, kept_marker, kept_intent, kept_referenced, removed,
		removed_bytes;
	uint64_t list_requests, delete_requests;
} chunkstore_rsweep;

/* The remote half of GC's sweep; call it after the local sweep removed the
 * markers of unreferenced chunks.  Pages through the bucket's listing and
 * deletes (1000 a request) every object last modified before threshold_ns
 * that has no marker, no writer's temporary file and is not in keep (the
 * nkeep digests, sorted: referenced chunks whose marker mark found gone),
 * re-checking under an exclusive intent lock right before each delete
 * request.  *stop (may be NULL) set by another thread or a signal
 * handler ends it between pages with -EINTR.  0 or an error (backend
 * detail in backend_errmsg). */
int chunkstore_sweep_remote(chunkstore_t *cs, int64_t threshold_ns, const digest_t *keep,
			    size_t nkeep, const volatile sig_atomic_t *stop, chunkstore_rsweep *out);

/* If a backend call failed since the last call, copies the backend's
 * message (object, server answer, retries) into buf and returns true.
 * When the calling thread's own call failed, that failure's message is
 * the one given, even if other threads failed since; otherwise the
 * store's last (a worker's failure, reported by the thread it works for). */
bool chunkstore_remote_error(chunkstore_t *cs, char *buf, size_t len);

/* A remote store's referenced chunk whose marker is gone (a crash, a
 * hand): if the bucket holds d's object, and it decodes to d, its marker
 * is made again (fresh, so GC keeps it).  A sealed blob decodes only under
 * the one of keys[0..nkeys) whose GCM tag opens it (its id is keyed).
 * 0; -ENOENT (no such object, or a local store); -EEXIST (verify set it
 * aside as <hex>.bad); -ENOKEY (sealed, and no key given opens it);
 * CAIRN_ECORRUPT; or a backend error. */
int chunkstore_remark(chunkstore_t *cs, const digest_t *d, crypt_keys_t *const *keys,
		      size_t nkeys);

/* Rebuilds the markers from the bucket listing (import): one marker per
 * object.  *count gets how many.  0 or an error. */
int chunkstore_import_markers(chunkstore_t *cs, uint64_t *count);

/* Further details of the contract above:
 * - chunkstore_create() accepts an existing <dir>, so an interrupted
 *   create can be rerun.  chunkstore_open() returns CAIRN_ENOTSTORE when
 *   <dir> is not a directory.  A missing subdirectory means no chunk of
 *   it exists yet; put() makes it (mkdirat, EEXIST from a racing writer
 *   is fine) and nothing ever removes one.
 * - A chunk pending in the current batch is found by put(), get(),
 *   get_raw() and touch() (get reads its temporary file).
 * - When a batch the flusher thread publishes fails, its chunks are
 *   dropped: every later put() returns the error at once, and the next
 *   chunkstore_flush() returns it and clears it (as does
 *   chunkstore_reset_error()); the puts whose chunks went down with the
 *   batch had returned 0.
 * - set_batch(): 0 for either limit means its default.
 * - Internally, at most a quarter of RLIMIT_NOFILE subdirectory fds are
 *   cached; beyond that (or on EMFILE) paths "xxxx/<hex>" relative to the
 *   store fd are used.  chunkstore_dirfd() always caches (the fd stays
 *   valid until close), so a caller walking all 65536 subdirectories
 *   should rather openat() each one itself and close it when done. */

#endif
