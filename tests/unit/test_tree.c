/* test_tree.c - tree stream encoding, incremental decoding, path order. */
#include "data/tree.h"
#include "unit.h"

#include <errno.h>

/* ---- sample entries ---- */

#define NSAMPLE 13

static chunk_ref_t ref_of(uint8_t seed, uint32_t plain_len)
{
	chunk_ref_t r;
	for (int i = 0; i < DIGEST_LEN; i++)
		r.digest.b[i] = (uint8_t)(seed * 31 + i);
	r.plain_len = plain_len;
	r.stored_len = plain_len / 2 + 64;
	return r;
}

static tree_extent_t chunk_ext(uint8_t seed, uint32_t len)
{
	tree_extent_t x = {.kind = TREE_EXT_CHUNK, .length = len, .ref = ref_of(seed, len)};
	return x;
}

static tree_extent_t hole_ext(uint64_t len)
{
	tree_extent_t x = {.kind = TREE_EXT_HOLE, .length = len};
	return x;
}

static void fill_stat(tree_entry_t *e, uint32_t mode, int seed)
{
	e->mode = mode;
	e->uid = 1000 + seed;
	e->gid = 100 + seed;
	e->atime_ns = 1700000000123456789LL + seed;
	e->mtime_ns = -1234567890LL * seed; /* before 1970 */
	e->ctime_ns = INT64_MAX - seed;
	e->ino = 0xfedcba9876543210ULL + seed;
	e->dev = 0x803 + seed;
	e->nlink = 1 + seed;
}

static void add_xattr(tree_entry_t *e, const char *name, const void *val, uint32_t len)
{
	e->xattrs = realloc(e->xattrs, (e->nxattr + 1) * sizeof(*e->xattrs));
	tree_xattr_t *x = &e->xattrs[e->nxattr++];
	x->name = strdup(name);
	x->len = len;
	x->value = len ? malloc(len) : NULL;
	if (len)
		memcpy(x->value, val, len);
}

static void set_extents(tree_entry_t *e, const tree_extent_t *x, uint32_t n)
{
	e->content = TREE_CONTENT_EXTENTS;
	e->nextent = n;
	e->extents = malloc(n * sizeof(*x));
	memcpy(e->extents, x, n * sizeof(*x));
}

/* One entry of every kind, in stream order. */
static void make_samples(tree_entry_t s[NSAMPLE])
{
	memset(s, 0, NSAMPLE * sizeof(*s));
	static const uint8_t bin[] = {0, 1, 2, 0xff, 0, 's', 'e', 0};

	s[0].type = TREE_DIR; /* the root */
	s[0].path = strdup("");
	fill_stat(&s[0], 040755, 0);
	add_xattr(&s[0], "system.posix_acl_default", bin, sizeof(bin));

	s[1].type = TREE_REG; /* chunks and holes */
	s[1].path = strdup("a");
	fill_stat(&s[1], 0100644, 1);
	tree_extent_t mixed[] = {hole_ext(4096), chunk_ext(1, 70000), hole_ext(1),
				 chunk_ext(2, CHUNK_MAX_PLAIN), chunk_ext(3, 1)};
	set_extents(&s[1], mixed, ARRAY_SIZE(mixed));
	s[1].size = 4096 + 70000 + 1 + CHUNK_MAX_PLAIN + 1;
	add_xattr(&s[1], "user.bin", bin, sizeof(bin));
	add_xattr(&s[1], "user.empty", NULL, 0);
	add_xattr(&s[1], "security.selinux", "system_u:object_r:etc_t:s0", 26);

	s[2].type = TREE_CONT; /* the rest of a's extents */
	tree_extent_t more[] = {chunk_ext(4, 5), hole_ext(UINT64_MAX / 2)};
	set_extents(&s[2], more, ARRAY_SIZE(more));

	s[3].type = TREE_DIR;
	s[3].path = strdup("a dir");
	fill_stat(&s[3], 040700, 3);

	s[4].type = TREE_REG; /* bundled small file */
	s[4].path = strdup("a dir/small");
	fill_stat(&s[4], 0100600, 4);
	s[4].size = 300;
	s[4].content = TREE_CONTENT_BUNDLE;
	s[4].bundle = ref_of(9, 1000);
	s[4].bundle_off = 700;

	s[5].type = TREE_SYMLINK;
	s[5].path = strdup("a dir/sym");
	fill_stat(&s[5], 0120777, 5);
	s[5].link = strdup("../../etc/passwd");

	s[6].type = TREE_HARDLINK;
	s[6].path = strdup("a dir/zz hard");
	fill_stat(&s[6], 0100644, 6);
	s[6].link = strdup("a dir/small");

	s[7].type = TREE_CHR;
	s[7].path = strdup("a.b");
	fill_stat(&s[7], 020666, 7);
	s[7].rdev = 0x0103;

	s[8].type = TREE_BLK;
	s[8].path = strdup("a.c");
	fill_stat(&s[8], 060660, 8);
	s[8].rdev = 0x80000801ULL;

	s[9].type = TREE_FIFO;
	s[9].path = strdup("fifo");
	fill_stat(&s[9], 010644, 9);

	s[10].type = TREE_SOCK;
	s[10].path = strdup("sock");
	fill_stat(&s[10], 0140755, 10);

	s[11].type = TREE_REG; /* empty file */
	s[11].path = strdup("z/\xc3\xa9t\xc3\xa9");
	fill_stat(&s[11], 0100444, 11);

	s[12].type = TREE_REG; /* extents that a TREE_CONT would complete */
	s[12].path = strdup("z/\xff");
	fill_stat(&s[12], 0100644, 12);
	tree_extent_t part[] = {chunk_ext(7, 100)};
	set_extents(&s[12], part, 1);
	s[12].size = 1000;
}

