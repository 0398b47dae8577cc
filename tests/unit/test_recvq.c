/* test_recvq.c - recv's ordered chunk verification (lib/repl/recvq.c).
 *
 * 200 CHUNK payloads (digest + blob, as a stream carries them): compressible
 * and random chunks, one whose blob is damaged (index 97), one carrying
 * another chunk's valid blob under its own digest (index 150), one too short
 * to hold a digest (index 180) and one encrypted blob header in a plain
 * stream (index 190).  They go through the queue with 1, 2 and 5 workers,
 * with the default byte bound and with one that holds a single record, and
 * must come back in submission order, each with its own verdict and plain
 * length.  A last pass closes with records in flight.  Leaks and races show
 * under make asan.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/blob.h"
#include "repl/recvq.h"
#include "unit.h"

#define N 200
#define BAD_BLOB 97
#define SWAPPED 150
#define SHORT 180
#define SEALED 190

static buf_t rec[N];
static uint32_t plain_len[N];

static void fill(uint8_t *p, size_t n, uint32_t seed, bool random)
{
	uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = random ? (uint8_t)x : (uint8_t)(i / 64 + seed);
	}
}

static void make_records(void)
{
	static uint8_t plain[70000];
	for (int i = 0; i < N; i++) {
		size_t n = 1000 + (size_t)i * 331;
		fill(plain, n, (uint32_t)i, i % 2);
		digest_t d;
		digest_of(plain, n, &d);
		buf_t blob = {0};
		CHECK_EQ(blob_encode(plain, n, 1, &blob), 0);
		CHECK_EQ(buf_append(&rec[i], d.b, DIGEST_LEN), 0);
		CHECK_EQ(buf_append(&rec[i], blob.data, blob.len), 0);
		buf_free(&blob);
		plain_len[i] = (uint32_t)n;
	}
	rec[BAD_BLOB].data[DIGEST_LEN + BLOB_HEADER_LEN + 5] ^= 0x10;
	/* SWAPPED: the blob of SWAPPED + 1 under SWAPPED's digest */
	rec[SWAPPED].len = DIGEST_LEN;
	CHECK_EQ(buf_append(&rec[SWAPPED], rec[SWAPPED + 1].data + DIGEST_LEN,
			    rec[SWAPPED + 1].len - DIGEST_LEN), 0);
	rec[SHORT].len = 20;
	rec[SEALED].data[DIGEST_LEN + 4] = 2; /* version 2 */
	rec[SEALED].data[DIGEST_LEN + 5] |= BLOB_FLAG_ENCRYPTED;
}

static bool bad(int i)
{
	return i == BAD_BLOB || i == SWAPPED || i == SHORT || i == SEALED;
}

/* The index of a record, from its digest bytes (its identity here). */
static int which(const rchunk_t *k)
{
	for (int i = 0; i < N; i++)
		if (k->rec.len == rec[i].len && !memcmp(k->rec.data, rec[i].data, rec[i].len))
			return i;
	return -1;
}

static void check_verdict(const rchunk_t *k, int want)
{
	CHECK_EQ(which(k), want);
	if (bad(want)) {
		CHECK_EQ(k->err, CAIRN_ECORRUPT);
	} else {
		CHECK_EQ(k->err, 0);
		CHECK_EQ(k->plain_len, plain_len[want]);
	}
}

static void submit(recvq_t *q, int i)
{
	rchunk_t *k = recvq_slot(q);
	CHECK(k != NULL);
	k->rec.len = 0;
	CHECK_EQ(buf_append(&k->rec, rec[i].data, rec[i].len), 0);
	k->offset = (uint64_t)i;
	k->raw = false;
	recvq_submit(q, k);
}

static void pass(int threads, size_t max_bytes)
{
	recvq_t *q;
	CHECK_EQ(recvq_open(&q, threads, max_bytes), 0);
	int next_out = 0;
	for (int i = 0; i < N; i++) {
		while (!recvq_slot(q)) {
			rchunk_t *k = recvq_oldest(q);
			CHECK(k != NULL);
			check_verdict(k, next_out);
			CHECK_EQ(k->offset, next_out);
			next_out++;
			recvq_release(q);
		}
		CHECK(recvq_pending(q) <= RECVQ_SLOTS);
		if (max_bytes == 1)
			CHECK_EQ(recvq_pending(q), 0);
		submit(q, i);
	}
	rchunk_t *k;
	while ((k = recvq_oldest(q))) {
		check_verdict(k, next_out);
		next_out++;
		recvq_release(q);
	}
	CHECK_EQ(next_out, N);
	CHECK_EQ(recvq_pending(q), 0);
	recvq_close(q);
}

int main(void)
{
	make_records();
	/* a raw stream accepts an encrypted blob's structure only when its
	 * checksum holds; a plain one never */
	buf_t scratch = {0};
	uint32_t pl;
	CHECK_EQ(recvq_verify(rec[3].data, rec[3].len, false, &scratch, &pl), 0);
	CHECK_EQ(pl, plain_len[3]);
	CHECK_EQ(recvq_verify(rec[SEALED].data, rec[SEALED].len, false, &scratch, &pl),
		 CAIRN_ECORRUPT);
	buf_free(&scratch);
	for (int t = 1; t <= 5; t += t == 1 ? 1 : 3) {
		pass(t, 0);
		pass(t, 1);
	}
	/* closed with records in flight: no hang, no leak */
	recvq_t *q;
	CHECK_EQ(recvq_open(&q, 2, 0), 0);
	for (int i = 0; i < RECVQ_SLOTS && recvq_slot(q); i++)
		submit(q, i);
	CHECK(recvq_pending(q) > 1);
	recvq_close(q);
	for (int i = 0; i < N; i++)
		buf_free(&rec[i]);
	UNIT_DONE();
}
