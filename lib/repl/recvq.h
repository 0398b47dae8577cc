/* recvq.h - recv's chunk verification on worker threads, in stream order.
 *
 * recv reads CHUNK records on one thread; checking a chunk (its blob's
 * header and checksum, zstd decompression, the SHA-256 of the plain
 * bytes against the digest the record names) is the bulk of a receive's
 * CPU, and chunks do not depend on each other.  So each CHUNK record's
 * payload is handed to the pool (pool.h) and the reader goes on; the
 * results are taken back strictly in submission order, so whatever recv
 * does with a verified chunk (store it, count it, checkpoint) happens in
 * stream order exactly as before, and the first bad chunk in the stream
 * is the one reported.
 *
 * Bounded: at most RECVQ_SLOTS records and about max_bytes of record
 * payload in flight (one record is always allowed), plus one plain chunk
 * per running check; a released slot keeps its record buffer for reuse
 * only up to RECVQ_KEEP_REC bytes.
 *
 * Single-threaded use: one thread calls every function.
 */
#ifndef CAIRN_RECVQ_H
#define CAIRN_RECVQ_H

#include "util.h"

#define RECVQ_SLOTS 16
#define RECVQ_DEFAULT_BYTES (16u << 20)
#define RECVQ_KEEP_REC (4u << 20)

typedef struct recvq recvq_t;

/* One CHUNK record: digest[32] then the blob. */
typedef struct rchunk {
	buf_t rec;        /* the record's payload; the slot owns the buffer */
	uint64_t offset;  /* stream bytes read when the record was taken */
	bool raw;         /* an encrypted blob is acceptable (raw stream) */
	/* results, valid once recvq_oldest returned the slot */
	int err;           /* 0 or CAIRN_ECORRUPT (or -ENOMEM) */
	uint32_t plain_len; /* the chunk's plain length */
} rchunk_t;

/* nthreads workers (0 = one per CPU); max_bytes 0 = RECVQ_DEFAULT_BYTES.
 * Returns 0, -ENOMEM or -EAGAIN (no thread could be started). */
int recvq_open(recvq_t **out, int nthreads, size_t max_bytes);

/* A free slot to fill (rec, offset, raw) and pass to recvq_submit, or NULL
 * when the queue is full: take the oldest first. */
rchunk_t *recvq_slot(recvq_t *q);

/* Queues the slot recvq_slot returned for verification. */
void recvq_submit(recvq_t *q, rchunk_t *c);

/* The oldest submitted record, verified (by this thread when no worker
 * has started it yet), or NULL when none is queued.  Stays valid, and
 * stays the oldest, until recvq_release. */
rchunk_t *recvq_oldest(recvq_t *q);

/* Frees the oldest slot for reuse. */
void recvq_release(recvq_t *q);

/* Records submitted and not yet released. */
size_t recvq_pending(const recvq_t *q);

/* Waits for the workers (results are dropped) and frees everything;
 * NULL is allowed. */
void recvq_close(recvq_t *q);

/* The check itself, as a worker runs it: 0 or CAIRN_ECORRUPT, and the
 * plain length.  plain is scratch space (replaced). */
int recvq_verify(const uint8_t *rec, size_t len, bool raw, buf_t *plain, uint32_t *plain_len);

#endif