static void free_samples(tree_entry_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tree_entry_clear(&s[i]);
}

static void encode(buf_t *b, const tree_entry_t *s, size_t n)
{
	CHECK_EQ(tree_write_header(b), 0);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(tree_write_entry(b, &s[i]), 0);
}

/* ---- decoding helpers ---- */

typedef struct decoded {
	tree_entry_t e[64];
	size_t n;
	int err;  /* first negative result of next(), 0 if none */
	int end;  /* tree_reader_end() */
} decoded_t;

static void pull(tree_reader_t *r, decoded_t *d)
{
	int rc;
	while (!d->err && (rc = tree_reader_next(r, &d->e[d->n])) != 0) {
		if (rc < 0) {
			d->err = rc;
			break;
		}
		if (++d->n == ARRAY_SIZE(d->e)) {
			d->err = -E2BIG;
			break;
		}
	}
}

/* Decodes data fed in pieces of step bytes (0 = all at once). */
static void decode(const uint8_t *data, size_t len, size_t step, decoded_t *d)
{
	tree_reader_t *r;
	memset(d, 0, sizeof(*d));
	CHECK_EQ(tree_reader_new(&r), 0);
	if (!step)
		step = len ? len : 1;
	for (size_t off = 0; off < len && !d->err; off += step) {
		int rc = tree_reader_feed(r, data + off, MIN(step, len - off));
		if (rc < 0)
			d->err = rc;
		pull(r, d);
	}
	d->end = tree_reader_end(r);
	tree_reader_free(r);
}

static void decoded_free(decoded_t *d)
{
	free_samples(d->e, d->n);
	d->n = 0;
}

static void reencode(const decoded_t *d, buf_t *out)
{
	out->len = 0;
	encode(out, d->e, d->n);
}

static bool same_entries(const decoded_t *d, const tree_entry_t *s, size_t n)
{
	if (d->n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!tree_entry_equal(&d->e[i], &s[i]))
			return false;
	return true;
}

/* ---- tests ---- */

static void test_roundtrip(void)
{
	tree_entry_t s[NSAMPLE];
	buf_t b = {0}, again = {0};
	decoded_t d;
	make_samples(s);
	encode(&b, s, NSAMPLE);
	decode(b.data, b.len, 0, &d);
	CHECK_EQ(d.err, 0);
	CHECK_EQ(d.end, 0);
	CHECK(same_entries(&d, s, NSAMPLE));

	/* Spot-check representation details callers rely on. */
	CHECK(d.e[0].path && d.e[0].path[0] == 0);
	CHECK(d.e[0].link == NULL);
	CHECK(d.e[2].path == NULL && d.e[2].content == TREE_CONTENT_EXTENTS);
	CHECK_EQ(d.e[1].extents[1].length, 70000);
	CHECK_EQ(d.e[1].extents[3].ref.plain_len, CHUNK_MAX_PLAIN);
	CHECK(!memcmp(d.e[1].xattrs[0].value, "\0\1\2\xff\0se\0", 8));
	CHECK(d.e[1].xattrs[1].value == NULL && d.e[1].xattrs[1].len == 0);
	CHECK(!strcmp(d.e[5].link, "../../etc/passwd"));
	CHECK_EQ(d.e[8].rdev, 0x80000801ULL);
	CHECK_EQ(d.e[1].mtime_ns, -1234567890LL);
	CHECK_EQ(d.e[4].bundle_off, 700);

	reencode(&d, &again);
	CHECK(again.len == b.len && !memcmp(again.data, b.data, b.len));

	/* tree_entry_copy is deep and equal. */
	tree_entry_t c;
	for (int i = 0; i < NSAMPLE; i++) {
		CHECK_EQ(tree_entry_copy(&c, &d.e[i]), 0);
		CHECK(tree_entry_equal(&c, &s[i]));
		if (c.path)
			CHECK(c.path != d.e[i].path);
		tree_entry_clear(&c);
		CHECK(c.path == NULL && c.nxattr == 0);
	}
	decoded_free(&d);
	free_samples(s, NSAMPLE);
	buf_free(&b);
	buf_free(&again);
}

