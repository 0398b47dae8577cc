/* test_blob.c - blob round trips and rejection of every kind of damage. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>
#include <zstd.h>

#include "store/blob.h"
#include "unit.h"
#include "util.h"

static uint64_t rng_state = 1;

static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_random(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = rng() >> 56;
}

/* Text-like bytes: compress well but not trivially. */
static void fill_text(uint8_t *p, size_t len)
{
	static const char *words[] = {"cairn ", "chunk ", "store ", "blob ", "digest\n", "zstd "};
	size_t i = 0;
	while (i < len) {
		const char *w = words[rng() % ARRAY_SIZE(words)];
		for (size_t k = 0; w[k] && i < len; k++)
			p[i++] = w[k];
	}
}

/* Rewrites the header checksum after a deliberate edit, so a test reaches
 * the check behind it instead of stopping at the checksum. */
static void fix_checksum(uint8_t *b, size_t len)
{
	put_u64(b + 16, XXH3_64bits(b + BLOB_HEADER_LEN, len - BLOB_HEADER_LEN));
}

static void roundtrip(const uint8_t *plain, size_t len, int level, int want_flags)
{
	buf_t enc = {0}, dec = {0};
	digest_t d;
	digest_of(plain, len, &d);
	CHECK_EQ(blob_encode(plain, len, level, &enc), 0);
	CHECK(enc.len >= BLOB_HEADER_LEN);
	CHECK_EQ(enc.data[5], want_flags);
	if (want_flags)
		CHECK(enc.len - BLOB_HEADER_LEN < len);
	else
		CHECK_EQ(enc.len, BLOB_HEADER_LEN + len);
	uint32_t pl = 12345;
	CHECK_EQ(blob_check(enc.data, enc.len, &pl), 0);
	CHECK_EQ(pl, len);
	CHECK_EQ(blob_check(enc.data, enc.len, NULL), 0);
	CHECK_EQ(blob_decode(enc.data, enc.len, NULL, &dec), 0);
	CHECK_EQ(dec.len, len);
	CHECK(dec.len == len && (len == 0 || !memcmp(dec.data, plain, len)));
	CHECK_EQ(blob_decode(enc.data, enc.len, &d, &dec), 0);
	CHECK(dec.len == len && (len == 0 || !memcmp(dec.data, plain, len)));
	buf_free(&enc);
	buf_free(&dec);
}

static void test_roundtrips(void)
{
	const size_t big = CHUNK_MAX_PLAIN;
	uint8_t *p = calloc(1, big);
	static const int levels[] = {1, 3, 19};

	roundtrip(p, 0, 0, 0);
	roundtrip(p, 0, 3, 0);
	p[0] = 'x';
	roundtrip(p, 1, 0, 0);
	roundtrip(p, 1, 3, 0);
	fill_text(p, 100000);
	roundtrip(p, 100000, 0, 0);
	for (size_t i = 0; i < ARRAY_SIZE(levels); i++)
		roundtrip(p, 100000, levels[i], BLOB_FLAG_ZSTD);
	fill_random(p, 100000);
	for (size_t i = 0; i < ARRAY_SIZE(levels); i++)
		roundtrip(p, 100000, levels[i], 0);
	/* The largest chunk: random half then text half, both at once. */
	fill_random(p, big / 2);
	fill_text(p + big / 2, big - big / 2);
	roundtrip(p, big, 0, 0);
	roundtrip(p, big, 1, BLOB_FLAG_ZSTD);
	fill_random(p, big);
	roundtrip(p, big, 1, 0);
	free(p);
}

static void test_encode_args(void)
{
	buf_t enc = {0};
	uint8_t x[4] = {0};
	/* The length is checked before the (short) input is read. */
	CHECK_EQ(blob_encode(x, CHUNK_MAX_PLAIN + 1, 0, &enc), -EINVAL);
	CHECK_EQ(blob_encode(x, sizeof(x), -1, &enc), -EINVAL);
	CHECK_EQ(blob_encode(x, sizeof(x), 20, &enc), -EINVAL);
	/* Encoding replaces, never appends. */
	buf_append(&enc, "junk", 4);
	CHECK_EQ(blob_encode(x, sizeof(x), 0, &enc), 0);
	CHECK_EQ(enc.len, BLOB_HEADER_LEN + sizeof(x));
	CHECK(!memcmp(enc.data, "CRNB", 4));
	buf_free(&enc);
}

