/* test_stream.c - the send-stream framing (lib/repl/stream.h): writer/reader
 * round trip of every record type; the per-record checksum against every
 * single-bit flip; lengths over a type's limit refused before the payload
 * is read; truncation at every byte; the END checksum against dropped,
 * duplicated and reordered records; field readers on short payloads. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "repl/stream.h"
#include "unit.h"
#include "util.h"

static uint64_t rng_state = 7;

static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* An fd reading exactly len bytes of data, then EOF. */
static int fd_of(const void *data, size_t len)
{
	int fd = memfd_create("stream", 0);
	if (fd < 0)
		abort();
	if (len && write_full(fd, data, len) < 0)
		abort();
	if (lseek(fd, 0, SEEK_SET) < 0)
		abort();
	return fd;
}

/* The bytes written so far to a memfd. */
static void slurp(int fd, buf_t *out)
{
	off_t n = lseek(fd, 0, SEEK_END);
	out->len = 0;
	if (buf_reserve(out, n + 1) < 0 || pread(fd, out->data, n, 0) != n)
		abort();
	out->len = n;
}

/* Record boundaries of a well-formed stream: start offsets, and end of stream. */
static size_t boundaries(const buf_t *s, size_t *at, size_t max)
{
	size_t n = 0, off = STREAM_HEADER_LEN;
	while (off + 5 <= s->len && n < max) {
		at[n++] = off;
		off += 5 + get_u32(s->data + off + 1) + 8;
	}
	if (n < max)
		at[n] = off;
	return n;
}

