/* fuzz_keyblob.c - libFuzzer target for the wrapped key blob parser.
 *
 * The first input byte picks a secret (passphrase, or a 32-byte key); the
 * rest is the blob.  Whatever parses must either unwrap (then rewrapping
 * under the same secret must unwrap to the same keys) or fail as
 * "incorrect key" - never anything else.  Passphrase blobs asking for
 * more than a small scrypt N are only parsed, so each run stays fast.
 */
#include <stdlib.h>
#include <string.h>

#include "crypt/crypt.h"

static const uint8_t pass[] = "fuzzing passphrase";
static const uint8_t raw[32] = "0123456789abcdef0123456789abcdef";

static void rewrap(const crypt_keys_t *k, int fmt, const uint8_t *s, size_t n)
{
	uint8_t blob[CRYPT_KEYBLOB_LEN];
	crypt_keys_t *u = NULL;
	if (crypt_wrap(k, fmt, s, n, blob) != 0)
		abort();
	if (crypt_unwrap(blob, sizeof(blob), s, n, &u) != 0)
		abort();
	if (memcmp(u->data, k->data, CRYPT_KEY_LEN) || memcmp(u->id, k->id, CRYPT_KEY_LEN) ||
	    memcmp(u->seed, k->seed, CRYPT_KEY_LEN) || memcmp(u->keyid, k->keyid, CRYPT_KEYID_LEN))
		abort();
	crypt_keys_free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setenv("CAIRN_TEST_SCRYPT_LOGN", "10", 1);
	if (size < 1)
		return 0;
	bool use_pass = data[0] & 1;
	const uint8_t *secret = use_pass ? pass : raw;
	size_t slen = use_pass ? sizeof(pass) - 1 : sizeof(raw);
	data++;
	size--;
	int fmt = 0;
	uint8_t kid[CRYPT_KEYID_LEN];
	int c = crypt_keyblob_check(data, size, &fmt, kid);
	if (c != 0 && c != CAIRN_ECORRUPT)
		abort();
	if (c == 0 && fmt == CRYPT_KEYFORMAT_PASSPHRASE && (data[7] > 12 || get_u32(data + 12) > 2))
		return 0;
	crypt_keys_t *k = NULL;
	int r = crypt_unwrap(data, size, secret, slen, &k);
	if ((c == 0) != (r != CAIRN_ECORRUPT))
		abort(); /* unwrap and check must agree on what is a key blob */
	if (r == 0) {
		if (memcmp(k->keyid, kid, CRYPT_KEYID_LEN))
			abort();
		rewrap(k, fmt, secret, slen);
		crypt_keys_free(k);
	} else if (r != CAIRN_EBADKEY && r != CAIRN_ECORRUPT) {
		abort();
	} else if (k) {
		abort();
	}
	return 0;
}