/* Every single-bit flip anywhere must be caught by the header and checksum
 * alone (expect == NULL), not only by the digest. */
static void flips_detected(const uint8_t *plain, size_t len, int level)
{
	buf_t enc = {0}, dec = {0};
	CHECK_EQ(blob_encode(plain, len, level, &enc), 0);
	uint8_t *b = malloc(enc.len);
	size_t missed = 0;
	for (size_t bit = 0; bit < enc.len * 8; bit++) {
		memcpy(b, enc.data, enc.len);
		b[bit / 8] ^= 1u << (bit % 8);
		if (blob_check(b, enc.len, NULL) != CAIRN_ECORRUPT)
			missed++;
		if (blob_decode(b, enc.len, NULL, &dec) != CAIRN_ECORRUPT || dec.len)
			missed++;
	}
	CHECK_EQ(missed, 0);
	free(b);
	buf_free(&enc);
	buf_free(&dec);
}

static void test_bit_flips(void)
{
	uint8_t p[300];
	fill_text(p, sizeof(p));
	flips_detected(p, sizeof(p), 3);
	flips_detected(p, sizeof(p), 0);
	flips_detected(p, 1, 0);
	flips_detected(p, 0, 0);
}

static void test_truncation(void)
{
	uint8_t p[2000];
	fill_text(p, sizeof(p));
	for (int level = 0; level <= 3; level += 3) {
		buf_t enc = {0}, dec = {0};
		CHECK_EQ(blob_encode(p, sizeof(p), level, &enc), 0);
		size_t missed = 0;
		for (size_t n = 0; n < enc.len; n++) {
			/* A fresh copy of exactly n bytes, so ASan sees any overread. */
			uint8_t *t = malloc(n ? n : 1);
			memcpy(t, enc.data, n);
			if (blob_check(t, n, NULL) != CAIRN_ECORRUPT)
				missed++;
			if (blob_decode(t, n, NULL, &dec) != CAIRN_ECORRUPT)
				missed++;
			free(t);
		}
		CHECK_EQ(missed, 0);
		/* Trailing garbage is as wrong as a missing tail. */
		buf_append(&enc, "", 1);
		CHECK_EQ(blob_check(enc.data, enc.len, NULL), CAIRN_ECORRUPT);
		CHECK_EQ(blob_decode(enc.data, enc.len, NULL, &dec), CAIRN_ECORRUPT);
		buf_free(&enc);
		buf_free(&dec);
	}
}

static void test_wrong_digest(void)
{
	uint8_t p[1000];
	fill_text(p, sizeof(p));
	buf_t enc = {0}, dec = {0};
	digest_t d;
	digest_of(p, sizeof(p), &d);
	d.b[31] ^= 1;
	for (int level = 0; level <= 3; level += 3) {
		CHECK_EQ(blob_encode(p, sizeof(p), level, &enc), 0);
		CHECK_EQ(blob_decode(enc.data, enc.len, &d, &dec), CAIRN_ECORRUPT);
		CHECK_EQ(dec.len, 0);
	}
	buf_free(&enc);
	buf_free(&dec);
}

/* A header with a consistent checksum but a huge plain length. */
static void test_oversized_plain(void)
{
	static const uint32_t lens[] = {CHUNK_MAX_PLAIN + 1, UINT32_MAX};
	uint8_t p[64];
	fill_text(p, sizeof(p));
	for (int level = 0; level <= 3; level += 3) {
		for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
			buf_t enc = {0}, dec = {0};
			blob_encode(p, sizeof(p), level, &enc);
			put_u32(enc.data + 8, lens[i]);
			fix_checksum(enc.data, enc.len);
			CHECK_EQ(blob_check(enc.data, enc.len, NULL), CAIRN_ECORRUPT);
			CHECK_EQ(blob_decode(enc.data, enc.len, NULL, &dec), CAIRN_ECORRUPT);
			CHECK(dec.data == NULL && dec.cap == 0);
			buf_free(&enc);
		}
	}
}

/* Compressed blob whose frame says nothing about its size (other writers
 * may omit it): accepted when the header is right, refused otherwise. */