static void test_byte_at_a_time(void)
{
	tree_entry_t s[NSAMPLE];
	buf_t b = {0};
	make_samples(s);
	encode(&b, s, NSAMPLE);
	static const size_t steps[] = {1, 2, 3, 7, 13, 64, 1000};
	for (size_t k = 0; k < ARRAY_SIZE(steps); k++) {
		decoded_t d;
		decode(b.data, b.len, steps[k], &d);
		CHECK_EQ(d.err, 0);
		CHECK_EQ(d.end, 0);
		CHECK(same_entries(&d, s, NSAMPLE));
		decoded_free(&d);
	}
	free_samples(s, NSAMPLE);
	buf_free(&b);
}

static void test_truncation(void)
{
	tree_entry_t s[NSAMPLE];
	buf_t b = {0};
	size_t bounds[NSAMPLE + 1], nb = 0;
	make_samples(s);
	CHECK_EQ(tree_write_header(&b), 0);
	bounds[nb++] = b.len;
	for (int i = 0; i < NSAMPLE; i++) {
		CHECK_EQ(tree_write_entry(&b, &s[i]), 0);
		bounds[nb++] = b.len;
	}
	for (size_t cut = 0; cut <= b.len; cut++) {
		size_t whole = 0;
		bool boundary = false;
		for (size_t i = 0; i < nb; i++) {
			if (bounds[i] <= cut)
				whole = i;
			if (bounds[i] == cut)
				boundary = true;
		}
		for (size_t step = 0; step <= 1; step++) {
			decoded_t d;
			decode(b.data, cut, step, &d);
			CHECK_EQ(d.err, 0);
			CHECK(same_entries(&d, s, cut < TREE_HEADER_LEN ? 0 : whole));
			CHECK_EQ(d.end, boundary ? 0 : CAIRN_ECORRUPT);
			decoded_free(&d);
		}
	}
	free_samples(s, NSAMPLE);
	buf_free(&b);
}

static void test_bitflips(void)
{
	tree_entry_t s[NSAMPLE];
	buf_t b = {0}, again = {0};
	make_samples(s);
	/* A small stream: the long extent lists would make this slow. */
	tree_entry_t small[] = {s[0], s[2], s[4], s[5], s[6], s[8]};
	encode(&b, small, ARRAY_SIZE(small));
	static const uint8_t masks[] = {0x01, 0x02, 0x10, 0x80, 0xff};
	int decoded_ok = 0;
	for (size_t i = 0; i < b.len; i++) {
		for (size_t m = 0; m < ARRAY_SIZE(masks); m++) {
			b.data[i] ^= masks[m];
			decoded_t d;
			decode(b.data, b.len, 0, &d);
			if (!d.err && !d.end) {
				reencode(&d, &again);
				CHECK(again.len == b.len && !memcmp(again.data, b.data, b.len));
				decoded_ok++;
			} else {
				CHECK(d.err == CAIRN_ECORRUPT || d.end == CAIRN_ECORRUPT);
			}
			decoded_free(&d);
			b.data[i] ^= masks[m];
		}
	}
	CHECK(decoded_ok > 0); /* flips in times and digests stay valid */
	free_samples(s, NSAMPLE);
	buf_free(&b);
	buf_free(&again);
}

