/* recvq.c - see recvq.h.  A ring of slots: shead is the oldest queued,
 * scount the number queued; a slot's job is on the pool from recvq_submit
 * until recvq_oldest has waited for it (or run it here). */
#include "repl/recvq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/blob.h"
#include "data/pool.h"

typedef struct slot {
	chunkjob_t j; /* first: the pool hands this back to run_slot */
	rchunk_t c;
	bool finished; /* verified and collected by the reader */
} slot_t;

struct recvq {
	pool_t *pool;
	size_t max_bytes, inflight;
	slot_t slots[RECVQ_SLOTS];
	size_t shead, scount;
};

int recvq_verify(const uint8_t *rec, size_t len, bool raw, buf_t *plain, uint32_t *plain_len)
{
	*plain_len = 0;
	if (len < DIGEST_LEN)
		return CAIRN_ECORRUPT;
	digest_t dg;
	memcpy(dg.b, rec, DIGEST_LEN);
	const uint8_t *blob = rec + DIGEST_LEN;
	len -= DIGEST_LEN;
	/* Raw: structure and ciphertext checksum; the GCM tag and the keyed
	 * name are checked by whoever has the key. */
	if (blob_is_encrypted(blob, len))
		return raw ? blob_check(blob, len, plain_len) : CAIRN_ECORRUPT;
	int r = blob_decode(blob, len, &dg, plain);
	*plain_len = r == 0 ? plain->len : 0;
	return r;
}

static void run_slot(chunkjob_t *j)
{
	slot_t *s = (slot_t *)j;
	buf_t plain = {0};
	s->c.err = recvq_verify(s->c.rec.data, s->c.rec.len, s->c.raw, &plain, &s->c.plain_len);
	/* Only the verdict is kept: the plain bytes go at once, so memory
	 * holds the records in flight and one plain chunk per running job. */
	buf_free(&plain);
}

int recvq_open(recvq_t **out, int nthreads, size_t max_bytes)
{
	recvq_t *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->max_bytes = max_bytes ? max_bytes : RECVQ_DEFAULT_BYTES;
	/* The jobs carry their own run(): the pool's chunk store is unused. */
	q->pool = pool_new(NULL, nthreads);
	if (!q->pool) {
		free(q);
		return -EAGAIN;
	}
	for (size_t i = 0; i < RECVQ_SLOTS; i++)
		q->slots[i].j.run = run_slot;
	*out = q;
	return 0;
}

rchunk_t *recvq_slot(recvq_t *q)
{
	if (q->scount == RECVQ_SLOTS || (q->scount && q->inflight >= q->max_bytes))
		return NULL;
	return &q->slots[(q->shead + q->scount) % RECVQ_SLOTS].c;
}

void recvq_submit(recvq_t *q, rchunk_t *c)
{
	slot_t *s = &q->slots[(q->shead + q->scount) % RECVQ_SLOTS];
	s->finished = false;
	q->scount++;
	q->inflight += c->rec.len;
	pool_submit(q->pool, &s->j);
}

/* Waits for s's job, or runs it here when no worker has taken it: the
 * reader would otherwise sit idle while the workers are busy. */
static void collect(recvq_t *q, slot_t *s)
{
	if (s->finished)
		return;
	if (pool_cancel(q->pool, &s->j))
		run_slot(&s->j);
	else
		pool_wait(q->pool, &s->j);
	s->finished = true;
}

rchunk_t *recvq_oldest(recvq_t *q)
{
	if (!q->scount)
		return NULL;
	slot_t *s = &q->slots[q->shead];
	collect(q, s);
	return &s->c;
}

void recvq_release(recvq_t *q)
{
	if (!q->scount)
		return;
	slot_t *s = &q->slots[q->shead];
	collect(q, s);
	q->inflight -= s->c.rec.len;
	/* Keep the record buffer for the next record unless a big one left
	 * it oversized. */
	if (s->c.rec.cap > RECVQ_KEEP_REC)
		buf_free(&s->c.rec);
	q->shead = (q->shead + 1) % RECVQ_SLOTS;
	q->scount--;
}

size_t recvq_pending(const recvq_t *q)
{
	return q ? q->scount : 0;
}

void recvq_close(recvq_t *q)
{
	if (!q)
		return;
	while (q->scount)
		recvq_release(q);
	pool_free(q->pool);
	for (size_t i = 0; i < RECVQ_SLOTS; i++)
		buf_free(&q->slots[i].c.rec);
	free(q);
}
