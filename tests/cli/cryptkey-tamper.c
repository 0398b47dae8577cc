/* cryptkey-tamper.c - test helper: copies a send stream from stdin to
 * stdout, flipping the ciphertext of every wrapped key (REC_CRYPTKEY) and
 * making every checksum (each record's XXH3, the SHA-256 of GROUPEND and
 * END) match again.  What a man in the middle could do to a raw stream:
 * the stream checks pass, and only the wrapped key is garbage.
 * Built by the test that uses it (t1352); see lib/repl/stream.h. */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

enum { HEADER = 12, REC_END = 7, REC_GROUPEND = 8, REC_CRYPTKEY = 9 };
enum { BLOB_CT = 60, BLOB_CT_LEN = 96, SHA_LEN = 32 };

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static int read_all(uint8_t **out, size_t *len)
{
	size_t cap = 1 << 20, n = 0, k;
	uint8_t *b = malloc(cap);
	while (b && (k = fread(b + n, 1, cap - n, stdin)) > 0)
		if ((n += k) == cap && !(b = realloc(b, cap *= 2)))
			return -1;
	*out = b;
	*len = n;
	return b ? 0 : -1;
}

/* The blob of a CRYPTKEY payload follows three u16-prefixed strings. */
static uint8_t *cryptkey_blob(uint8_t *p, uint32_t len)
{
	size_t off = 0;
	for (int i = 0; i < 3; i++) {
		if (off + 2 > len)
			return NULL;
		off += 2 + (p[off] | p[off + 1] << 8);
	}
	return off + BLOB_CT + BLOB_CT_LEN <= len ? p + off : NULL;
}

int main(void)
{
	uint8_t *s;
	size_t len, pos = HEADER;
	int tampered = 0;
	if (read_all(&s, &len) < 0 || len < HEADER)
		return 2;
	EVP_MD_CTX *sha = EVP_MD_CTX_new(), *tmp = EVP_MD_CTX_new();
	EVP_DigestInit_ex(sha, EVP_sha256(), NULL);
	EVP_DigestUpdate(sha, s, HEADER);
	while (pos + 5 + 8 <= len) {
		uint8_t *rec = s + pos, *payload = rec + 5;
		uint32_t plen = le32(rec + 1);
		if (pos + 5 + plen + 8 > len)
			return 2;
		uint8_t *blob = rec[0] == REC_CRYPTKEY ? cryptkey_blob(payload, plen) : NULL;
		for (int i = 0; blob && i < BLOB_CT_LEN; i++)
			blob[BLOB_CT + i] ^= 0x5a;
		tampered += blob != NULL;
		if ((rec[0] == REC_END || rec[0] == REC_GROUPEND) && plen >= SHA_LEN) {
			unsigned n;
			EVP_MD_CTX_copy_ex(tmp, sha);
			EVP_DigestFinal_ex(tmp, payload + plen - SHA_LEN, &n);
		}
		uint64_t x = XXH3_64bits(rec, 5 + plen);
		memcpy(payload + plen, &x, 8); /* little-endian, as the stream */
		EVP_DigestUpdate(sha, rec, 5 + plen + 8);
		pos += 5 + plen + 8;
	}
	fwrite(s, 1, len, stdout);
	fprintf(stderr, "cryptkey-tamper: %d wrapped key(s) flipped\n", tampered);
	return tampered ? 0 : 3;
}
