/* fuzz_cryptblob.c - libFuzzer target for encrypted (version 2) blobs.
 *
 * The key is fixed (derived from constant master bytes), so the stored
 * corpus holds real encrypted blobs to mutate.  The input is decoded with
 * and without the key, then again with its checksum repaired so the
 * fuzzer reaches the GCM tag and the decompressor behind it.  Anything
 * that decodes with the key must carry a valid tag, so it can only be an
 * unmodified corpus blob: it must re-encode to a blob that decodes to the
 * same bytes.  Without the key an encrypted blob is never decoded.
 */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "store/blob.h"

static crypt_keys_t *fixed_key(void)
{
	static crypt_keys_t *k;
	if (!k) {
		uint8_t master[CRYPT_MASTER_LEN], kid[CRYPT_KEYID_LEN];
		for (size_t i = 0; i < sizeof(master); i++)
			master[i] = (uint8_t)(i * 7 + 1);
		memset(kid, 0x5a, sizeof(kid));
		if (crypt_keys_from_master(master, kid, &k) != 0)
			abort();
	}
	return k;
}

static void one(const uint8_t *data, size_t size)
{
	crypt_keys_t *k = fixed_key();
	buf_t out = {0};
	int checked = blob_check(data, size, NULL);
	int plain = blob_decode(data, size, NULL, &out);
	if (plain == 0 && blob_is_encrypted(data, size))
		abort();
	int r = blob_decode_key(k, data, size, NULL, &out);
	if (r == 0 && checked != 0)
		abort();
	if (r != 0 && out.len)
		abort();
	if (r == 0) {
		digest_t id;
		if (crypt_chunk_id(k, out.data, out.len, &id) != 0)
			abort();
		buf_t again = {0}, enc = {0};
		if (blob_decode_key(k, data, size, &id, &again) != 0 || again.len != out.len)
			abort();
		if (blob_encode_sealed(k, out.data, out.len, size % 4, &enc) != 0)
			abort();
		if (blob_decode_key(k, enc.data, enc.len, &id, &again) != 0 ||
		    again.len != out.len || (out.len && memcmp(again.data, out.data, out.len)))
			abort();
		buf_free(&again);
		buf_free(&enc);
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
	uint64_t seed = XXH3_64bits(copy, 16);
	put_u64(copy + 16, XXH3_64bits_withSeed(copy + BLOB_HEADER_LEN, size - BLOB_HEADER_LEN, seed));
	one(copy, size);
	free(copy);
	return 0;
}