/* Encodes e, lets patch change its body, and expects the reader to refuse it. */
static void expect_corrupt(const tree_entry_t *e, size_t at, const void *bytes, size_t n)
{
	buf_t b = {0};
	CHECK_EQ(tree_write_header(&b), 0);
	CHECK_EQ(tree_write_entry(&b, e), 0);
	size_t body = TREE_HEADER_LEN + 4;
	CHECK(body + at + n <= b.len);
	memcpy(b.data + body + at, bytes, n);
	decoded_t d;
	decode(b.data, b.len, 0, &d);
	if (d.err != CAIRN_ECORRUPT)
		fprintf(stderr, "not refused: patch at %zu\n", at);
	CHECK_EQ(d.err, CAIRN_ECORRUPT);
	CHECK_EQ(d.n, 0);
	CHECK_EQ(d.end, CAIRN_ECORRUPT);
	decoded_free(&d);
	buf_free(&b);
}

static void expect_corrupt_u8(const tree_entry_t *e, size_t at, uint8_t v)
{
	expect_corrupt(e, at, &v, 1);
}

static void expect_corrupt_u16(const tree_entry_t *e, size_t at, uint16_t v)
{
	uint8_t p[2];
	put_u16(p, v);
	expect_corrupt(e, at, p, 2);
}

static void expect_corrupt_u32(const tree_entry_t *e, size_t at, uint32_t v)
{
	uint8_t p[4];
	put_u32(p, v);
	expect_corrupt(e, at, p, 4);
}

static void expect_corrupt_u64(const tree_entry_t *e, size_t at, uint64_t v)
{
	uint8_t p[8];
	put_u64(p, v);
	expect_corrupt(e, at, p, 8);
}

/* Body offsets of a non-continuation record with a 1-byte path and no link. */
enum {
	O_TYPE = 0,
	O_PLEN = 1,
	O_PATH = 3,
	O_SIZE = 4 + 36,
	O_LLEN = 4 + 72,
	O_NX = O_LLEN + 2,
	EXT_CHUNK_WIRE_T = 1 + CHUNK_REF_WIRE,
};

static void test_corrupt_records(void)
{
	tree_entry_t f = {.type = TREE_REG, .path = strdup("f"), .size = 10};
	tree_extent_t x[] = {chunk_ext(1, 6), hole_ext(4)};
	set_extents(&f, x, 2);
	const size_t o_content = O_NX + 2, o_next = o_content + 1, o_ext = o_next + 4;

	expect_corrupt_u8(&f, O_TYPE, 0);
	expect_corrupt_u8(&f, O_TYPE, 10);
	expect_corrupt_u16(&f, O_PLEN, 1000);   /* past the body */
	expect_corrupt_u16(&f, O_PLEN, 0xffff); /* past the body, > TREE_MAX_PATH */
	expect_corrupt_u8(&f, O_PATH, 0);       /* NUL in path */
	expect_corrupt_u8(&f, O_PATH, '/');
	expect_corrupt_u8(&f, O_PATH, '.');
	expect_corrupt_u16(&f, O_LLEN, 3);      /* a link on a REG, or past the body */
	expect_corrupt_u16(&f, O_NX, 0xffff);   /* 65535 xattrs in a few bytes */
	expect_corrupt_u8(&f, o_content, 3);
	expect_corrupt_u32(&f, o_next, 0xffffffff);
	expect_corrupt_u32(&f, o_next, TREE_MAX_EXTENTS + 1);
	expect_corrupt_u32(&f, o_next, 3);      /* fewer bytes than extents */
	expect_corrupt_u32(&f, o_next, 1);      /* trailing bytes */
	expect_corrupt_u8(&f, o_ext, 3);        /* extent kind */
	expect_corrupt_u32(&f, o_ext + 1 + 32, 0);                   /* empty chunk */
	expect_corrupt_u32(&f, o_ext + 1 + 32, CHUNK_MAX_PLAIN + 1); /* huge chunk */
	expect_corrupt_u64(&f, o_ext + EXT_CHUNK_WIRE_T + 1, 0);     /* empty hole */
	expect_corrupt_u64(&f, O_SIZE, 9);      /* extents sum past size */
	expect_corrupt_u64(&f, o_ext + EXT_CHUNK_WIRE_T + 1, UINT64_MAX); /* sum wraps */

	/* Empty paths only for a directory or file (the root). */
	tree_entry_t fifo = {.type = TREE_FIFO, .path = strdup("p")};
	expect_corrupt_u16(&fifo, O_PLEN, 0); /* leaves a trailing byte too... */
	tree_entry_t root = {.type = TREE_DIR};
	expect_corrupt_u8(&root, O_TYPE, TREE_FIFO);
	expect_corrupt_u8(&root, O_TYPE, TREE_SYMLINK);

	/* Content on a non-file. */
	tree_entry_t bun = {.type = TREE_REG, .path = strdup("b"), .size = 5,
			    .content = TREE_CONTENT_BUNDLE, .bundle = ref_of(1, 10),
			    .bundle_off = 5};
	expect_corrupt_u8(&bun, O_TYPE, TREE_DIR);
	expect_corrupt_u8(&f, O_TYPE, TREE_FIFO);
	/* Bundle range past the bundle, and wrapping around. */
	const size_t o_bref = O_NX + 2 + 1;
	expect_corrupt_u32(&bun, o_bref + CHUNK_REF_WIRE, 6);
	expect_corrupt_u64(&bun, O_SIZE, UINT64_MAX);
	expect_corrupt_u32(&bun, o_bref + 32, 0);
	expect_corrupt_u32(&bun, o_bref + 32, CHUNK_MAX_PLAIN + 1);

	/* Xattrs: empty name, NUL in name, value too large or past the body. */
	tree_entry_t xa = {.type = TREE_DIR, .path = strdup("x")};
	add_xattr(&xa, "user.k", "v", 1);
	const size_t o_xname = O_NX + 2;
	expect_corrupt_u8(&xa, o_xname, 0);
	expect_corrupt_u8(&xa, o_xname + 1 + 2, 0);
	expect_corrupt_u32(&xa, o_xname + 1 + 6, TREE_MAX_XATTR_VALUE + 1);
	expect_corrupt_u32(&xa, o_xname + 1 + 6, 2);

	/* Links: NUL in a target, a hardlink out of the tree, a link on a dir. */
	tree_entry_t hl = {.type = TREE_HARDLINK, .path = strdup("h"), .link = strdup("a/b")};
	expect_corrupt(&hl, O_LLEN + 2, "../", 3);
	expect_corrupt(&hl, O_LLEN + 2, "a//", 3);
	expect_corrupt(&hl, O_LLEN + 2, "a\0b", 3);
	expect_corrupt_u8(&hl, O_TYPE, TREE_DIR); /* link on a dir */
	tree_entry_t sl = {.type = TREE_SYMLINK, .path = strdup("s"), .link = strdup("x")};
	expect_corrupt_u8(&sl, O_LLEN + 2, 0);

	/* Continuation records: content must be EXTENTS. */
	tree_entry_t cont = {.type = TREE_CONT};
	set_extents(&cont, x, 2);
	expect_corrupt_u8(&cont, 1, TREE_CONTENT_NONE);
	expect_corrupt_u8(&cont, 1, TREE_CONTENT_BUNDLE);
	expect_corrupt_u8(&cont, 6, 0);

	tree_entry_t all[] = {f, fifo, root, bun, xa, hl, sl, cont};
	free_samples(all, ARRAY_SIZE(all));
}