#define BLOB_BYTES 3000
static uint8_t blob[3 << 20];
static const uint8_t digest[DIGEST_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
					   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

/* One record of every type, in stream order; big adds a 3 MB CHUNK so the
 * reader's read-ahead has to grow. */
static void write_stream(buf_t *out, bool big)
{
	int fd = memfd_create("w", 0);
	swriter_t w;
	CHECK_EQ(sw_init(&w, fd), 0);

	sw_begin(&w, REC_BEGIN);
	buf_put_u32(&w.rec, STREAM_F_RECURSIVE);
	buf_put_u64(&w.rec, 0);
	sw_put_str(&w, "pool/top");
	buf_put_u64(&w.rec, 2);
	CHECK_EQ(sw_end(&w), 0);

	sw_begin(&w, REC_DATASET);
	sw_put_str(&w, "pool/top");
	buf_put_u8(&w.rec, 1);
	buf_put_u32(&w.rec, 2);
	sw_put_str(&w, "compression");
	sw_put_str(&w, "zstd-3");
	sw_put_str(&w, "user:empty");
	sw_put_str(&w, "");
	CHECK_EQ(sw_end(&w), 0);

	sw_begin(&w, REC_SNAPLIST);
	sw_put_str(&w, "pool/top");
	buf_put_u32(&w.rec, 2);
	sw_put_str(&w, "a");
	buf_put_u64(&w.rec, 0x1111222233334444ull);
	sw_put_str(&w, "b");
	buf_put_u64(&w.rec, UINT64_MAX);
	CHECK_EQ(sw_end(&w), 0);

	sw_begin(&w, REC_SNAP);
	sw_put_str(&w, "pool/top");
	sw_put_str(&w, "b");
	buf_put_u64(&w.rec, UINT64_MAX);
	buf_put_u64(&w.rec, 0x1111222233334444ull);
	buf_put_u64(&w.rec, (uint64_t)-5); /* creation may be negative */
	buf_put_u64(&w.rec, 1000);
	buf_put_u64(&w.rec, 2000);
	buf_put_u32(&w.rec, 0);
	buf_put_u32(&w.rec, 1);
	uint8_t ref[CHUNK_REF_WIRE];
	for (size_t i = 0; i < sizeof(ref); i++)
		ref[i] = i;
	buf_append(&w.rec, ref, sizeof(ref));
	buf_put_u32(&w.rec, 0);
	buf_put_u64(&w.rec, 0);
	CHECK_EQ(sw_end(&w), 0);

	sw_begin(&w, REC_CHUNK);
	buf_append(&w.rec, digest, DIGEST_LEN);
	buf_append(&w.rec, blob, big ? sizeof(blob) : BLOB_BYTES);
	CHECK_EQ(sw_end(&w), 0);

	sw_begin(&w, REC_CHUNK); /* an empty blob frames fine; recv judges it */
	buf_append(&w.rec, digest, DIGEST_LEN);
	CHECK_EQ(sw_end(&w), 0);

	sw_begin(&w, REC_SNAPEND);
	buf_put_u64(&w.rec, UINT64_MAX);
	CHECK_EQ(sw_end(&w), 0);

	CHECK_EQ(sw_finish(&w), 0);
	CHECK_EQ(w.bytes, (uint64_t)lseek(fd, 0, SEEK_END));
	sw_free(&w);
	slurp(fd, out);
	close(fd);
}

static const int order[] = {REC_BEGIN, REC_DATASET, REC_SNAPLIST, REC_SNAP, REC_CHUNK,
			    REC_CHUNK, REC_SNAPEND, REC_END};
#define NREC (int)ARRAY_SIZE(order)

/* Reads a whole stream checking every field. */
static void read_back(const buf_t *s, bool big)
{
	int fd = fd_of(s->data, s->len);
	sreader_t r;
	char str[300];
	CHECK_EQ(sr_init(&r, fd), 0);

	CHECK_EQ(sr_next(&r), REC_BEGIN);
	CHECK_EQ(sr_u32(&r), STREAM_F_RECURSIVE);
	CHECK_EQ(sr_u64(&r), 0);
	sr_str(&r, str, sizeof(str));
	CHECK(!strcmp(str, "pool/top"));
	CHECK_EQ(sr_u64(&r), 2);
	CHECK_EQ(sr_done(&r), 0);

	CHECK_EQ(sr_next(&r), REC_DATASET);
	sr_str(&r, str, sizeof(str));
	CHECK(!strcmp(str, "pool/top"));
	CHECK_EQ(sr_u8(&r), 1);
	CHECK_EQ(sr_u32(&r), 2);
	sr_str(&r, str, sizeof(str));
	CHECK(!strcmp(str, "compression"));
	sr_str(&r, str, sizeof(str));
	CHECK(!strcmp(str, "zstd-3"));
	sr_str(&r, str, sizeof(str));
	CHECK(!strcmp(str, "user:empty"));
	sr_str(&r, str, sizeof(str));
	CHECK(!strcmp(str, ""));
	CHECK_EQ(sr_done(&r), 0);

	CHECK_EQ(sr_next(&r), REC_SNAPLIST);
	sr_str(&r, str, sizeof(str));
	CHECK(!strcmp(str, "pool/top"));
	CHECK_EQ(sr_u32(&r), 2);
	sr_str(&r, str, sizeof(str));
	CHECK(!strcmp(str, "a"));
	CHECK(sr_u64(&r) == 0x1111222233334444ull);
	sr_str(&r, str, sizeof(str));
	CHECK(!strcmp(str, "b"));
	CHECK(sr_u64(&r) == UINT64_MAX);
	CHECK_EQ(sr_done(&r), 0);

	CHECK_EQ(sr_next(&r), REC_SNAP);
	sr_str(&r, str, sizeof(str));
	CHECK(!strcmp(str, "pool/top"));
	sr_str(&r, str, sizeof(str));
	CHECK(!strcmp(str, "b"));
	CHECK(sr_u64(&r) == UINT64_MAX);
	CHECK(sr_u64(&r) == 0x1111222233334444ull);
	CHECK_EQ((int64_t)sr_u64(&r), -5);
	CHECK_EQ(sr_u64(&r), 1000);
	CHECK_EQ(sr_u64(&r), 2000);
	CHECK_EQ(sr_u32(&r), 0);
	CHECK_EQ(sr_u32(&r), 1);
	const uint8_t *ref = sr_bytes(&r, CHUNK_REF_WIRE);
	CHECK(ref != NULL);
	for (size_t i = 0; ref && i < CHUNK_REF_WIRE; i++)
		CHECK_EQ(ref[i], i);
	CHECK_EQ(sr_u32(&r), 0);
	CHECK_EQ(sr_u64(&r), 0);
	CHECK_EQ(sr_done(&r), 0);

	CHECK_EQ(sr_next(&r), REC_CHUNK);
	size_t bl = big ? sizeof(blob) : BLOB_BYTES;
	CHECK_EQ(r.rec.len, DIGEST_LEN + bl);
	const uint8_t *d = sr_bytes(&r, DIGEST_LEN);
	CHECK(d && !memcmp(d, digest, DIGEST_LEN));
	const uint8_t *b = sr_bytes(&r, bl);
	CHECK(b && !memcmp(b, blob, bl));
	CHECK_EQ(sr_done(&r), 0);

	CHECK_EQ(sr_next(&r), REC_CHUNK);
	CHECK_EQ(r.rec.len, DIGEST_LEN);

	CHECK_EQ(sr_next(&r), REC_SNAPEND);
	CHECK(sr_u64(&r) == UINT64_MAX);
	CHECK_EQ(sr_done(&r), 0);

	CHECK_EQ(sr_next(&r), REC_END);
	CHECK_EQ(sr_check_end(&r), 0);
	CHECK_EQ(r.offset, s->len);
	CHECK_EQ(sr_next(&r), -EPIPE); /* nothing after END */
	sr_free(&r);
	close(fd);
}

/* Reads s to the end or the first error; returns the number of good
 * records, and in *err the error (or the last type).  Each good record
 * must be exactly the one of the original stream at that position. */
static int read_all(const buf_t *s, const buf_t *orig, const size_t *at, int *err,
		    bool *end_ok)
{
	int fd = fd_of(s->data, s->len);
	sreader_t r;
	int n = 0, t = sr_init(&r, fd);
	*end_ok = false;
	while (t == 0 && (t = sr_next(&r)) > 0) {
		/* compare with the original record n: type, length, payload */
		if (orig && n < NREC) {
			const uint8_t *o = orig->data + at[n];
			size_t olen = get_u32(o + 1);
			CHECK_EQ(t, o[0]);
			CHECK_EQ(r.rec.len, olen);
			CHECK(!memcmp(r.rec.data, o + 5, olen));
		}
		n++;
		if (t == REC_END) {
			*end_ok = sr_check_end(&r) == 0;
			t = 0;
			break;
		}
		t = 0;
	}
	*err = t;
	sr_free(&r);
	close(fd);
	return n;
}

static void test_roundtrip(void)
{
	buf_t s = {0};
	write_stream(&s, false);
	CHECK(!memcmp(s.data, STREAM_MAGIC, 8));
	CHECK_EQ(get_u32(s.data + 8), STREAM_VERSION);
	read_back(&s, false);
	size_t at[NREC + 1];
	CHECK_EQ(boundaries(&s, at, NREC + 1), NREC);
	CHECK_EQ(at[NREC], s.len);
	for (int i = 0; i < NREC; i++)
		CHECK_EQ(s.data[at[i]], order[i]);
	buf_free(&s);
	/* a record bigger than the read-ahead */
	write_stream(&s, true);
	read_back(&s, true);
	buf_free(&s);
}

/* Every single-bit flip past the header is caught at the damaged record
 * or before it; records before it come back intact. */
static void test_flips(void)
{
	buf_t s = {0}, c = {0};
	write_stream(&s, false);
	size_t at[NREC + 1];
	boundaries(&s, at, NREC + 1);
	int caught_corrupt = 0, caught_pipe = 0;
	for (size_t off = 0; off < s.len; off++) {
		c.len = 0;
		buf_append(&c, s.data, s.len);
		c.data[off] ^= 1u << (off % 8);
		int rec = 0;
		while (rec < NREC && at[rec + 1] <= off)
			rec++;
		int err;
		bool end_ok;
		int n = read_all(&c, &s, at, &err, &end_ok);
		if (off < STREAM_HEADER_LEN) {
			CHECK(err == CAIRN_ECORRUPT || err == CAIRN_EVERSION);
			CHECK_EQ(n, 0);
			continue;
		}
		CHECK(err == CAIRN_ECORRUPT || err == -EPIPE);
		CHECK(!end_ok);
		CHECK_EQ(n, rec); /* exactly the records before the damaged one */
		if (n != rec)
			fprintf(stderr, "flip at %zu (record %d): %d records read, err %d\n", off, rec,
				n, err);
		caught_corrupt += err == CAIRN_ECORRUPT;
		caught_pipe += err == -EPIPE;
	}
	/* a flip in a length field may make the record look longer than the
	 * stream (EPIPE); everything else is a checksum or limit failure */
	CHECK(caught_corrupt > caught_pipe);
	buf_free(&s);
	buf_free(&c);
}

/* A length over the type's limit is refused from the 5-byte frame header
 * alone: the payload is never read (the stream ends right there, so a
 * reader that went for it would see -EPIPE). */
static void test_limits(void)
{
	CHECK_EQ(stream_rec_limit(REC_END), DIGEST_LEN);
	CHECK_EQ(stream_rec_limit(REC_SNAPEND), 8);
	CHECK(stream_rec_limit(REC_CHUNK) >= DIGEST_LEN + CHUNK_MAX_PLAIN);
	for (int type = 0; type <= 256; type++) {
		uint32_t lens[3] = {0, 0xffffffffu, 0};
		int nl = 2;
		if (type >= 1 && type <= REC_MAX_TYPE) {
			lens[0] = stream_rec_limit(type) + 1;
			lens[2] = stream_rec_limit(type); /* at the limit: wants the payload */
			nl = 3;
		}
		for (int k = 0; k < nl; k++) {
			uint8_t b[STREAM_HEADER_LEN + 5];
			memcpy(b, STREAM_MAGIC, 8);
			put_u32(b + 8, STREAM_VERSION);
			b[12] = type;
			put_u32(b + 13, lens[k]);
			int fd = fd_of(b, sizeof(b));
			sreader_t r;
			CHECK_EQ(sr_init(&r, fd), 0);
			int t = sr_next(&r);
			if (k == 2) {
				CHECK_EQ(t, -EPIPE);
			} else {
				CHECK_EQ(t, CAIRN_ECORRUPT);
				CHECK_EQ(r.offset, STREAM_HEADER_LEN); /* nothing consumed */
				/* and nothing allocated for it */
				CHECK(r.in.cap < (2u << 20));
			}
			sr_free(&r);
			close(fd);
		}
	}
	/* a bad magic or version */
	uint8_t h[STREAM_HEADER_LEN];
	memcpy(h, "CAIRNSNX", 8);
	put_u32(h + 8, STREAM_VERSION);
	int fd = fd_of(h, sizeof(h));
	sreader_t r;
	CHECK_EQ(sr_init(&r, fd), CAIRN_ECORRUPT);
	sr_free(&r);
	close(fd);
	memcpy(h, STREAM_MAGIC, 8);
	put_u32(h + 8, STREAM_VERSION + 1);
	fd = fd_of(h, sizeof(h));
	CHECK_EQ(sr_init(&r, fd), CAIRN_EVERSION);
	sr_free(&r);
	close(fd);
	/* the writer refuses a string its u16 length cannot carry */
	fd = memfd_create("w", 0);
	swriter_t w;
	CHECK_EQ(sw_init(&w, fd), 0);
	char *big = malloc(70000);
	memset(big, 'x', 69999);
	big[69999] = 0;
	sw_begin(&w, REC_DATASET);
	CHECK_EQ(sw_put_str(&w, big), -EINVAL);
	CHECK(sw_end(&w) < 0);
	sw_free(&w);
	close(fd);
	free(big);
}

/* Truncation at every byte: the complete records before the cut come
 * back exactly, then -EPIPE (or CAIRN_ECORRUPT), never a bogus record. */
static void test_truncation(void)
{
	buf_t s = {0}, c = {0};
	write_stream(&s, false);
	size_t at[NREC + 1];
	boundaries(&s, at, NREC + 1);
	int pipes = 0;
	for (size_t cut = 0; cut < s.len; cut++) {
		c.len = 0;
		buf_append(&c, s.data, cut);
		int complete = 0;
		while (complete < NREC && at[complete + 1] <= cut)
			complete++;
		int err;
		bool end_ok;
		int n = read_all(&c, &s, at, &err, &end_ok);
		CHECK(err == -EPIPE || err == CAIRN_ECORRUPT);
		CHECK(!end_ok);
		CHECK_EQ(n, cut < STREAM_HEADER_LEN ? 0 : complete);
		pipes += err == -EPIPE;
	}
	CHECK(pipes >= (int)(s.len - STREAM_HEADER_LEN)); /* a cut record is a truncation */
	buf_free(&s);
	buf_free(&c);
}

/* The END checksum catches what per-record checksums cannot: a record
 * dropped, duplicated or moved. */
static void test_end_checksum(void)
{
	buf_t s = {0}, c = {0};
	write_stream(&s, false);
	size_t at[NREC + 1];
	boundaries(&s, at, NREC + 1);
	for (int drop = 0; drop < NREC - 1; drop++) {
		c.len = 0;
		buf_append(&c, s.data, at[drop]);
		buf_append(&c, s.data + at[drop + 1], s.len - at[drop + 1]);
		int err;
		bool end_ok;
		int n = read_all(&c, NULL, NULL, &err, &end_ok);
		CHECK_EQ(err, 0);
		CHECK_EQ(n, NREC - 1);
		CHECK(!end_ok);
	}
	for (int dup = 0; dup < NREC - 1; dup++) {
		c.len = 0;
		buf_append(&c, s.data, at[dup + 1]);
		buf_append(&c, s.data + at[dup], s.len - at[dup]);
		int err;
		bool end_ok;
		read_all(&c, NULL, NULL, &err, &end_ok);
		CHECK_EQ(err, 0);
		CHECK(!end_ok);
	}
	/* swap two neighbours */
	c.len = 0;
	buf_append(&c, s.data, at[4]);
	buf_append(&c, s.data + at[5], at[6] - at[5]);
	buf_append(&c, s.data + at[4], at[5] - at[4]);
	buf_append(&c, s.data + at[6], s.len - at[6]);
	int err;
	bool end_ok;
	read_all(&c, NULL, NULL, &err, &end_ok);
	CHECK(!end_ok || !memcmp(s.data + at[4] + 5, s.data + at[5] + 5, at[5] - at[4] - 5));
	/* an END whose digest is wrong but whose record checksum is right */
	c.len = 0;
	buf_append(&c, s.data, s.len);
	uint8_t *e = c.data + at[NREC - 1];
	e[5] ^= 1;
	put_u64(e + 5 + DIGEST_LEN, XXH3_64bits(e, 5 + DIGEST_LEN));
	CHECK_EQ(read_all(&c, NULL, NULL, &err, &end_ok), NREC);
	CHECK(!end_ok);
	/* sr_check_end on a record that is not END */
	int fd = fd_of(s.data, s.len);
	sreader_t r;
	CHECK_EQ(sr_init(&r, fd), 0);
	CHECK_EQ(sr_next(&r), REC_BEGIN);
	CHECK_EQ(sr_check_end(&r), CAIRN_ECORRUPT);
	sr_free(&r);
	close(fd);
	buf_free(&s);
	buf_free(&c);
}

/* Field readers never read past the payload. */
static void test_fields(void)
{
	int fd = memfd_create("w", 0);
	swriter_t w;
	CHECK_EQ(sw_init(&w, fd), 0);
	sw_begin(&w, REC_SNAPLIST);
	buf_put_u16(&w.rec, 10); /* a string claiming 10 bytes, 3 present */
	buf_append(&w.rec, "abc", 3);
	CHECK_EQ(sw_end(&w), 0);
	sw_begin(&w, REC_SNAPLIST);
	buf_put_u16(&w.rec, 3); /* a string with a NUL */
	buf_append(&w.rec, "a\0b", 3);
	CHECK_EQ(sw_end(&w), 0);
	sw_begin(&w, REC_SNAPLIST);
	sw_put_str(&w, "0123456789"); /* longer than the caller's buffer */
	CHECK_EQ(sw_end(&w), 0);
	sw_begin(&w, REC_SNAPEND);
	buf_put_u32(&w.rec, 7); /* 4 bytes where 8 are read */
	CHECK_EQ(sw_end(&w), 0);
	sw_begin(&w, REC_SNAPEND);
	buf_put_u64(&w.rec, 9);
	buf_put_u8(&w.rec, 0); /* a trailing byte */
	CHECK(sw_end(&w) == 0);
	CHECK_EQ(sw_finish(&w), 0);
	sw_free(&w);
	buf_t s = {0};
	slurp(fd, &s);
	close(fd);

	fd = fd_of(s.data, s.len);
	sreader_t r;
	char str[8];
	CHECK_EQ(sr_init(&r, fd), 0);
	CHECK_EQ(sr_next(&r), REC_SNAPLIST);
	sr_str(&r, str, sizeof(str));
	CHECK(r.bad && str[0] == 0);
	CHECK_EQ(sr_u32(&r), 0); /* stays bad */
	CHECK(sr_done(&r) != 0);
	CHECK_EQ(sr_next(&r), REC_SNAPLIST);
	CHECK(!r.bad); /* reset per record */
	sr_str(&r, str, sizeof(str));
	CHECK(r.bad && str[0] == 0);
	CHECK_EQ(sr_next(&r), REC_SNAPLIST);
	sr_str(&r, str, sizeof(str));
	CHECK(r.bad);
	CHECK(strlen(str) < sizeof(str));
	/* the SNAPEND limit is 8 bytes: 9 is refused at the frame */
	CHECK_EQ(sr_next(&r), REC_SNAPEND);
	CHECK(sr_u64(&r) == 0);
	CHECK(r.bad);
	CHECK(sr_bytes(&r, 0) == NULL); /* even 0 bytes once bad */
	CHECK_EQ(sr_next(&r), CAIRN_ECORRUPT); /* SNAPEND of 9 bytes */
	sr_free(&r);
	close(fd);
	buf_free(&s);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(blob); i++)
		blob[i] = rng() >> 56;
	test_roundtrip();
	test_flips();
	test_limits();
	test_truncation();
	test_end_checksum();
	test_fields();
	UNIT_DONE();
}
