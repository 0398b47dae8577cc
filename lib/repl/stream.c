/* stream.c - see stream.h. */
#include "repl/stream.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <xxhash.h>

#define READAHEAD (1u << 20)

size_t stream_rec_limit(int type)
{
	switch (type) {
	case REC_CHUNK:
		return DIGEST_LEN + 64 + CHUNK_MAX_PLAIN + (CHUNK_MAX_PLAIN >> 7);
	case REC_END:
		return DIGEST_LEN;
	case REC_SNAPEND:
		return 8;
	case REC_GROUPEND:
		return 12 + DIGEST_LEN;
	case REC_CRYPTKEY:
		return 3 * 2 + 255 + 2 * 4096 + 172;
	default:
		return 16u << 20;
	}
}

/* ---- writer ---- */

int sw_init(swriter_t *w, int fd)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->sha = EVP_MD_CTX_new();
	if (!w->sha || !EVP_DigestInit_ex(w->sha, EVP_sha256(), NULL))
		return -ENOMEM;
	uint8_t h[STREAM_HEADER_LEN];
	memcpy(h, STREAM_MAGIC, 8);
	put_u32(h + 8, STREAM_VERSION);
	EVP_DigestUpdate(w->sha, h, sizeof(h));
	w->bytes = sizeof(h);
	return write_full(fd, h, sizeof(h));
}

void sw_begin(swriter_t *w, uint8_t type)
{
	w->type = type;
	w->rec.len = 0;
	/* Room for the frame header, filled in by sw_end. */
	if (buf_append(&w->rec, "\0\0\0\0\0", 5) < 0)
		w->err = -ENOMEM;
}

int sw_put_str(swriter_t *w, const char *s)
{
	size_t n = strlen(s);
	if (n > 65535)
		return w->err = -EINVAL;
	int r = buf_put_u16(&w->rec, n);
	if (r == 0)
		r = buf_append(&w->rec, s, n);
	if (r < 0)
		w->err = r;
	return r;
}

/* A stop flag is set by a signal handler, maybe on another thread than
 * this one (see recv.c's g_recv_stop): read it with a relaxed atomic load,
 * not a plain volatile read, which would be a data race. */
static bool stopped(const volatile int *stop)
{
	return stop && __atomic_load_n(stop, __ATOMIC_RELAXED);
}

static int sw_write(swriter_t *w, const uint8_t *p, size_t n)
{
	while (n) {
		/* Checked before every write: a signal may have cut the previous
		 * one short instead of failing it. */
		if (stopped(w->stop))
			return -EINTR;
		ssize_t k = write(w->fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		p += k;
		n -= k;
	}
	return 0;
}

int sw_end(swriter_t *w)
{
	if (w->err)
		return w->err;
	size_t plen = w->rec.len - 5;
	w->rec.data[0] = w->type;
	put_u32(w->rec.data + 1, plen);
	uint64_t x = XXH3_64bits(w->rec.data, w->rec.len);
	int r = buf_put_u64(&w->rec, x);
	if (r < 0)
		return w->err = r;
	EVP_DigestUpdate(w->sha, w->rec.data, w->rec.len);
	w->bytes += w->rec.len;
	r = sw_write(w, w->rec.data, w->rec.len);
	if (r < 0)
		w->err = r;
	return r;
}

static int digest_so_far(void *sha, uint8_t out[DIGEST_LEN])
{
	unsigned mdlen = 0;
	EVP_MD_CTX *copy = EVP_MD_CTX_new();
	int ok = copy && EVP_MD_CTX_copy_ex(copy, sha) && EVP_DigestFinal_ex(copy, out, &mdlen);
	EVP_MD_CTX_free(copy);
	return ok ? 0 : -ENOMEM;
}

int sw_digest(swriter_t *w, uint8_t out[DIGEST_LEN])
{
	return digest_so_far(w->sha, out);
}

int sw_finish(swriter_t *w)
{
	uint8_t md[DIGEST_LEN];
	if (digest_so_far(w->sha, md) < 0)
		return -ENOMEM;
	sw_begin(w, REC_END);
	buf_append(&w->rec, md, DIGEST_LEN);
	return sw_end(w);
}

void sw_free(swriter_t *w)
{
	EVP_MD_CTX_free(w->sha);
	buf_free(&w->rec);
}

/* ---- reader ---- */

/* Makes n bytes available at r->in.data + r->inpos; -EPIPE at EOF. */
static int fill(sreader_t *r, size_t n)
{
	if (r->in.len - r->inpos >= n)
		return 0;
	buf_consume(&r->in, r->inpos);
	r->inpos = 0;
	if (buf_reserve(&r->in, MAX(n, READAHEAD)) < 0)
		return -ENOMEM;
	while (r->in.len < n) {
		if (stopped(r->stop))
			return -EINTR;
		if (r->stop && r->stop_fd >= 0) {
			struct pollfd p[2] = {{.fd = r->fd, .events = POLLIN},
					      {.fd = r->stop_fd, .events = POLLIN}};
			if (poll(p, 2, -1) < 0) {
				if (errno == EINTR)
					continue; /* another handler's signal: check and poll again */
				return -errno;
			}
			if (stopped(r->stop))
				return -EINTR;
		}
		ssize_t k = read(r->fd, r->in.data + r->in.len, r->in.cap - r->in.len);
		if (stopped(r->stop))
			return -EINTR; /* the signal may come with the end of input */
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0) {
			r->eof = true;
			return -EPIPE;
		}
		r->in.len += k;
	}
	return 0;
}