static void feed_all(tree_reader_t *r, const void *p, size_t n)
{
	CHECK_EQ(tree_reader_feed(r, p, n), 0);
}

static void test_stream_errors(void)
{
	tree_reader_t *r;
	tree_entry_t e = {0};
	uint8_t hdr[TREE_HEADER_LEN], len4[4];
	memcpy(hdr, TREE_MAGIC, 8);
	put_u32(hdr + 8, TREE_VERSION);

	/* body_len over the limit fails as soon as its 4 bytes are in. */
	CHECK_EQ(tree_reader_new(&r), 0);
	feed_all(r, hdr, sizeof(hdr));
	put_u32(len4, TREE_MAX_RECORD + 1);
	feed_all(r, len4, 4);
	CHECK_EQ(tree_reader_next(r, &e), CAIRN_ECORRUPT);
	CHECK_EQ(tree_reader_next(r, &e), CAIRN_ECORRUPT); /* sticky */
	CHECK_EQ(tree_reader_feed(r, hdr, 4), CAIRN_ECORRUPT);
	CHECK_EQ(tree_reader_end(r), CAIRN_ECORRUPT);
	CHECK(e.path == NULL);
	tree_reader_free(r);

	/* The largest body length waits for its bytes. */
	CHECK_EQ(tree_reader_new(&r), 0);
	feed_all(r, hdr, sizeof(hdr));
	put_u32(len4, TREE_MAX_RECORD);
	feed_all(r, len4, 4);
	CHECK_EQ(tree_reader_next(r, &e), 0);
	CHECK_EQ(tree_reader_end(r), CAIRN_ECORRUPT);
	tree_reader_free(r);

	/* An empty body. */
	CHECK_EQ(tree_reader_new(&r), 0);
	feed_all(r, hdr, sizeof(hdr));
	put_u32(len4, 0);
	feed_all(r, len4, 4);
	CHECK_EQ(tree_reader_next(r, &e), CAIRN_ECORRUPT);
	tree_reader_free(r);

	/* Bad magic shows early; bad version at the header's end. */
	CHECK_EQ(tree_reader_new(&r), 0);
	feed_all(r, "CAIRNX", 6);
	CHECK_EQ(tree_reader_next(r, &e), CAIRN_ECORRUPT);
	tree_reader_free(r);
	CHECK_EQ(tree_reader_new(&r), 0);
	feed_all(r, "CAIRN", 5);
	CHECK_EQ(tree_reader_next(r, &e), 0);
	hdr[8] = 2;
	feed_all(r, hdr + 5, 7);
	CHECK_EQ(tree_reader_next(r, &e), CAIRN_ECORRUPT);
	hdr[8] = TREE_VERSION;
	tree_reader_free(r);

	/* No bytes at all: not a stream.  A header alone: an empty tree. */
	CHECK_EQ(tree_reader_new(&r), 0);
	CHECK_EQ(tree_reader_next(r, &e), 0);
	CHECK_EQ(tree_reader_end(r), CAIRN_ECORRUPT);
	tree_reader_free(r);
	CHECK_EQ(tree_reader_new(&r), 0);
	feed_all(r, hdr, sizeof(hdr));
	CHECK_EQ(tree_reader_end(r), 0);
	tree_reader_free(r);

	/* A whole record never pulled is not a clean end. */
	buf_t b = {0};
	tree_entry_t d = {.type = TREE_DIR, .path = strdup("d")};
	encode(&b, &d, 1);
	CHECK_EQ(tree_reader_new(&r), 0);
	feed_all(r, b.data, b.len);
	CHECK_EQ(tree_reader_end(r), CAIRN_ECORRUPT);
	CHECK_EQ(tree_reader_next(r, &e), 1);
	CHECK_EQ(tree_reader_end(r), 0);
	tree_entry_clear(&e);
	tree_reader_free(r);
	tree_entry_clear(&d);
	buf_free(&b);
}

