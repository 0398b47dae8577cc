/* blob.c - encode and decode chunk files (format in blob.h).
 *
 * Decoding treats every byte as hostile: a store may sit on a failing disk
 * or be written by someone else.  Each length is checked against the others
 * before it is trusted, and nothing is allocated from a length that has not
 * passed the CHUNK_MAX_PLAIN bound.
 */
#include "store/blob.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <xxhash.h>
#include <zstd.h>
#include <openssl/crypto.h>

#define BLOB_MAGIC "CRNB"
#define BLOB_VERSION 1
#define BLOB_VERSION_SEALED 2
#define BLOB_AAD_LEN 16
#define ZSTD_LEVEL_MAX 19

/* ---- per-thread zstd contexts ----
 * Creating a context costs more than compressing a small chunk, so each
 * thread keeps one of each.  The __thread copy is the fast path; the
 * pthread key exists only so the contexts are freed when the thread exits. */

struct zctx {
	ZSTD_CCtx *c;
	ZSTD_DCtx *d;
	bool registered;
};

static __thread struct zctx tls_zctx;
static pthread_key_t zctx_key;
static pthread_once_t zctx_once = PTHREAD_ONCE_INIT;
static bool zctx_key_ok;

static void zctx_release(void *p)
{
	struct zctx *z = p;
	ZSTD_freeCCtx(z->c);
	ZSTD_freeDCtx(z->d);
	z->c = NULL;
	z->d = NULL;
	z->registered = false;
}

static void zctx_key_init(void)
{
	zctx_key_ok = pthread_key_create(&zctx_key, zctx_release) == 0;
}

/* Returns this thread's contexts, or NULL if they cannot be made freeable
 * (a context that could never be freed would leak once per thread). */
static struct zctx *zctx_get(void)
{
	struct zctx *z = &tls_zctx;
	if (z->registered)
		return z;
	pthread_once(&zctx_once, zctx_key_init);
	if (!zctx_key_ok || pthread_setspecific(zctx_key, z) != 0)
		return NULL;
	z->registered = true;
	return z;
}

static ZSTD_CCtx *cctx_get(void)
{
	struct zctx *z = zctx_get();
	if (z && !z->c)
		z->c = ZSTD_createCCtx();
	return z ? z->c : NULL;
}

static ZSTD_DCtx *dctx_get(void)
{
	struct zctx *z = zctx_get();
	if (z && !z->d)
		z->d = ZSTD_createDCtx();
	return z ? z->d : NULL;
}

/* ---- encoding ---- */

static void header_put_aad(uint8_t *h, uint8_t version, uint8_t flags, uint32_t plain_len,
			   uint32_t payload_len)
{
	memcpy(h, BLOB_MAGIC, 4);
	h[4] = version;
	h[5] = flags;
	put_u16(h + 6, 0);
	put_u32(h + 8, plain_len);
	put_u32(h + 12, payload_len);
}

static void header_put(uint8_t *h, uint8_t flags, uint32_t plain_len, const uint8_t *payload,
		       uint32_t payload_len)
{
	header_put_aad(h, BLOB_VERSION, flags, plain_len, payload_len);
	put_u64(h + 16, XXH3_64bits(payload, payload_len));
}

/* Compresses into dst only if the result is strictly smaller than len:
 * giving zstd len - 1 bytes of room makes it fail fast otherwise, so no
 * compressBound-sized buffer is ever needed.  Returns the compressed size,
 * 0 for "store plain", or -ENOMEM. */
static ssize_t try_compress(const void *plain, size_t len, int level, uint8_t *dst)
{
	if (level == 0 || len < 2)
		return 0;
	ZSTD_CCtx *cctx = cctx_get();
	if (!cctx)
		return -ENOMEM;
	size_t n = ZSTD_compressCCtx(cctx, dst, len - 1, plain, len, level);
	/* Any failure (mostly dstSize_tooSmall) just means "not worth it":
	 * the plain form is always a valid encoding. */
	return ZSTD_isError(n) ? 0 : (ssize_t)n;
}

int blob_encode(const void *plain, size_t len, int level, buf_t *out)
{
	if (len > CHUNK_MAX_PLAIN || level < 0 || level > ZSTD_LEVEL_MAX)
		return -EINVAL;
	out->len = 0;
	int r = buf_reserve(out, BLOB_HEADER_LEN + len);
	if (r < 0)
		return r;
	uint8_t *payload = out->data + BLOB_HEADER_LEN;
	ssize_t n = try_compress(plain, len, level, payload);
	if (n < 0)
		return (int)n;
	uint8_t flags = n ? BLOB_FLAG_ZSTD : 0;
	if (!n && len) {
		memcpy(payload, plain, len);
		n = (ssize_t)len;
	}
	header_put(out->data, flags, len, payload, n);
	out->len = BLOB_HEADER_LEN + n;
	return 0;
}

/* Version 2's checksum also covers header bytes 0..16: without the key
 * the declared plain length of a compressed payload cannot be checked
 * against the frame, so the checksum has to vouch for it. */
