/* blob.c - encode and decode chunk files (format in blob.h).
 *
 * Decoding treats every byte as hostile: a store may sit on a failing disk
 * or be written by someone else.  Each length is checked against the others
 * before it is trusted, and nothing is allocated from a length that has not
 * passed the CHUNK_MAX_PLAIN bound.
 */
#include "blob.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <xxhash.h>
#include <zstd.h>

#define BLOB_MAGIC "CRNB"
#define BLOB_VERSION 1
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

static void header_put(uint8_t *h, uint8_t flags, uint32_t plain_len, const uint8_t *payload,
		       uint32_t payload_len)
{
	memcpy(h, BLOB_MAGIC, 4);
	h[4] = BLOB_VERSION;
	h[5] = flags;
	put_u16(h + 6, 0);
	put_u32(h + 8, plain_len);
	put_u32(h + 12, payload_len);
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

/* ---- decoding ---- */

struct blob_hdr {
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

/* Validates everything that can be validated without decompressing. */
static int header_parse(const void *blob, size_t len, struct blob_hdr *h)
{
	const uint8_t *b = blob;
	if (len < BLOB_HEADER_LEN || memcmp(b, BLOB_MAGIC, 4) != 0)
		return CAIRN_ECORRUPT;
	h->flags = b[5];
	h->plain_len = get_u32(b + 8);
	h->payload_len = get_u32(b + 12);
	h->payload = b + BLOB_HEADER_LEN;
	if (b[4] != BLOB_VERSION || (h->flags & ~BLOB_FLAG_ZSTD) || get_u16(b + 6) != 0)
		return CAIRN_ECORRUPT;
	if (h->plain_len > CHUNK_MAX_PLAIN || h->payload_len != len - BLOB_HEADER_LEN)
		return CAIRN_ECORRUPT;
	if (XXH3_64bits(h->payload, h->payload_len) != get_u64(b + 16))
		return CAIRN_ECORRUPT;
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

int blob_decode(const void *blob, size_t len, const digest_t *expect, buf_t *out)
{
	struct blob_hdr h;
	out->len = 0;
	int r = header_parse(blob, len, &h);
	if (r < 0)
		return r;
	r = buf_reset_exact(out, h.plain_len);
	if (r < 0)
		return r;
	if (h.flags & BLOB_FLAG_ZSTD)
		r = decompress(&h, out->data);
	else if (h.plain_len)
		memcpy(out->data, h.payload, h.plain_len);
	if (r < 0)
		return r;
	if (expect) {
		digest_t d;
		digest_of(out->data, h.plain_len, &d);
		if (digest_cmp(&d, expect) != 0)
			return CAIRN_ECORRUPT;
	}
	out->len = h.plain_len;
	return 0;
}