static void expect_write_einval(const tree_entry_t *e)
{
	buf_t b = {0};
	CHECK_EQ(tree_write_entry(&b, e), -EINVAL);
	CHECK_EQ(b.len, 0);
	buf_free(&b);
}

static void test_writer_rejects(void)
{
	char longp[TREE_MAX_PATH + 2];
	memset(longp, 'a', sizeof(longp));
	longp[TREE_MAX_PATH + 1] = 0;
	const char *bad[] = {longp, "/a", "a/", "a//b", ".", "..", "./a", "a/.."};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		tree_entry_t e = {.type = TREE_DIR, .path = (char *)bad[i]};
		expect_write_einval(&e);
	}
	longp[TREE_MAX_PATH] = 0; /* exactly the limit is fine */
	tree_entry_t ok = {.type = TREE_DIR, .path = longp};
	buf_t b = {0};
	CHECK_EQ(tree_write_entry(&b, &ok), 0);

	tree_entry_t e = {.type = 0, .path = "x"};
	expect_write_einval(&e);
	e.type = 10;
	expect_write_einval(&e);
	e.type = TREE_SYMLINK;
	expect_write_einval(&e); /* no target */
	e.path = "";
	e.link = "t";
	expect_write_einval(&e); /* only dirs and files may be the root */
	e.path = "x";
	char *biglink = malloc(70000);
	memset(biglink, 'l', 69999);
	biglink[69999] = 0;
	e.link = biglink;
	expect_write_einval(&e);
	biglink[UINT16_MAX] = 0;
	CHECK_EQ(tree_write_entry(&b, &e), 0);
	free(biglink);
	e.type = TREE_HARDLINK;
	e.link = "../x";
	expect_write_einval(&e);
	e.type = TREE_REG;
	e.link = "x";
	expect_write_einval(&e); /* a link on a file */
	e.link = NULL;

	/* Xattrs. */
	tree_xattr_t xs[2] = {{.name = "", .value = (uint8_t *)"v", .len = 1}};
	e.xattrs = xs;
	e.nxattr = 1;
	expect_write_einval(&e);
	char name[300];
	memset(name, 'n', sizeof(name));
	name[256] = 0;
	xs[0].name = name;
	expect_write_einval(&e);
	name[255] = 0;
	CHECK_EQ(tree_write_entry(&b, &e), 0);
	uint8_t *big = calloc(1, TREE_MAX_XATTR_VALUE + 1);
	xs[0].value = big;
	xs[0].len = TREE_MAX_XATTR_VALUE + 1;
	expect_write_einval(&e);
	xs[0].len = TREE_MAX_XATTR_VALUE;
	CHECK_EQ(tree_write_entry(&b, &e), 0);
	/* A record over TREE_MAX_RECORD: 65 values of 64 KiB. */
	tree_xattr_t *many = calloc(65, sizeof(*many));
	for (int i = 0; i < 65; i++)
		many[i] = (tree_xattr_t){.name = "user.x", .value = big, .len = TREE_MAX_XATTR_VALUE};
	e.xattrs = many;
	e.nxattr = 65;
	expect_write_einval(&e);
	e.nxattr = 60;
	CHECK_EQ(tree_write_entry(&b, &e), 0);
	free(many);
	free(big);
	e.xattrs = NULL;
	e.nxattr = 0;

	/* Content. */
	tree_extent_t *x = calloc(TREE_MAX_EXTENTS + 1, sizeof(*x));
	for (uint32_t i = 0; i <= TREE_MAX_EXTENTS; i++)
		x[i] = hole_ext(1);
	e.content = TREE_CONTENT_EXTENTS;
	e.extents = x;
	e.nextent = TREE_MAX_EXTENTS + 1;
	e.size = UINT64_MAX;
	expect_write_einval(&e);
	e.nextent = TREE_MAX_EXTENTS; /* the limit fits in a record */
	CHECK_EQ(tree_write_entry(&b, &e), 0);
	e.size = TREE_MAX_EXTENTS - 1;
	expect_write_einval(&e); /* extents past size */
	e.nextent = 2;
	x[1] = chunk_ext(1, 10);
	x[1].length = 11;
	expect_write_einval(&e); /* length != plain_len */
	x[1] = chunk_ext(1, 0);
	expect_write_einval(&e);
	x[1] = hole_ext(0);
	expect_write_einval(&e);
	x[1].kind = 3;
	expect_write_einval(&e);
	x[1] = hole_ext(1);
	e.type = TREE_DIR;
	expect_write_einval(&e); /* content on a dir */
	e.type = TREE_CONT;
	CHECK_EQ(tree_write_entry(&b, &e), 0);
	e.content = TREE_CONTENT_NONE;
	expect_write_einval(&e);
	e.type = TREE_REG;
	e.content = 7;
	expect_write_einval(&e);
	e.content = TREE_CONTENT_BUNDLE;
	e.bundle = ref_of(1, 100);
	e.size = 60;
	e.bundle_off = 41;
	expect_write_einval(&e);
	e.bundle_off = 40;
	CHECK_EQ(tree_write_entry(&b, &e), 0);
	e.size = UINT64_MAX;
	expect_write_einval(&e);

	/* Everything written above decodes. */
	tree_reader_t *r;
	buf_t hb = {0};
	CHECK_EQ(tree_write_header(&hb), 0);
	CHECK_EQ(tree_reader_new(&r), 0);
	feed_all(r, hb.data, hb.len);
	feed_all(r, b.data, b.len);
	tree_entry_t got;
	int n = 0, rc;
	while ((rc = tree_reader_next(r, &got)) == 1) {
		n++;
		tree_entry_clear(&got);
	}
	CHECK_EQ(rc, 0);
	CHECK_EQ(n, 8);
	CHECK_EQ(tree_reader_end(r), 0);
	tree_reader_free(r);
	free(x);
	buf_free(&b);
	buf_free(&hb);
}

