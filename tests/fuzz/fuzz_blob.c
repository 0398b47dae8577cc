/* fuzz_blob.c - libFuzzer target for the blob decoder.
 *
 * Feeds the input to blob_check and blob_decode as-is, then again with the
 * checksum fixed up: a fuzzer cannot guess a 64-bit hash, so without the
 * second pass it would never get past the checksum to the length checks
 * and the zstd decoder behind them.  Whatever decodes must re-encode to a
 * blob that decodes to the same bytes.
 */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "store/blob.h"

static void reencode(const buf_t *plain, int level)
{
	buf_t enc = {0}, dec = {0};
	digest_t d;
	uint32_t pl = 0;
	digest_of(plain->data, plain->len, &d);
	if (blob_encode(plain->data, plain->len, level, &enc) != 0)
		abort();
	if (blob_check(enc.data, enc.len, &pl) != 0 || pl != plain->len)
		abort();
	if (blob_decode(enc.data, enc.len, &d, &dec) != 0 || dec.len != plain->len)
		abort();
	if (plain->len && memcmp(dec.data, plain->data, plain->len) != 0)
		abort();
	buf_free(&enc);
	buf_free(&dec);
}

static void one(const uint8_t *data, size_t size)
{
	buf_t out = {0};
	uint32_t pl = 0;
	int checked = blob_check(data, size, &pl);
	int r = blob_decode(data, size, NULL, &out);
	/* check is decode minus decompression: it may pass what decode refuses,
	 * never the other way round. */
	if (r == 0 && (checked != 0 || pl != out.len))
		abort();
	if (r != 0 && out.len != 0)
		abort();
	if (r == 0) {
		digest_t d, wrong;
		digest_of(out.data, out.len, &d);
		wrong = d;
		wrong.b[size % DIGEST_LEN] ^= 0x40;
		buf_t again = {0};
		if (blob_decode(data, size, &d, &again) != 0 || again.len != out.len)
			abort();
		if (blob_decode(data, size, &wrong, &again) != CAIRN_ECORRUPT)
			abort();
		buf_free(&again);
		/* Level from the input so both stored and compressed encodings
		 * get exercised; capped to keep each run fast. */
		reencode(&out, size % 4);
	} else {
		/* Also a digest that cannot match, on the failing path. */
		digest_t d;
		digest_of(data, size, &d);
		if (blob_decode(data, size, &d, &out) == 0)
			abort();
	}
	buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size);
	if (size < BLOB_HEADER_LEN)
		return 0;
	uint8_t *copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	put_u64(copy + 16, XXH3_64bits(copy + BLOB_HEADER_LEN, size - BLOB_HEADER_LEN));
	one(copy, size);
	free(copy);
	return 0;
}
