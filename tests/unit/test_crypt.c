/* test_crypt.c - key wrapping, keyed ids, encrypted blobs, seeded chunker. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "store/blob.h"
#include "data/chunker.h"
#include "crypt/crypt.h"
#include "unit.h"
#include "util.h"

static const uint8_t pass[] = "correct horse battery staple";
static const uint8_t wrong[] = "correct horse battery stapler";

static void fill_text(uint8_t *p, size_t len, unsigned seed)
{
	static const char *words[] = {"cairn ", "chunk ", "store ", "blob ", "secret\n"};
	size_t i = 0;
	while (i < len) {
		seed = seed * 1103515245u + 12345u;
		const char *w = words[(seed >> 16) % 5];
		for (size_t k = 0; w[k] && i < len; k++)
			p[i++] = w[k];
	}
}

/* The version 2 checksum, recomputed after a deliberate edit. */
static void fix_sum(uint8_t *b, size_t len)
{
	uint64_t seed = XXH3_64bits(b, 16);
	put_u64(b + 16, XXH3_64bits_withSeed(b + BLOB_HEADER_LEN, len - BLOB_HEADER_LEN, seed));
}

static bool keys_equal(const crypt_keys_t *a, const crypt_keys_t *b)
{
	return !memcmp(a->data, b->data, CRYPT_KEY_LEN) && !memcmp(a->id, b->id, CRYPT_KEY_LEN) &&
	       !memcmp(a->seed, b->seed, CRYPT_KEY_LEN) &&
	       !memcmp(a->keyid, b->keyid, CRYPT_KEYID_LEN) &&
	       !memcmp(a->gear, b->gear, sizeof(a->gear));
}

static void test_secret_parse(void)
{
	uint8_t out[CRYPT_PASSPHRASE_MAX];
	size_t n;
	const char *why = NULL;
	CHECK_EQ(crypt_secret_parse(CRYPT_KEYFORMAT_PASSPHRASE, (const uint8_t *)"short", 5, out,
				    &n, &why),
		 CAIRN_EBADPROP);
	CHECK(why != NULL);
	CHECK_EQ(crypt_secret_parse(CRYPT_KEYFORMAT_PASSPHRASE, (const uint8_t *)"longenough\n", 11,
				    out, &n, &why),
		 0);
	CHECK_EQ(n, 10);
	const char *hex = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF\n";
	CHECK_EQ(crypt_secret_parse(CRYPT_KEYFORMAT_HEX, (const uint8_t *)hex, strlen(hex), out, &n,
				    &why),
		 0);
	CHECK_EQ(n, 32);
	CHECK(out[1] == 0x11 && out[31] == 0xff);
	CHECK_EQ(crypt_secret_parse(CRYPT_KEYFORMAT_HEX, (const uint8_t *)"0g", 2, out, &n, &why),
		 CAIRN_EBADPROP);
	uint8_t raw[33] = {0};
	CHECK_EQ(crypt_secret_parse(CRYPT_KEYFORMAT_RAW, raw, 32, out, &n, &why), 0);
	CHECK_EQ(crypt_secret_parse(CRYPT_KEYFORMAT_RAW, raw, 33, out, &n, &why), CAIRN_EBADPROP);
	CHECK_EQ(crypt_keyformat_parse("passphrase"), CRYPT_KEYFORMAT_PASSPHRASE);
	CHECK_EQ(crypt_keyformat_parse("hex"), CRYPT_KEYFORMAT_HEX);
	CHECK_EQ(crypt_keyformat_parse("raw"), CRYPT_KEYFORMAT_RAW);
	CHECK_EQ(crypt_keyformat_parse("rot13"), CAIRN_EBADPROP);
}