static void test_path_check(void)
{
	static const char *good[] = {"", "a", "a/b", "a.b", "...", "..a", "a..", ".a/.b",
				     "a b/c\xff"};
	static const char *bad[] = {"/a", "a/", "a//b", "./a", "a/..", "..", ".", "/",
				    "a/./b", "a/../b"};
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		CHECK_EQ(tree_path_check(good[i], strlen(good[i])), 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK_EQ(tree_path_check(bad[i], strlen(bad[i])), CAIRN_ECORRUPT);
	CHECK_EQ(tree_path_check("a\0b", 3), CAIRN_ECORRUPT);
	CHECK_EQ(tree_path_check("a\0", 2), CAIRN_ECORRUPT);
	char p[TREE_MAX_PATH + 1];
	memset(p, 'x', sizeof(p));
	CHECK_EQ(tree_path_check(p, TREE_MAX_PATH), 0);
	CHECK_EQ(tree_path_check(p, TREE_MAX_PATH + 1), CAIRN_ECORRUPT);
}

static int sgn(int v)
{
	return (v > 0) - (v < 0);
}

static void test_path_cmp(void)
{
	/* Each strictly before the next. */
	static const char *order[] = {"", "a", "a/b", "a/b/c", "a/b.c", "a/c", "a!", "a-",
				      "a.b", "a.b/x", "ab", "b", "\x7f", "\xc3\xa9", "\xff"};
	for (size_t i = 0; i < ARRAY_SIZE(order); i++) {
		CHECK_EQ(tree_path_cmp(order[i], order[i]), 0);
		for (size_t j = i + 1; j < ARRAY_SIZE(order); j++) {
			CHECK(tree_path_cmp(order[i], order[j]) < 0);
			CHECK(tree_path_cmp(order[j], order[i]) > 0);
		}
	}
	CHECK_EQ(sgn(tree_path_cmp("a", "a/b")), -1);
	CHECK_EQ(sgn(tree_path_cmp("a/b", "a.b")), -1);
	CHECK_EQ(sgn(tree_path_cmp("a.b", "ab")), -1);
	CHECK_EQ(sgn(tree_path_cmp("a/x", "a.b")), -1);
	CHECK_EQ(sgn(tree_path_cmp("a!/z", "a/")), 1);
}

/* ---- qsort with tree_path_cmp equals a depth-first walk ---- */

typedef struct paths {
	char **p;
	size_t n, cap;
} paths_t;

static uint64_t rng = 88172645463325252ULL;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

static void paths_add(paths_t *ps, const char *p)
{
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 64;
		ps->p = realloc(ps->p, ps->cap * sizeof(*ps->p));
	}
	ps->p[ps->n++] = strdup(p);
}