static void test_frame_without_size(void)
{
	uint8_t p[4000];
	fill_text(p, sizeof(p));
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
	uint8_t frame[4096];
	size_t n = ZSTD_compress2(c, frame, sizeof(frame), p, sizeof(p));
	ZSTD_freeCCtx(c);
	CHECK(!ZSTD_isError(n));
	CHECK_EQ(ZSTD_getFrameContentSize(frame, n), ZSTD_CONTENTSIZE_UNKNOWN);

	static const int64_t deltas[] = {0, -1, 1, 1000};
	for (size_t i = 0; i < ARRAY_SIZE(deltas); i++) {
		uint8_t b[BLOB_HEADER_LEN + 4096];
		memcpy(b, "CRNB\x01\x01\0\0", 8);
		put_u32(b + 8, sizeof(p) + deltas[i]);
		put_u32(b + 12, n);
		memcpy(b + BLOB_HEADER_LEN, frame, n);
		fix_checksum(b, BLOB_HEADER_LEN + n);
		buf_t dec = {0};
		int want = deltas[i] ? CAIRN_ECORRUPT : 0;
		CHECK_EQ(blob_check(b, BLOB_HEADER_LEN + n, NULL), 0);
		CHECK_EQ(blob_decode(b, BLOB_HEADER_LEN + n, NULL, &dec), want);
		/* Never more room than the header asked for. */
		CHECK(dec.cap <= sizeof(p) + deltas[i]);
		if (!want)
			CHECK(dec.len == sizeof(p) && !memcmp(dec.data, p, sizeof(p)));
		buf_free(&dec);
	}
}

/* Hand-made headers a correct writer never produces, checksum kept valid. */
static void test_malformed_headers(void)
{
	uint8_t p[500];
	fill_text(p, sizeof(p));
	buf_t z = {0}, s = {0}, dec = {0};
	blob_encode(p, sizeof(p), 3, &z);
	blob_encode(p, sizeof(p), 0, &s);
	struct {
		buf_t *src;
		size_t off;
		uint8_t val;
	} edits[] = {
		{&z, 4, 2}, {&z, 4, 0}, {&z, 5, 3},	 {&z, 5, 0x80}, {&z, 6, 1},
		{&z, 7, 1}, {&s, 5, 1}, {&z, 5, 0} /* compressed bytes said to be plain */,
		{&z, BLOB_HEADER_LEN, 0}, /* zstd magic broken */
	};
	for (size_t i = 0; i < ARRAY_SIZE(edits); i++) {
		buf_t *e = edits[i].src;
		uint8_t *b = malloc(e->len);
		memcpy(b, e->data, e->len);
		b[edits[i].off] = edits[i].val;
		fix_checksum(b, e->len);
		CHECK_EQ(blob_check(b, e->len, NULL), CAIRN_ECORRUPT);
		CHECK_EQ(blob_decode(b, e->len, NULL, &dec), CAIRN_ECORRUPT);
		free(b);
	}
	/* A compressed payload not smaller than the plain bytes. */
	uint8_t b[BLOB_HEADER_LEN + 600];
	memcpy(b, z.data, z.len);
	put_u32(b + 8, z.len - BLOB_HEADER_LEN);
	fix_checksum(b, z.len);
	CHECK_EQ(blob_check(b, z.len, NULL), CAIRN_ECORRUPT);
	buf_free(&z);
	buf_free(&s);
	buf_free(&dec);
}

static void *thread_main(void *arg)
{
	uint8_t p[5000];
	memset(p, (int)(intptr_t)arg, sizeof(p));
	buf_t enc = {0}, dec = {0};
	intptr_t bad = 0;
	for (int i = 0; i < 50; i++) {
		bad += blob_encode(p, sizeof(p), 1 + i % 5, &enc) != 0;
		bad += blob_decode(enc.data, enc.len, NULL, &dec) != 0;
		bad += dec.len != sizeof(p) || memcmp(dec.data, p, sizeof(p));
	}
	buf_free(&enc);
	buf_free(&dec);
	return (void *)bad;
}

/* Per-thread contexts: no sharing, and (under ASan) no leak at thread exit. */
static void test_threads(void)
{
	pthread_t t[4];
	for (intptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < 4; i++) {
		void *bad;
		pthread_join(t[i], &bad);
		CHECK_EQ((intptr_t)bad, 0);
	}
}

int main(void)
{
	test_roundtrips();
	test_encode_args();
	test_bit_flips();
	test_truncation();
	test_wrong_digest();
	test_oversized_plain();
	test_frame_without_size();
	test_malformed_headers();
	test_threads();
	UNIT_DONE();
}