static uint64_t sealed_checksum(const uint8_t *head, const uint8_t *payload, size_t len)
{
	return XXH3_64bits_withSeed(payload, len, XXH3_64bits(head, BLOB_AAD_LEN));
}

int blob_encode_sealed(const crypt_keys_t *k, const void *plain, size_t len, int level,
		       buf_t *out)
{
	if (len > CHUNK_MAX_PLAIN || level < 0 || level > ZSTD_LEVEL_MAX)
		return -EINVAL;
	out->len = 0;
	int r = buf_reserve(out, BLOB_HEADER_LEN + BLOB_CRYPT_OVERHEAD + len);
	if (r < 0)
		return r;
	uint8_t *nonce = out->data + BLOB_HEADER_LEN;
	uint8_t *inner = nonce + CRYPT_NONCE_LEN;
	ssize_t n = try_compress(plain, len, level, inner);
	if (n < 0)
		return (int)n;
	uint8_t flags = BLOB_FLAG_ENCRYPTED | (n ? BLOB_FLAG_ZSTD : 0);
	if (!n && len) {
		memcpy(inner, plain, len);
		n = (ssize_t)len;
	}
	uint32_t payload_len = BLOB_CRYPT_OVERHEAD + n;
	header_put_aad(out->data, BLOB_VERSION_SEALED, flags, len, payload_len);
	/* GCM encrypts in place; the header is authenticated, so no field of
	 * it can be changed without the tag failing. */
	r = crypt_seal(k, out->data, BLOB_AAD_LEN, inner, n, inner, nonce, inner + n);
	if (r < 0)
		return r;
	put_u64(out->data + 16, sealed_checksum(out->data, nonce, payload_len));
	out->len = BLOB_HEADER_LEN + payload_len;
	return 0;
}

/* ---- decoding ---- */

struct blob_hdr {
	const uint8_t *head;
	uint8_t flags;
	uint32_t plain_len;
	const uint8_t *payload;
	uint32_t payload_len;
};

/* The zstd frame header alone (no decompression) must agree with the blob
 * header: a zstd magic (which also rules out legacy and skippable frames)
 * and, when the frame records it, the same content size. */
static bool zstd_frame_plausible(const struct blob_hdr *h)
{
	if (h->payload_len < 4 || get_u32(h->payload) != ZSTD_MAGICNUMBER)
		return false;
	unsigned long long size = ZSTD_getFrameContentSize(h->payload, h->payload_len);
	if (size == ZSTD_CONTENTSIZE_ERROR)
		return false;
	return size == ZSTD_CONTENTSIZE_UNKNOWN || size == h->plain_len;
}

/* What can be checked of an encrypted payload without the key: room for
 * nonce and tag, and the inner length the compression rule allows. */
static bool sealed_sizes_ok(const struct blob_hdr *h)
{
	if (h->payload_len < BLOB_CRYPT_OVERHEAD)
		return false;
	uint32_t inner = h->payload_len - BLOB_CRYPT_OVERHEAD;
	if (!(h->flags & BLOB_FLAG_ZSTD))
		return inner == h->plain_len;
	return inner >= 4 && inner < h->plain_len;
}

/* Validates everything that can be validated without decompressing. */
static int header_parse(const void *blob, size_t len, struct blob_hdr *h)
{
	const uint8_t *b = blob;
	if (len < BLOB_HEADER_LEN || memcmp(b, BLOB_MAGIC, 4) != 0)
		return CAIRN_ECORRUPT;
	h->head = b;
	h->flags = b[5];
	h->plain_len = get_u32(b + 8);
	h->payload_len = get_u32(b + 12);
	h->payload = b + BLOB_HEADER_LEN;
	uint8_t allowed = b[4] == BLOB_VERSION_SEALED ? BLOB_FLAG_ZSTD | BLOB_FLAG_ENCRYPTED
						       : BLOB_FLAG_ZSTD;
	if ((b[4] != BLOB_VERSION && b[4] != BLOB_VERSION_SEALED) || (h->flags & ~allowed) ||
	    get_u16(b + 6) != 0)
		return CAIRN_ECORRUPT;
	if (h->plain_len > CHUNK_MAX_PLAIN || h->payload_len != len - BLOB_HEADER_LEN)
		return CAIRN_ECORRUPT;
	uint64_t sum = b[4] == BLOB_VERSION_SEALED ? sealed_checksum(b, h->payload, h->payload_len)
						   : XXH3_64bits(h->payload, h->payload_len);
	if (sum != get_u64(b + 16))
		return CAIRN_ECORRUPT;
	if (h->flags & BLOB_FLAG_ENCRYPTED)
		return sealed_sizes_ok(h) ? 0 : CAIRN_ECORRUPT;
	if (!(h->flags & BLOB_FLAG_ZSTD))
		return h->payload_len == h->plain_len ? 0 : CAIRN_ECORRUPT;
	/* blob_encode compresses only when that saves space; anything else is
	 * not a blob it could have written. */
	if (h->payload_len >= h->plain_len || !zstd_frame_plausible(h))
		return CAIRN_ECORRUPT;
	return 0;
}