static int strcmp_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int pathcmp_p(const void *a, const void *b)
{
	return tree_path_cmp(*(char *const *)a, *(char *const *)b);
}

/* Names built from bytes on both sides of '/' so that sibling order and
 * component order disagree with plain strcmp. */
static void random_name(char *out)
{
	static const char alpha[] = "!-.0a.-Z\x7f\xc3";
	int n = 1 + rnd(3);
	for (int i = 0; i < n; i++)
		out[i] = alpha[rnd(sizeof(alpha) - 1)];
	out[n] = 0;
	if (!strcmp(out, ".") || !strcmp(out, ".."))
		strcpy(out, "x");
}

/* Visits dir (its own path first), then its children in bytewise order. */
static void walk(paths_t *out, const char *dir, int depth)
{
	paths_add(out, dir);
	if (depth <= 0)
		return;
	paths_t kids = {0};
	int n = rnd(8);
	for (int i = 0; i < n; i++) {
		char name[8];
		random_name(name);
		paths_add(&kids, name);
	}
	if (kids.n)
		qsort(kids.p, kids.n, sizeof(char *), strcmp_p);
	for (size_t i = 0; i < kids.n; i++) {
		if (i && !strcmp(kids.p[i], kids.p[i - 1]))
			continue; /* duplicate name */
		char sub[256];
		snprintf(sub, sizeof(sub), "%s%s%s", dir, *dir ? "/" : "", kids.p[i]);
		walk(out, sub, depth - 1 - (int)rnd(2));
	}
	for (size_t i = 0; i < kids.n; i++)
		free(kids.p[i]);
	free(kids.p);
}

static void test_sort_is_dfs(void)
{
	for (int round = 0; round < 50; round++) {
		paths_t dfs = {0};
		walk(&dfs, "", 5);
		char **shuf = malloc(dfs.n * sizeof(char *));
		memcpy(shuf, dfs.p, dfs.n * sizeof(char *));
		for (size_t i = dfs.n; i > 1; i--) {
			size_t j = rnd(i);
			char *t = shuf[i - 1];
			shuf[i - 1] = shuf[j];
			shuf[j] = t;
		}
		qsort(shuf, dfs.n, sizeof(char *), pathcmp_p);
		size_t same = 0;
		for (size_t i = 0; i < dfs.n; i++)
			same += shuf[i] == dfs.p[i];
		CHECK_EQ(same, dfs.n);
		for (size_t i = 0; i < dfs.n; i++)
			free(dfs.p[i]);
		free(dfs.p);
		free(shuf);
	}
}

int main(void)
{
	test_roundtrip();
	test_byte_at_a_time();
	test_truncation();
	test_bitflips();
	test_corrupt_records();
	test_stream_errors();
	test_writer_rejects();
	test_path_check();
	test_path_cmp();
	test_sort_is_dfs();
	UNIT_DONE();
}
