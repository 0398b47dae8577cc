/* util.h - small shared types and helpers used by every libcairn module.
 *
 * Nothing here knows about stores or catalogs: digests, chunk references,
 * a growable byte buffer, little-endian packing and a few syscall wrappers.
 */
#ifndef CAIRN_UTIL_H
#define CAIRN_UTIL_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cairn.h"

#define DIGEST_LEN 32
#define DIGEST_HEX_LEN 64

/* Stop flags (gc's, send's, recv's): set by a signal handler or another
 * thread, read by the working threads and by callees given a pointer
 * (volatile int *: the stream writer and reader, the catalog's writer
 * wait, the chunk sweep, S3 retries).  A handler may run on any thread
 * with the signal unblocked (an application's own), where volatile alone
 * is a data race, so every access is a relaxed __atomic builtin:
 * lock-free (asserted), hence async-signal safe; nothing is published
 * through a flag, so no ordering is needed.  volatile sig_atomic_t is int
 * here (asserted), so a flag's address fits those volatile int *. */
typedef volatile sig_atomic_t stop_flag_t;
_Static_assert(_Generic((sig_atomic_t)0, int: 1, default: 0),
	       "stop flags are passed where a volatile int * is expected");
_Static_assert(__atomic_always_lock_free(sizeof(sig_atomic_t), 0),
	       "a signal handler's store to a stop flag must be lock-free");
#define STOP_FLAG_GET(f) __atomic_load_n(&(f), __ATOMIC_RELAXED)
#define STOP_FLAG_SET(f, v) __atomic_store_n(&(f), (v), __ATOMIC_RELAXED)

/* SHA-256 of a chunk's plain bytes: the chunk's name everywhere. */
typedef struct digest {
	uint8_t b[DIGEST_LEN];
} digest_t;

/* A reference to one stored chunk.  stored_len is the size of the blob file
 * (header included), so "stored bytes" statistics never have to stat. */
typedef struct chunk_ref {
	digest_t digest;
	uint32_t plain_len;
	uint32_t stored_len;
} chunk_ref_t;

/* Serialized size of a chunk_ref_t: digest, plain_len, stored_len (LE). */
#define CHUNK_REF_WIRE 40

/* Largest plain chunk any path may create or accept (4 x the largest
 * average chunk size).  Parsers reject anything bigger before allocating. */
#define CHUNK_MAX_PLAIN (32u << 20)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Automatic cleanup helpers for __attribute__((cleanup)). */
void util_freep(void *pp);
void util_closep(int *fd);
#define _cleanup_free_ __attribute__((cleanup(util_freep)))
#define _cleanup_close_ __attribute__((cleanup(util_closep)))

/* ---- digests ---- */
void digest_of(const void *data, size_t len, digest_t *out); /* SHA-256 */
void digest_to_hex(const digest_t *d, char out[DIGEST_HEX_LEN + 1]);
/* Returns 0, or -EINVAL unless hex is exactly 64 lower-case hex digits. */
int digest_from_hex(const char *hex, digest_t *out);
static inline int digest_cmp(const digest_t *a, const digest_t *b)
{
	return memcmp(a->b, b->b, DIGEST_LEN);
}

/* digest_cmp for qsort and bsearch over arrays of digest_t. */
static inline int digest_cmp_void(const void *a, const void *b)
{
	return digest_cmp(a, b);
}

/* ---- little-endian packing ---- */
static inline void put_u16(uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static inline void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++) p[i] = v >> (8 * i);
}
static inline void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++) p[i] = v >> (8 * i);
}
static inline uint16_t get_u16(const uint8_t *p) { return p[0] | (uint16_t)p[1] << 8; }
static inline uint32_t get_u32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
	return v;
}
static inline uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
	return v;
}
void chunk_ref_pack(const chunk_ref_t *r, uint8_t out[CHUNK_REF_WIRE]);
void chunk_ref_unpack(const uint8_t in[CHUNK_REF_WIRE], chunk_ref_t *r);

/* ---- growable arrays ---- */
/* Makes room for `need` elements of `elem` bytes in the array *arr whose
 * capacity is *cap (both updated), doubling: appending one row at a time
 * stays linear (and does not copy the array on every row, which the
 * sanitizer build's realloc always does).  0 or -ENOMEM (*arr unchanged). */