static const uint8_t *take(sreader_t *r, size_t n)
{
	const uint8_t *p = r->in.data + r->inpos;
	EVP_DigestUpdate(r->sha, p, n);
	r->inpos += n;
	r->offset += n;
	return p;
}

int sr_init(sreader_t *r, int fd)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->stop_fd = -1;
	r->sha = EVP_MD_CTX_new();
	if (!r->sha || !EVP_DigestInit_ex(r->sha, EVP_sha256(), NULL))
		return -ENOMEM;
	int e = fill(r, STREAM_HEADER_LEN);
	if (e < 0)
		return e == -EPIPE ? CAIRN_ECORRUPT : e;
	const uint8_t *h = take(r, STREAM_HEADER_LEN);
	if (memcmp(h, STREAM_MAGIC, 8))
		return CAIRN_ECORRUPT;
	if (get_u32(h + 8) != STREAM_VERSION)
		return CAIRN_EVERSION;
	return 0;
}

int sr_next(sreader_t *r)
{
	/* The END record's digest covers everything before it, so remember
	 * the hash state before this record is folded in. */
	int e = fill(r, 5);
	if (e < 0)
		return e;
	const uint8_t *h = r->in.data + r->inpos;
	uint8_t type = h[0];
	uint32_t len = get_u32(h + 1);
	if (type < 1 || type > REC_MAX_TYPE || len > stream_rec_limit(type))
		return CAIRN_ECORRUPT;
	e = fill(r, 5 + (size_t)len + 8);
	if (e < 0)
		return e;
	h = r->in.data + r->inpos;
	if (XXH3_64bits(h, 5 + (size_t)len) != get_u64(h + 5 + len))
		return CAIRN_ECORRUPT;
	/* END and GROUPEND carry the hash of everything before them. */
	if ((type == REC_END || type == REC_GROUPEND) && digest_so_far(r->sha, r->prior) < 0)
		return -ENOMEM;
	take(r, 5);
	const uint8_t *p = take(r, len);
	r->rec.len = 0;
	if (buf_append(&r->rec, p, len) < 0)
		return -ENOMEM;
	take(r, 8);
	r->type = type;
	r->pos = 0;
	r->bad = false;
	return type;
}

int sr_check_end(sreader_t *r)
{
	if (r->type != REC_END || r->rec.len != DIGEST_LEN)
		return CAIRN_ECORRUPT;
	return memcmp(r->rec.data, r->prior, DIGEST_LEN) ? CAIRN_ECORRUPT : 0;
}

int sr_at_eof(sreader_t *r)
{
	int e = fill(r, 1);
	return e == -EPIPE ? 1 : e < 0 ? e : 0;
}

char *sr_strdup(sreader_t *r, size_t maxlen)
{
	const uint8_t *lp = sr_bytes(r, 2);
	size_t n = lp ? get_u16(lp) : 0;
	const uint8_t *s = lp ? sr_bytes(r, n) : NULL;
	if (!s || n > maxlen || memchr(s, 0, n)) {
		r->bad = true;
		return NULL;
	}
	char *out = malloc(n + 1);
	if (!out) {
		r->bad = true;
		return NULL;
	}
	memcpy(out, s, n);
	out[n] = 0;
	return out;
}

const uint8_t *sr_bytes(sreader_t *r, size_t n)
{
	if (r->bad || r->rec.len - r->pos < n) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *p = r->rec.data + r->pos;
	r->pos += n;
	return p;
}

uint8_t sr_u8(sreader_t *r)
{
	const uint8_t *p = sr_bytes(r, 1);
	return p ? p[0] : 0;
}

uint32_t sr_u32(sreader_t *r)
{
	const uint8_t *p = sr_bytes(r, 4);
	return p ? get_u32(p) : 0;
}

uint64_t sr_u64(sreader_t *r)
{
	const uint8_t *p = sr_bytes(r, 8);
	return p ? get_u64(p) : 0;
}

void sr_str(sreader_t *r, char *out, size_t outlen)
{
	out[0] = 0;
	const uint8_t *lp = sr_bytes(r, 2);
	if (!lp)
		return;
	size_t n = get_u16(lp);
	const uint8_t *s = sr_bytes(r, n);
	if (!s)
		return;
	if (n >= outlen || memchr(s, 0, n)) {
		r->bad = true;
		return;
	}
	memcpy(out, s, n);
	out[n] = 0;
}

int sr_done(sreader_t *r)
{
	return r->bad || r->pos != r->rec.len ? CAIRN_ECORRUPT : 0;
}

void sr_free(sreader_t *r)
{
	EVP_MD_CTX_free(r->sha);
	buf_free(&r->in);
	buf_free(&r->rec);
}