int blob_check(const void *blob, size_t len, uint32_t *plain_len)
{
	struct blob_hdr h;
	int r = header_parse(blob, len, &h);
	if (r == 0 && plain_len)
		*plain_len = h.plain_len;
	return r;
}

/* Empties out and makes room for exactly n bytes.  Not buf_reserve: that
 * rounds up to a power of two, and a hostile header should not get to
 * double what it may make us allocate.  Old contents are discarded, so
 * free + malloc avoids realloc copying them. */
static int buf_reset_exact(buf_t *out, size_t n)
{
	out->len = 0;
	if (out->cap >= n)
		return 0;
	uint8_t *p = malloc(n);
	if (!p)
		return -ENOMEM;
	free(out->data);
	out->data = p;
	out->cap = n;
	return 0;
}

static int decompress(const struct blob_hdr *h, uint8_t *dst)
{
	ZSTD_DCtx *dctx = dctx_get();
	if (!dctx)
		return -ENOMEM;
	/* One-shot decompression writes straight into dst and allocates
	 * nothing, so a frame's declared window size cannot make zstd allocate,
	 * and dst's capacity bounds the output whatever the frames say. */
	size_t n = ZSTD_decompressDCtx(dctx, dst, h->plain_len, h->payload, h->payload_len);
	return !ZSTD_isError(n) && n == h->plain_len ? 0 : CAIRN_ECORRUPT;
}

/* Decrypts an encrypted payload; on success h describes the inner
 * (compressed or plain) bytes, now in tmp, as a plain payload would.
 * *opened: the GCM tag held, even if a later check fails. */
static int unseal(const crypt_keys_t *k, struct blob_hdr *h, buf_t *tmp, bool *opened)
{
	uint32_t inner = h->payload_len - BLOB_CRYPT_OVERHEAD;
	int r = buf_reset_exact(tmp, inner ? inner : 1);
	if (r < 0)
		return r;
	const uint8_t *nonce = h->payload, *ct = nonce + CRYPT_NONCE_LEN;
	r = crypt_open(k, h->head, BLOB_AAD_LEN, ct, inner, nonce, ct + inner, tmp->data);
	if (r < 0)
		return r;
	*opened = true;
	h->payload = tmp->data;
	h->payload_len = inner;
	if ((h->flags & BLOB_FLAG_ZSTD) && !zstd_frame_plausible(h))
		return CAIRN_ECORRUPT;
	return 0;
}

static int check_id(const crypt_keys_t *k, const uint8_t *plain, size_t len,
		    const digest_t *expect)
{
	digest_t d;
	if (k) {
		int r = crypt_chunk_id(k, plain, len, &d);
		if (r < 0)
			return r;
	} else {
		digest_of(plain, len, &d);
	}
	return digest_cmp(&d, expect) ? CAIRN_ECORRUPT : 0;
}

int blob_decode_key(const crypt_keys_t *k, const void *blob, size_t len, const digest_t *expect,
		    buf_t *out)
{
	bool authentic;
	return blob_decode_key_auth(k, blob, len, expect, out, &authentic);
}

int blob_decode_key_auth(const crypt_keys_t *k, const void *blob, size_t len,
			 const digest_t *expect, buf_t *out, bool *authentic)
{
	struct blob_hdr h;
	*authentic = false;
	buf_t tmp = {0};
	out->len = 0;
	int r = header_parse(blob, len, &h);
	if (r < 0)
		return r;
	bool sealed = h.flags & BLOB_FLAG_ENCRYPTED;
	if (sealed && !k)
		return CAIRN_ENOKEY;
	if (!sealed && k)
		return CAIRN_ECORRUPT;
	if (sealed)
		r = unseal(k, &h, &tmp, authentic);
	if (r == 0)
		r = buf_reset_exact(out, h.plain_len);
	if (r == 0 && (h.flags & BLOB_FLAG_ZSTD))
		r = decompress(&h, out->data);
	else if (r == 0 && h.plain_len)
		memcpy(out->data, h.payload, h.plain_len);
	if (sealed) {
		/* The inner bytes are as secret as the plain ones. */
		OPENSSL_cleanse(tmp.data, tmp.cap);
		free(tmp.data);
	}
	if (r == 0 && expect)
		r = check_id(k, out->data, h.plain_len, expect);
	if (r < 0)
		return r;
	out->len = h.plain_len;
	return 0;
}

int blob_decode(const void *blob, size_t len, const digest_t *expect, buf_t *out)
{
	return blob_decode_key(NULL, blob, len, expect, out);
}

bool blob_is_encrypted(const void *blob, size_t len)
{
	const uint8_t *b = blob;
	return len >= BLOB_HEADER_LEN && !memcmp(b, BLOB_MAGIC, 4) &&
	       b[4] == BLOB_VERSION_SEALED && (b[5] & BLOB_FLAG_ENCRYPTED);
}