int array_reserve(void *arr, size_t *cap, size_t need, size_t elem);

/* ---- growable byte buffer ---- */
typedef struct buf {
	uint8_t *data;
	size_t len;
	size_t cap;
} buf_t;

/* All return 0 or -ENOMEM.  buf_free leaves an empty, reusable buffer. */
int buf_reserve(buf_t *b, size_t extra);
int buf_append(buf_t *b, const void *data, size_t len);
int buf_put_u8(buf_t *b, uint8_t v);
int buf_put_u16(buf_t *b, uint16_t v);
int buf_put_u32(buf_t *b, uint32_t v);
int buf_put_u64(buf_t *b, uint64_t v);
/* Drops the first n bytes (n <= len). */
void buf_consume(buf_t *b, size_t n);
void buf_free(buf_t *b);

/* ---- syscalls ---- */
/* Reads exactly len bytes unless EOF comes first; returns bytes read or -errno. */
ssize_t read_full(int fd, void *buf, size_t len);
ssize_t pread_full(int fd, void *buf, size_t len, off_t off);
/* Writes all of buf; returns 0 or -errno. */
int write_full(int fd, const void *buf, size_t len);
int pwrite_full(int fd, const void *buf, size_t len, off_t off);
/* renameat(2) within dirfd that never replaces: -EEXIST when to exists.
 * Where RENAME_NOREPLACE is not supported, link(2) and unlink(2) do it. */
int rename_noreplace(int dirfd, const char *from, const char *to);

int64_t now_ns(void);      /* CLOCK_REALTIME in ns */
int64_t mono_ns(void);     /* CLOCK_MONOTONIC in ns */
uint64_t random_u64(void); /* from getrandom(); never 0 */

/* A share of the descriptor limit for a cache of open fds: the soft
 * RLIMIT_NOFILE divided by divisor, kept within [lo, hi] (hi when there is
 * no limit). */
unsigned fd_limit_share(unsigned divisor, unsigned lo, unsigned hi);

/* SIGINT, SIGTERM and SIGHUP stop a command: its handler (gc's flag,
 * recv's wake-up pipe) is written for the thread that called into the
 * library, whose blocking calls the signal must interrupt.  Threads the
 * library starts, its own and those libcurl starts for name lookups, are
 * created with the three blocked so that they never take them.
 * stop_signals_block blocks them in the calling thread and saves the old
 * mask; stop_signals_restore puts it back (pending signals are delivered
 * then). */
void stop_signals_block(sigset_t *old);
void stop_signals_restore(const sigset_t *old);
/* pthread_create with the stop signals blocked in the new thread.
 * Returns 0 or pthread_create's error. */
int thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

/* Start time of a process in clock ticks since boot (field 22 of
 * /proc/PID/stat), or 0 when the process does not exist. */
uint64_t process_start_time(int pid);

/* FNV-1a 64-bit of a string: cheap, stable, not cryptographic. */
uint64_t fnv1a64(const void *data, size_t len);

#endif

/* Whether s is well-formed UTF-8 (no overlong forms, surrogates or code
 * points above U+10FFFF); if not, *bad_at is the offset of the first bad
 * byte. */
bool utf8_valid(const char *s, size_t *bad_at);

/* ---- store files ---- */
/* Opens dirfd/path, which must be a regular file: O_NOFOLLOW and O_NONBLOCK
 * keep a symlink, FIFO or device planted in the store from redirecting or
 * hanging the caller, and fstat refuses anything else.  flags are added
 * (O_RDONLY, O_RDWR...).  Returns the fd, -errno (-ENOENT...), or
 * CAIRN_ECORRUPT when the path is a symlink or not a regular file. */
int open_regular(int dirfd, const char *path, int flags);

/* Tries to take an open-file-description lock (F_OFD_SETLK) of type
 * F_RDLCK or F_WRLCK on the whole of fd, without waiting.  The kernel drops
 * it when the last descriptor of that open file goes, including at death.
 * Returns 0, -EAGAIN when another open file holds a conflicting lock, or
 * -errno. */
int lock_try(int fd, short type);