static void test_wrap(void)
{
	crypt_keys_t *k = NULL, *u = NULL;
	CHECK_EQ(crypt_keys_generate(&k), 0);
	uint8_t blob[CRYPT_KEYBLOB_LEN], blob2[CRYPT_KEYBLOB_LEN];
	CHECK_EQ(crypt_wrap(k, CRYPT_KEYFORMAT_PASSPHRASE, pass, sizeof(pass) - 1, blob), 0);
	int fmt = 0;
	uint8_t kid[CRYPT_KEYID_LEN];
	CHECK_EQ(crypt_keyblob_check(blob, sizeof(blob), &fmt, kid), 0);
	CHECK_EQ(fmt, CRYPT_KEYFORMAT_PASSPHRASE);
	CHECK(!memcmp(kid, k->keyid, CRYPT_KEYID_LEN));
	/* The master keys never appear in the blob. */
	CHECK(!memmem(blob, sizeof(blob), k->data, 8) && !memmem(blob, sizeof(blob), k->id, 8));

	CHECK_EQ(crypt_unwrap(blob, sizeof(blob), pass, sizeof(pass) - 1, &u), 0);
	CHECK(u && keys_equal(k, u));
	crypt_keys_free(u);
	CHECK_EQ(crypt_unwrap(blob, sizeof(blob), wrong, sizeof(wrong) - 1, &u), CAIRN_EBADKEY);
	CHECK(u == NULL);

	/* Rewrapping (change-key) keeps the key material and its id. */
	CHECK_EQ(crypt_wrap(k, CRYPT_KEYFORMAT_PASSPHRASE, wrong, sizeof(wrong) - 1, blob2), 0);
	CHECK(memcmp(blob, blob2, sizeof(blob)) != 0);
	CHECK_EQ(crypt_unwrap(blob2, sizeof(blob2), wrong, sizeof(wrong) - 1, &u), 0);
	CHECK(u && keys_equal(k, u));
	crypt_keys_free(u);

	/* Any flipped bit: header edits and ciphertext/tag edits alike fail
	 * as "incorrect key" or as a malformed blob, never unwrap. */
	size_t bad = 0;
	for (size_t bit = 0; bit < sizeof(blob) * 8; bit++) {
		uint8_t t[CRYPT_KEYBLOB_LEN];
		memcpy(t, blob, sizeof(t));
		t[bit / 8] ^= 1u << (bit % 8);
		/* Only check the cheap cases with scrypt every 97th bit. */
		if (bit / 8 >= 16 && bit % 97)
			continue;
		int r = crypt_unwrap(t, sizeof(t), pass, sizeof(pass) - 1, &u);
		if (r != CAIRN_EBADKEY && r != CAIRN_ECORRUPT)
			bad++;
		crypt_keys_free(u);
		u = NULL;
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(crypt_unwrap(blob, sizeof(blob) - 1, pass, sizeof(pass) - 1, &u), CAIRN_ECORRUPT);

	/* KDF cost from the blob: memory (128 r N) and work (N r p) bounded,
	 * so a hostile blob cannot make one attempt take a minute. */
	struct {
		uint8_t logn;
		uint32_t r, p;
		int want;
	} cost[] = {{20, 8, 1, 0}, {17, 8, 8, 0}, {19, 16, 16, CAIRN_ECORRUPT},
		    {17, 8, 9, CAIRN_ECORRUPT}, {20, 16, 1, CAIRN_ECORRUPT}};
	for (size_t i = 0; i < sizeof(cost) / sizeof(cost[0]); i++) {
		uint8_t t[CRYPT_KEYBLOB_LEN];
		memcpy(t, blob, sizeof(t));
		t[7] = cost[i].logn;
		memcpy(t + 8, (uint8_t[4]){cost[i].r, 0, 0, 0}, 4);
		memcpy(t + 12, (uint8_t[4]){cost[i].p, 0, 0, 0}, 4);
		CHECK_EQ(crypt_keyblob_check(t, sizeof(t), NULL, NULL), cost[i].want);
	}

	/* hex/raw: the 32 bytes are the wrapping key; a tampered nonce,
	 * tag or key id fails; all cheap without a KDF, so every bit. */
	uint8_t rk[32];
	memset(rk, 7, sizeof(rk));
	CHECK_EQ(crypt_wrap(k, CRYPT_KEYFORMAT_RAW, rk, sizeof(rk), blob), 0);
	CHECK_EQ(crypt_unwrap(blob, sizeof(blob), rk, sizeof(rk), &u), 0);
	CHECK(u && keys_equal(k, u));
	crypt_keys_free(u);
	bad = 0;
	for (size_t bit = 0; bit < sizeof(blob) * 8; bit++) {
		uint8_t t[CRYPT_KEYBLOB_LEN];
		memcpy(t, blob, sizeof(t));
		t[bit / 8] ^= 1u << (bit % 8);
		int r = crypt_unwrap(t, sizeof(t), rk, sizeof(rk), &u);
		if (r != CAIRN_EBADKEY && r != CAIRN_ECORRUPT)
			bad++;
		crypt_keys_free(u);
		u = NULL;
	}
	CHECK_EQ(bad, 0);
	rk[0] ^= 1;
	CHECK_EQ(crypt_unwrap(blob, sizeof(blob), rk, sizeof(rk), &u), CAIRN_EBADKEY);
	crypt_keys_free(k);
}

static void test_chunk_ids(void)
{
	crypt_keys_t *a, *b;
	CHECK_EQ(crypt_keys_generate(&a), 0);
	CHECK_EQ(crypt_keys_generate(&b), 0);
	uint8_t p[5000];
	fill_text(p, sizeof(p), 1);
	digest_t da, da2, db, plain;
	CHECK_EQ(crypt_chunk_id(a, p, sizeof(p), &da), 0);
	CHECK_EQ(crypt_chunk_id(a, p, sizeof(p), &da2), 0);
	CHECK_EQ(crypt_chunk_id(b, p, sizeof(p), &db), 0);
	digest_of(p, sizeof(p), &plain);
	CHECK(!digest_cmp(&da, &da2));
	CHECK(digest_cmp(&da, &db) != 0);
	CHECK(digest_cmp(&da, &plain) != 0);
	/* Different roots, different gear tables; the fixed table is unused. */
	CHECK(memcmp(a->gear, b->gear, sizeof(a->gear)) != 0);
	crypt_keys_free(a);
	crypt_keys_free(b);
}

static void sealed_roundtrip(const crypt_keys_t *k, const uint8_t *p, size_t len, int level)
{
	buf_t enc = {0}, dec = {0};
	digest_t id;
	CHECK_EQ(crypt_chunk_id(k, p, len, &id), 0);
	CHECK_EQ(blob_encode_sealed(k, p, len, level, &enc), 0);
	CHECK(blob_is_encrypted(enc.data, enc.len));
	uint32_t pl = 0;
	CHECK_EQ(blob_check(enc.data, enc.len, &pl), 0);
	CHECK_EQ(pl, len);
	CHECK_EQ(blob_decode_key(k, enc.data, enc.len, &id, &dec), 0);
	CHECK(dec.len == len && (!len || !memcmp(dec.data, p, len)));
	/* Without the key: refused as such, not as damage. */
	CHECK_EQ(blob_decode(enc.data, enc.len, NULL, &dec), CAIRN_ENOKEY);
	/* The plaintext is nowhere in the blob. */
	if (len >= 16)
		CHECK(!memmem(enc.data, enc.len, p, 16));
	buf_free(&enc);
	buf_free(&dec);
}

static void test_sealed_blobs(void)
{
	crypt_keys_t *k, *other;
	CHECK_EQ(crypt_keys_generate(&k), 0);
	CHECK_EQ(crypt_keys_generate(&other), 0);
	size_t big = 1u << 20;
	uint8_t *p = malloc(big);
	fill_text(p, big, 2);
	sealed_roundtrip(k, p, 0, 0);
	sealed_roundtrip(k, p, 1, 3);
	sealed_roundtrip(k, p, 100000, 0);
	sealed_roundtrip(k, p, 100000, 3);
	sealed_roundtrip(k, p, big, 1);

	/* Compression happens before encryption: text shrinks. */
	buf_t enc = {0}, dec = {0};
	CHECK_EQ(blob_encode_sealed(k, p, 100000, 3, &enc), 0);
	CHECK(enc.len < 50000);
	CHECK_EQ(enc.data[5], BLOB_FLAG_ZSTD | BLOB_FLAG_ENCRYPTED);

	digest_t id;
	crypt_chunk_id(k, p, 100000, &id);
	/* Wrong key: the tag fails. */
	CHECK_EQ(blob_decode_key(other, enc.data, enc.len, NULL, &dec), CAIRN_ECORRUPT);
	/* Wrong id: refused after decryption. */
	digest_t wid = id;
	wid.b[3] ^= 1;
	CHECK_EQ(blob_decode_key(k, enc.data, enc.len, &wid, &dec), CAIRN_ECORRUPT);
	/* A plain blob where an encrypted one must be. */
	buf_t plainblob = {0};
	CHECK_EQ(blob_encode(p, 1000, 3, &plainblob), 0);
	CHECK_EQ(blob_decode_key(k, plainblob.data, plainblob.len, NULL, &dec), CAIRN_ECORRUPT);
	buf_free(&plainblob);

	/* Every flipped bit is caught by the checksum without the key, and
	 * with the checksum repaired (a deliberate forger), by the GCM tag or
	 * the header rules with the key. */
	size_t missed_check = 0, missed_tag = 0;
	uint8_t *t = malloc(enc.len);
	for (size_t bit = 0; bit < enc.len * 8; bit += 7) {
		memcpy(t, enc.data, enc.len);
		t[bit / 8] ^= 1u << (bit % 8);
		if (blob_check(t, enc.len, NULL) != CAIRN_ECORRUPT)
			missed_check++;
		if (bit / 8 >= 24 || bit / 8 < 16)
			fix_sum(t, enc.len);
		if (blob_decode_key(k, t, enc.len, &id, &dec) == 0)
			missed_tag++;
	}
	CHECK_EQ(missed_check, 0);
	CHECK_EQ(missed_tag, 0);
	free(t);

	/* Tampered nonce, tag, header field, each with a fixed checksum. */
	static const size_t offs[] = {8, 12, BLOB_HEADER_LEN, BLOB_HEADER_LEN + 11};
	for (size_t i = 0; i < ARRAY_SIZE(offs); i++) {
		buf_t c = {0};
		buf_append(&c, enc.data, enc.len);
		c.data[offs[i]] ^= 0x01;
		fix_sum(c.data, c.len);
		CHECK(blob_decode_key(k, c.data, c.len, &id, &dec) != 0);
		buf_free(&c);
	}
	buf_t c = {0};
	buf_append(&c, enc.data, enc.len);
	c.data[c.len - 1] ^= 0x80; /* the tag */
	fix_sum(c.data, c.len);
	CHECK_EQ(blob_check(c.data, c.len, NULL), 0);
	CHECK_EQ(blob_decode_key(k, c.data, c.len, &id, &dec), CAIRN_ECORRUPT);
	buf_free(&c);

	/* Version 1 blobs still read; version 2 without the flag does too. */
	CHECK_EQ(blob_encode(p, 1000, 0, &plainblob), 0);
	CHECK_EQ(blob_decode(plainblob.data, plainblob.len, NULL, &dec), 0);
	plainblob.data[4] = 2;
	CHECK_EQ(blob_decode(plainblob.data, plainblob.len, NULL, &dec), CAIRN_ECORRUPT);
	fix_sum(plainblob.data, plainblob.len);
	CHECK_EQ(blob_decode(plainblob.data, plainblob.len, NULL, &dec), 0);
	plainblob.data[4] = 1;
	plainblob.data[5] |= BLOB_FLAG_ENCRYPTED; /* encrypted flag needs version 2 */
	put_u64(plainblob.data + 16, XXH3_64bits(plainblob.data + 24, plainblob.len - 24));
	CHECK_EQ(blob_check(plainblob.data, plainblob.len, NULL), CAIRN_ECORRUPT);
	buf_free(&plainblob);
	buf_free(&enc);
	buf_free(&dec);
	free(p);
	crypt_keys_free(k);
	crypt_keys_free(other);
}

static int cmp12(const void *a, const void *b)
{
	return memcmp(a, b, CRYPT_NONCE_LEN);
}

/* One million encrypted blobs, each with a nonce of its own. */
static void test_nonce_uniqueness(void)
{
	enum { N = 1000000 };
	crypt_keys_t *k;
	CHECK_EQ(crypt_keys_generate(&k), 0);
	uint8_t *nonces = malloc((size_t)N * CRYPT_NONCE_LEN);
	buf_t enc = {0};
	uint8_t one = 'x';
	int errs = 0;
	for (size_t i = 0; i < N; i++) {
		if (blob_encode_sealed(k, &one, 1, 0, &enc) != 0)
			errs++;
		memcpy(nonces + i * CRYPT_NONCE_LEN, enc.data + BLOB_HEADER_LEN, CRYPT_NONCE_LEN);
	}
	CHECK_EQ(errs, 0);
	qsort(nonces, N, CRYPT_NONCE_LEN, cmp12);
	size_t dups = 0;
	for (size_t i = 1; i < N; i++)
		dups += !memcmp(nonces + (i - 1) * CRYPT_NONCE_LEN, nonces + i * CRYPT_NONCE_LEN,
				CRYPT_NONCE_LEN);
	CHECK_EQ(dups, 0);
	free(nonces);
	buf_free(&enc);
	crypt_keys_free(k);
}

static size_t cuts(const chunker_params_t *p, const uint8_t *d, size_t len, size_t *out, size_t max)
{
	size_t n = 0, pos = 0;
	while (pos < len && n < max) {
		size_t c = chunker_cut(p, d + pos, len - pos);
		out[n++] = c;
		pos += c;
	}
	return n;
}

static void test_seeded_chunker(void)
{
	crypt_keys_t *a, *b;
	CHECK_EQ(crypt_keys_generate(&a), 0);
	CHECK_EQ(crypt_keys_generate(&b), 0);
	size_t len = 4u << 20;
	uint8_t *d = malloc(len);
	uint64_t s = 42;
	for (size_t i = 0; i < len; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		d[i] = s >> 56;
	}
	chunker_params_t plain, pa, pb, pa2;
	chunker_params_init(&plain, 64 << 10);
	pa = pb = pa2 = plain;
	chunker_params_seed(&pa, a->gear);
	chunker_params_seed(&pa2, a->gear);
	chunker_params_seed(&pb, b->gear);
	size_t c0[512], ca[512], ca2[512], cb[512];
	size_t n0 = cuts(&plain, d, len, c0, 512), na = cuts(&pa, d, len, ca, 512),
	       na2 = cuts(&pa2, d, len, ca2, 512), nb = cuts(&pb, d, len, cb, 512);
	/* Same seed, same cuts; other seeds (and the fixed table) differ. */
	CHECK(na == na2 && !memcmp(ca, ca2, na * sizeof(size_t)));
	CHECK(na != nb || memcmp(ca, cb, na * sizeof(size_t)));
	CHECK(na != n0 || memcmp(ca, c0, na * sizeof(size_t)));
	/* Sizes stay within the parameters. */
	for (size_t i = 0; i + 1 < na; i++)
		CHECK(ca[i] >= plain.min_size && ca[i] <= plain.max_size);
	/* A zero run becomes max-size chunks, as with the fixed table. */
	memset(d, 0, len);
	CHECK_EQ(chunker_cut(&pa, d, len), plain.max_size);
	CHECK_EQ(chunker_cut(&pb, d, len), plain.max_size);
	/* Unseeding gives back the fixed table's cuts. */
	chunker_params_seed(&pa, NULL);
	CHECK_EQ(chunker_cut(&pa, d, len), chunker_cut(&plain, d, len));
	free(d);
	crypt_keys_free(a);
	crypt_keys_free(b);
}

int main(void)
{
	/* Tests wrap many times; the parameters are recorded in each blob. */
	setenv("CAIRN_TEST_SCRYPT_LOGN", "10", 1);
	test_secret_parse();
	test_wrap();
	test_chunk_ids();
	test_sealed_blobs();
	test_seeded_chunker();
	test_nonce_uniqueness();
	UNIT_DONE();
}
