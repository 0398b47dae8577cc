/* test_gc.c - GC internals against straightforward oracles.
 *
 * - Marker parity: the batched path (LRU, bounded pending list, sorted
 *   flushes by inode / digest / arrival, directory fds, grouping under a
 *   small fd budget, parallel touching) must mark exactly the chunks, and
 *   report exactly the missing ones, that gc_touch_reference (utimensat by
 *   path, each reference on arrival) does, for every combination.
 * - Quarantine: a "<hex>.gc" left by a killed sweep is put back by a touch.
 * - Index walker: with index chunks skipped when seen before, the union of
 *   delivered records equals the union of the indexes (idxrd); crafted
 *   streams check straddling records and a chunk seen at another record
 *   alignment.
 * - Range set: passes over ranges of directories give exactly the input.
 * - Public API: second GC refused (-EBUSY), atime check refusal, dry run
 *   lists exactly what the real run removes, status round trip, interrupt.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "maint/gc.h"
#include "data/snapio.h"
#include "unit.h"

static char tmpdir[] = "/tmp/test_gc.XXXXXX";

static uint64_t rs = 0x1234567;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static digest_t rand_digest(void)
{
	digest_t d;
	for (int i = 0; i < 4; i++) {
		uint64_t x = rnd();
		memcpy(d.b + 8 * i, &x, 8);
	}
	return d;
}

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
	return remove(p);
}

static void rmtree(const char *p)
{
	nftw(p, rm_cb, 64, FTW_DEPTH | FTW_PHYS);
}

/* ---- names ---- */

static void test_names(void)
{
	char hex[DIGEST_HEX_LEN + 1], name[128];
	digest_t d = rand_digest();
	digest_to_hex(&d, hex);
	unsigned dir = gc_dir_of(&d);
	int pid = 0;
	CHECK_EQ(gc_name_kind(hex, dir, &pid), GC_NAME_CHUNK);
	CHECK_EQ(gc_name_kind(hex, dir ^ 1, &pid), GC_NAME_OTHER);
	snprintf(name, sizeof(name), "%s.tmp.123.45", hex);
	CHECK_EQ(gc_name_kind(name, dir, &pid), GC_NAME_TEMP);
	CHECK_EQ(pid, 123);
	snprintf(name, sizeof(name), "%s.tmp.123.", hex);
	CHECK_EQ(gc_name_kind(name, dir, &pid), GC_NAME_OTHER);
	snprintf(name, sizeof(name), "%s.tmp.x.1", hex);
	CHECK_EQ(gc_name_kind(name, dir, &pid), GC_NAME_OTHER);
	snprintf(name, sizeof(name), "%s.gc", hex);
	CHECK_EQ(gc_name_kind(name, dir, &pid), GC_NAME_QUARANTINE);
	snprintf(name, sizeof(name), "%s.bad", hex);
	CHECK_EQ(gc_name_kind(name, dir, &pid), GC_NAME_OTHER);
	CHECK_EQ(gc_name_kind("short", dir, &pid), GC_NAME_OTHER);
	hex[10] = 'G';
	CHECK_EQ(gc_name_kind(hex, dir, &pid), GC_NAME_OTHER);
	char dn[5];
	gc_dir_name(0xab0f, dn);
	CHECK(!strcmp(dn, "ab0f"));
}

/* ---- marker parity ---- */

#define NFILES 6000
#define NREFS 40000

static char chunkdir[300];
static int chunkfd;
static digest_t files[NFILES];
static digest_t refs[NREFS];
static const int64_t OLD = 1000000000; /* 2001 */

static void make_files(void)
{
	snprintf(chunkdir, sizeof(chunkdir), "%s/chunks", tmpdir);
	mkdir(chunkdir, 0700);
	chunkfd = open(chunkdir, O_RDONLY | O_DIRECTORY);
	/* Few directories hold many files, so flushes span few and many. */
	for (int i = 0; i < NFILES; i++) {
		files[i] = rand_digest();
		if (i % 3)
			files[i].b[0] = 0x42; /* crowd 256 directories */
		char hex[DIGEST_HEX_LEN + 1], path[80];
		digest_to_hex(&files[i], hex);
		snprintf(path, sizeof(path), "%.4s", hex);
		mkdirat(chunkfd, path, 0700);
		snprintf(path, sizeof(path), "%.4s/%s", hex, hex);
		int fd = openat(chunkfd, path, O_CREAT | O_WRONLY, 0600);
		CHECK(fd >= 0);
		close(fd);
	}
	/* References: repeats (near and far), and missing chunks, some in
	 * directories that do not exist. */
	for (int i = 0; i < NREFS; i++) {
		uint64_t k = rnd() % 100;
		if (k < 5) {
			refs[i] = rand_digest(); /* missing */
			if (k < 2)
				refs[i].b[0] = 0x42; /* in an existing directory */
		} else if (k < 60 && i > 10) {
			refs[i] = refs[i - 1 - rnd() % 10]; /* recent repeat */
		} else {
			refs[i] = files[rnd() % NFILES];
		}
	}
}

static void reset_atimes(void)
{
	struct timespec ts[2] = {{OLD, 0}, {0, UTIME_OMIT}};
	for (int i = 0; i < NFILES; i++) {
		char hex[DIGEST_HEX_LEN + 1], path[80];
		digest_to_hex(&files[i], hex);
		snprintf(path, sizeof(path), "%.4s/%s", hex, hex);
		utimensat(chunkfd, path, ts, 0);
	}
}

/* Which files were touched (atime no longer OLD), as a bitmap. */
static void marked(bool *out)
{
	for (int i = 0; i < NFILES; i++) {
		char hex[DIGEST_HEX_LEN + 1], path[80];
		digest_to_hex(&files[i], hex);
		snprintf(path, sizeof(path), "%.4s/%s", hex, hex);
		struct stat st;
		out[i] = fstatat(chunkfd, path, &st, 0) == 0 && st.st_atime > OLD + 86400;
	}
}

typedef struct missing {
	digest_t *v;
	size_t n, cap;
} missing_t;

static void add_missing(const digest_t *d, int64_t owner, void *arg)
{
	missing_t *m = arg;
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->v = realloc(m->v, m->cap * sizeof(*m->v));
	}
	m->v[m->n++] = *d;
	CHECK(owner == 7 || owner == 8);
}

static int dcmp(const void *a, const void *b)
{
	return digest_cmp(a, b);
}

/* Sorted, deduplicated. */
static void normalize(missing_t *m)
{
	if (!m->n)
		return;
	qsort(m->v, m->n, sizeof(*m->v), dcmp);
	size_t k = 1;
	for (size_t i = 1; i < m->n; i++)
		if (digest_cmp(&m->v[i], &m->v[k - 1]))
			m->v[k++] = m->v[i];
	m->n = k;
}

#define SHORT 3000 /* references used with the tiny batches */

static void test_marker_parity(void)
{
	make_files();
	/* The reference: one touch per reference, on arrival; for the first
	 * SHORT references and for all. */
	missing_t ref_missing[2] = {{0}};
	static bool ref_marked[2][NFILES], got[NFILES];
	size_t nmarked[2] = {0};
	for (int v = 0; v < 2; v++) {
		reset_atimes();
		for (int i = 0; i < (v ? NREFS : SHORT); i++)
			if (gc_touch_reference(chunkfd, &refs[i]) == -ENOENT)
				add_missing(&refs[i], 7, &ref_missing[v]);
		normalize(&ref_missing[v]);
		marked(ref_marked[v]);
		for (int i = 0; i < NFILES; i++)
			nmarked[v] += ref_marked[v][i];
	}
	CHECK(nmarked[1] > NFILES / 2 && ref_missing[1].n > 100);

	static const cairn_gc_order orders[] = {CAIRN_GC_ORDER_INODE, CAIRN_GC_ORDER_DIGEST,
						CAIRN_GC_ORDER_NONE};
	static const size_t caps[] = {0, 1, 100, 1 << 20};
	static const size_t batches[] = {1, 7, 1000, NREFS + 5};
	static const unsigned budgets[] = {0, 3};
	int combos = 0, bad = 0;
	for (size_t o = 0; o < ARRAY_SIZE(orders); o++)
		for (size_t c = 0; c < ARRAY_SIZE(caps); c++)
			for (size_t b = 0; b < ARRAY_SIZE(batches); b++)
				for (size_t f = 0; f < ARRAY_SIZE(budgets); f++) {
					int v = batches[b] > 7;
					size_t nrefs = v ? NREFS : SHORT;
					reset_atimes();
					missing_t got_missing = {0};
					gc_marker_opts_t mo = {.chunkfd = chunkfd, .order = orders[o],
							       .batch = batches[b],
							       .cache_capacity = caps[c],
							       .fd_budget = budgets[f],
							       .io_threads = 1 + (int)(c % 3) * 3,
							       .missing = add_missing,
							       .arg = &got_missing};
					gc_marker_t *m;
					CHECK_EQ(gc_marker_new(&mo, &m), 0);
					gc_marker_set_threads(m, 1 + (int)(b % 2));
					/* Offered in uneven pieces, from two owners. */
					int r = 0;
					for (size_t i = 0; i < nrefs && r == 0;) {
						size_t k = 1 + rnd() % 3000;
						if (i + k > nrefs)
							k = nrefs - i;
						r = gc_marker_add(m, refs + i, k, (i & 1) ? 7 : 8);
						i += k;
					}
					if (r == 0)
						r = gc_marker_flush(m);
					CHECK_EQ(r, 0);
					gc_mark_stats_t s;
					gc_marker_stats(m, &s);
					CHECK_EQ(s.offered, nrefs);
					CHECK_EQ(s.hits + s.misses, nrefs);
					CHECK_EQ(s.touched + s.missing, s.misses);
					if (caps[c] == 0)
						CHECK_EQ(s.hits, 0);
					if (caps[c] >= NREFS)
						CHECK_EQ(s.touched, nmarked[v]);
					gc_marker_free(m);
					marked(got);
					normalize(&got_missing);
					bool same = !memcmp(got, ref_marked[v], sizeof(got)) &&
						    got_missing.n == ref_missing[v].n &&
						    !memcmp(got_missing.v, ref_missing[v].v,
							    got_missing.n * sizeof(digest_t));
					if (!same) {
						bad++;
						fprintf(stderr,
							"parity: order %d cap %zu batch %zu budget %u "
							"differs\n",
							orders[o], caps[c], batches[b], budgets[f]);
					}
					combos++;
					free(got_missing.v);
				}
	CHECK_EQ(bad, 0);
	fprintf(stderr, "marker parity: %d combinations agree with the reference\n", combos);
	free(ref_missing[0].v);
	free(ref_missing[1].v);
}

static void test_quarantine(void)
{
	/* A chunk sweep had renamed away when it was killed. */
	char hex[DIGEST_HEX_LEN + 1], from[90], to[90];
	digest_to_hex(&files[0], hex);
	snprintf(from, sizeof(from), "%.4s/%s", hex, hex);
	snprintf(to, sizeof(to), "%.4s/%s.gc", hex, hex);
	CHECK_EQ(renameat(chunkfd, from, chunkfd, to), 0);
	missing_t mm = {0};
	gc_marker_opts_t mo = {.chunkfd = chunkfd, .batch = 10, .cache_capacity = 10,
			       .missing = add_missing, .arg = &mm};
	gc_marker_t *m;
	CHECK_EQ(gc_marker_new(&mo, &m), 0);
	CHECK_EQ(gc_marker_add(m, &files[0], 1, 7), 0);
	CHECK_EQ(gc_marker_flush(m), 0);
	gc_mark_stats_t s;
	gc_marker_stats(m, &s);
	CHECK_EQ(s.restored, 1);
	CHECK_EQ(mm.n, 0);
	CHECK(faccessat(chunkfd, from, F_OK, 0) == 0);
	CHECK(faccessat(chunkfd, to, F_OK, 0) < 0);
	gc_marker_free(m);
	/* With the chunk back in place, a leftover copy just goes. */
	int fd = openat(chunkfd, to, O_CREAT | O_WRONLY, 0600);
	close(fd);
	char dn[5];
	gc_dir_name(gc_dir_of(&files[0]), dn);
	int dfd = openat(chunkfd, dn, O_RDONLY | O_DIRECTORY);
	CHECK_EQ(chunk_unquarantine(dfd, hex), 0);
	CHECK(faccessat(chunkfd, to, F_OK, 0) < 0);
	CHECK(faccessat(chunkfd, from, F_OK, 0) == 0);
	close(dfd);
	free(mm.v);
}

/* ---- index walker ---- */

typedef struct collected {
	refset_t set;
	uint64_t n;
} collected_t;

static int collect(const chunk_ref_t *r, size_t n, void *arg)
{
	collected_t *c = arg;
	for (size_t i = 0; i < n; i++)
		refset_add(&c->set, &r[i]);
	c->n += n;
	return 0;
}

static chunk_ref_t rand_ref(void)
{
	chunk_ref_t r = {.digest = rand_digest(), .plain_len = 1 + rnd() % 100000,
			 .stored_len = 1 + rnd() % 100000};
	return r;
}

static bool sets_equal(const refset_t *a, const refset_t *b)
{
	chunk_ref_t *x, *y;
	size_t nx, ny;
	refset_sorted(a, &x, &nx);
	refset_sorted(b, &y, &ny);
	bool eq = nx == ny && !memcmp(x, y, nx * sizeof(*x));
	free(x);
	free(y);
	return eq;
}

static void test_idxwalk_overlap(chunkstore_t *cs)
{
	/* 12 indexes of one slowly changing set: most index chunks recur. */
	enum { BASE = 40000, NIDX = 12 };
	refset_t cur = {0}, all = {0};
	chunk_ref_t *live = malloc(BASE * sizeof(*live));
	for (int i = 0; i < BASE; i++)
		live[i] = rand_ref();
	buf_t roots[NIDX] = {{0}};
	for (int k = 0; k < NIDX; k++) {
		for (int c = 0; c < k % 3; c++)
			live[rnd() % BASE] = rand_ref();
		refset_free(&cur);
		for (int i = 0; i < BASE; i++) {
			refset_add(&cur, &live[i]);
			refset_add(&all, &live[i]);
		}
		uint64_t a, b;
		CHECK_EQ(index_write(cs, &cur, &roots[k], &a, &b), 0);
	}
	CHECK_EQ(chunkstore_flush(cs), 0);
	for (int edges = 0; edges < 2; edges++) {
		gc_idxwalk_t *w;
		CHECK_EQ(gc_idxwalk_new(edges ? 4096 : 0, &w), 0);
		collected_t got = {0};
		for (int k = 0; k < NIDX; k++) {
			chunk_ref_t failed;
			CHECK_EQ(gc_idxwalk_stream(w, cs, roots[k].data,
						   roots[k].len / CHUNK_REF_WIRE, collect, &got,
						   &failed),
				 0);
			/* Each index alone, through idxrd, is covered. */
			idxrd_t x;
			idxrd_open(&x, cs, &roots[k]);
			chunk_ref_t r;
			size_t notin = 0;
			while (idxrd_next(&x, &r) == 1)
				notin += !refset_has(&got.set, &r.digest);
			idxrd_close(&x);
			CHECK_EQ(notin, 0);
		}
		CHECK(sets_equal(&got.set, &all));
		gc_idxwalk_stats_t s;
		gc_idxwalk_stats(w, &s);
		if (edges) {
			CHECK(s.chunks_skipped > s.chunks_read / 2);
			CHECK(got.n < (uint64_t)BASE * NIDX / 2);
		} else {
			CHECK_EQ(s.chunks_skipped, 0);
			CHECK_EQ(got.n, (uint64_t)BASE * NIDX);
		}
		fprintf(stderr, "idxwalk (edges %d): %llu chunks read, %llu skipped, %llu records\n",
			edges, (unsigned long long)s.chunks_read,
			(unsigned long long)s.chunks_skipped, (unsigned long long)got.n);
		refset_free(&got.set);
		gc_idxwalk_free(w);
	}
	for (int k = 0; k < NIDX; k++)
		buf_free(&roots[k]);
	refset_free(&cur);
	refset_free(&all);
	free(live);
}

/* Stores bytes as one chunk and appends its ref to roots. */
static void put_chunk(chunkstore_t *cs, const void *data, size_t len, buf_t *roots)
{
	chunk_ref_t r;
	CHECK_EQ(chunk_store_data(cs, data, len, 0, &r, NULL), 0);
	uint8_t p[CHUNK_REF_WIRE];
	chunk_ref_pack(&r, p);
	buf_append(roots, p, sizeof(p));
}

static void record(uint8_t out[CHUNK_REF_WIRE], uint8_t fill)
{
	memset(out, fill, CHUNK_REF_WIRE);
	put_u32(out + 32, 100 + fill);
	put_u32(out + 36, 50 + fill);
}

static void test_idxwalk_crafted(chunkstore_t *cs)
{
	uint8_t hdr[INDEX_HEADER_LEN];
	memcpy(hdr, INDEX_MAGIC, 8);
	put_u32(hdr + 8, 1);
	/* Records 1..6; X holds the last 12 bytes of rec1, rec2..rec5 and the
	 * first 20 bytes of rec6.  Stream B has other records around X whose
	 * bytes in X are the same. */
	uint8_t rec[8][CHUNK_REF_WIRE];
	for (int i = 1; i <= 6; i++)
		record(rec[i], i);
	uint8_t x[12 + 4 * 40 + 20];
	memcpy(x, rec[1] + 28, 12);
	for (int i = 2; i <= 5; i++)
		memcpy(x + 12 + (i - 2) * 40, rec[i], 40);
	memcpy(x + 172, rec[6], 20);
	uint8_t a1[12 + 28], a3[20];
	memcpy(a1, hdr, 12);
	memcpy(a1 + 12, rec[1], 28);
	memcpy(a3, rec[6] + 20, 20);
	/* B: rec1' differs from rec1 in its first 28 bytes, rec6' in its last 20. */
	uint8_t r1b[40], r6b[40];
	memcpy(r1b, rec[1], 40);
	memset(r1b, 0xaa, 28);
	memcpy(r6b, rec[6], 40);
	put_u32(r6b + 32, 777);
	put_u32(r6b + 36, 778);
	uint8_t b1[12 + 28], b3[20];
	memcpy(b1, hdr, 12);
	memcpy(b1 + 12, r1b, 28);
	memcpy(b3, r6b + 20, 20);
	buf_t ra = {0}, rb = {0};
	put_chunk(cs, a1, sizeof(a1), &ra);
	put_chunk(cs, x, sizeof(x), &ra);
	put_chunk(cs, a3, sizeof(a3), &ra);
	put_chunk(cs, b1, sizeof(b1), &rb);
	put_chunk(cs, x, sizeof(x), &rb);
	put_chunk(cs, b3, sizeof(b3), &rb);

	/* C: X at another record alignment (20 bytes into a record). */
	uint8_t c1[12 + 20], c3[20];
	memcpy(c1, hdr, 12);
	memset(c1 + 12, 0x01, 20);
	memset(c3, 0x01, 20);
	/* Make "x" parse at this alignment too: all bytes 0x01 would, so use
	 * a second chunk y of 0x01 bytes for A' and C. */
	uint8_t y[200];
	memset(y, 0x01, sizeof(y));
	uint8_t a1p[12 + 40];
	memcpy(a1p, hdr, 12);
	record(a1p + 12, 9);
	buf_t rap = {0}, rc = {0};
	put_chunk(cs, a1p, sizeof(a1p), &rap);
	put_chunk(cs, y, sizeof(y), &rap);
	put_chunk(cs, c1, sizeof(c1), &rc);
	put_chunk(cs, y, sizeof(y), &rc);
	put_chunk(cs, c3, sizeof(c3), &rc);
	CHECK_EQ(chunkstore_flush(cs), 0);

	gc_idxwalk_t *w;
	CHECK_EQ(gc_idxwalk_new(64, &w), 0);
	collected_t ga = {0}, gb = {0}, gap = {0}, gcc = {0};
	chunk_ref_t failed;
	CHECK_EQ(gc_idxwalk_stream(w, cs, ra.data, 3, collect, &ga, &failed), 0);
	CHECK_EQ(ga.n, 6);
	CHECK_EQ(gc_idxwalk_stream(w, cs, rb.data, 3, collect, &gb, &failed), 0);
	/* Only the two straddling records are new; X's inner four are not
	 * delivered again. */
	CHECK_EQ(gb.n, 2);
	chunk_ref_t r1, r6;
	chunk_ref_unpack(r1b, &r1);
	chunk_ref_unpack(r6b, &r6);
	CHECK(refset_has(&gb.set, &r1.digest));
	CHECK(gb.set.n == 2);
	(void)r6;
	/* The same record bytes at another alignment must be read again. */
	CHECK_EQ(gc_idxwalk_stream(w, cs, rap.data, 2, collect, &gap, &failed), 0);
	CHECK_EQ(gap.n, 6);
	CHECK_EQ(gc_idxwalk_stream(w, cs, rc.data, 3, collect, &gcc, &failed), 0);
	CHECK_EQ(gcc.n, 6);
	gc_idxwalk_stats_t s;
	gc_idxwalk_stats(w, &s);
	CHECK_EQ(s.chunks_skipped, 1);

	/* A missing chunk fails the stream and names it; a truncated stream
	 * is corrupt. */
	buf_t rmiss = {0};
	buf_append(&rmiss, ra.data, CHUNK_REF_WIRE);
	chunk_ref_t ghost = rand_ref();
	uint8_t p[CHUNK_REF_WIRE];
	chunk_ref_pack(&ghost, p);
	buf_append(&rmiss, p, sizeof(p));
	collected_t gm = {0};
	gc_idxwalk_reset(w);
	CHECK_EQ(gc_idxwalk_stream(w, cs, rmiss.data, 2, collect, &gm, &failed), -ENOENT);
	CHECK(!digest_cmp(&failed.digest, &ghost.digest));
	CHECK_EQ(gc_idxwalk_stream(w, cs, ra.data, 2, collect, &gm, &failed), CAIRN_ECORRUPT);
	gc_idxwalk_free(w);
	refset_free(&ga.set);
	refset_free(&gb.set);
	refset_free(&gap.set);
	refset_free(&gcc.set);
	refset_free(&gm.set);
	buf_free(&ra);
	buf_free(&rb);
	buf_free(&rap);
	buf_free(&rc);
	buf_free(&rmiss);
}

/* ---- range set ---- */

static void test_range(void)
{
	enum { N = 30000 };
	chunk_ref_t *v = malloc(N * sizeof(*v));
	refset_t all = {0}, got = {0};
	for (int i = 0; i < N; i++) {
		v[i] = rand_ref();
		refset_add(&all, &v[i]);
	}
	unsigned lo = 0;
	int passes = 0;
	while (lo < GC_NDIRS) {
		gc_range_t r;
		CHECK_EQ(gc_range_init(&r, lo, 4000), 0);
		for (int i = 0; i < N; i += 100)
			CHECK(gc_range_add(&r, v + i, 100) >= 0);
		CHECK(r.set.n <= 4000);
		CHECK(r.hi > lo);
		/* Exactly the input's refs in [lo, hi). */
		size_t want = 0;
		for (int i = 0; i < N; i++) {
			unsigned d = gc_dir_of(&v[i].digest);
			if (d >= lo && d < r.hi) {
				want++;
				CHECK(refset_has(&r.set, &v[i].digest));
			}
		}
		CHECK_EQ(r.set.n, want);
		chunk_ref_t *s;
		size_t n;
		refset_sorted(&r.set, &s, &n);
		for (size_t i = 0; i < n; i++)
			refset_add(&got, &s[i]);
		free(s);
		lo = r.hi;
		gc_range_free(&r);
		passes++;
	}
	CHECK(passes >= N / 4000);
	CHECK(sets_equal(&got, &all));
	refset_free(&all);
	refset_free(&got);
	free(v);
}

/* ---- the public API ---- */

static char store[300], src[300];

static void write_file(const char *name, size_t len, uint64_t seed)
{
	char p[600];
	snprintf(p, sizeof(p), "%s/%s", src, name);
	FILE *f = fopen(p, "w");
	uint64_t x = seed | 1;
	for (size_t i = 0; i < len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		fwrite(&x, 1, len - i < 8 ? len - i : 8, f);
	}
	fclose(f);
}

typedef struct names {
	char **v;
	size_t n;
} names_t;

static void add_name(const char *path, uint64_t bytes, void *arg)
{
	names_t *l = arg;
	l->v = realloc(l->v, (l->n + 1) * sizeof(char *));
	l->v[l->n++] = strdup(path);
}

static int strp_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(names_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static void *interrupter(void *arg)
{
	usleep(*(int *)arg);
	cairn_gc_interrupt();
	return NULL;
}

static void test_api(void)
{
	snprintf(store, sizeof(store), "%s/store", tmpdir);
	snprintf(src, sizeof(src), "%s/src", tmpdir);
	mkdir(src, 0700);
	CHECK_EQ(cairn_store_init(store, NULL), 0);
	cairn_store *st;
	CHECK_EQ(cairn_store_open(store, &st), 0);
	const cairn_prop p = {"source", src};
	CHECK_EQ(cairn_dataset_create(st, "ds", CAIRN_TYPE_FILESYSTEM, &p, 1, false), 0);
	const char *names[] = {"ds@1", "ds@2", "ds@3"};
	for (int s = 0; s < 3; s++) {
		for (int f = 0; f < 5; f++) {
			char n[16];
			snprintf(n, sizeof(n), "f%d", f);
			write_file(n, 200000 + f * 1000, s * 10 + f + (f < 2 ? 0 : 100 * s));
		}
		CHECK_EQ(cairn_snapshot_create(st, &names[s], 1, NULL), 0);
	}
	CHECK_EQ(cairn_config_set(st, "gc_atime_cutoff", "0"), 0);

	/* Nothing unreferenced yet. */
	cairn_gc_status s;
	cairn_gc_opts o = {.cache_capacity = -1};
	CHECK_EQ(cairn_gc(st, &o, &s), 0);
	CHECK_EQ(s.removed_chunks, 0);
	CHECK_EQ(s.snapshots, 3);
	CHECK(s.touched > 0 && s.touched == s.disk_chunks);
	cairn_gc_status last;
	CHECK_EQ(cairn_gc_last_status(st, &last), 0);
	CHECK_EQ(last.touched, s.touched);
	CHECK_EQ(last.disk_bytes, s.disk_bytes);
	CHECK(last.dedup_factor == s.dedup_factor);

	/* Dry run lists exactly what the real run then removes. */
	cairn_destroy_opts dop = {0};
	CHECK_EQ(cairn_destroy(st, "ds@1", &dop), 0);
	names_t dry = {0}, real = {0};
	cairn_gc_opts od = {.cache_capacity = -1, .dry_run = true, .item = add_name, .arg = &dry};
	CHECK_EQ(cairn_gc(st, &od, &s), 0);
	CHECK(s.dry_run && dry.n > 0 && s.removed_chunks == dry.n);
	CHECK_EQ(s.touched, 0);
	cairn_gc_opts orr = {.cache_capacity = 0, .order = CAIRN_GC_ORDER_NONE, .item = add_name,
			     .arg = &real};
	CHECK_EQ(cairn_gc(st, &orr, &s), 0);
	CHECK_EQ(real.n, dry.n);
	qsort(dry.v, dry.n, sizeof(char *), strp_cmp);
	qsort(real.v, real.n, sizeof(char *), strp_cmp);
	bool same = real.n == dry.n;
	for (size_t i = 0; same && i < real.n; i++)
		same = !strcmp(real.v[i], dry.v[i]);
	CHECK(same);
	names_free(&dry);
	names_free(&real);
	cairn_verify_opts vo = {0};
	CHECK_EQ(cairn_verify(st, &vo), 0);
	CHECK(vo.chunks > 0 && vo.bad == 0);

	/* A second GC while one runs. */
	char lock[400];
	snprintf(lock, sizeof(lock), "%s/gc.lock", store);
	int lfd = open(lock, O_RDWR | O_CREAT, 0600);
	CHECK_EQ(flock(lfd, LOCK_EX), 0);
	CHECK_EQ(cairn_gc(st, &o, &s), -EBUSY);
	CHECK(strstr(cairn_store_errdetail(st), "GC already running") != NULL);
	close(lfd);

	/* Filesystem without atimes. */
	setenv("CAIRN_TEST_NO_ATIME", "1", 1);
	CHECK_EQ(cairn_gc(st, &o, &s), CAIRN_ENOATIME);
	CHECK(strstr(cairn_store_errdetail(st), "access times") != NULL);
	unsetenv("CAIRN_TEST_NO_ATIME");

	/* Interrupted before it starts: stops, removes nothing. */
	CHECK_EQ(cairn_destroy(st, "ds@2", &dop), 0);
	cairn_gc_interrupt();
	CHECK_EQ(cairn_gc(st, &o, &s), -EINTR);
	CHECK_EQ(s.removed_chunks, 0);
	/* Interrupted while running (or done first): the store stays whole. */
	int delay = 2000;
	pthread_t t;
	pthread_create(&t, NULL, interrupter, &delay);
	int r = cairn_gc(st, &o, &s);
	pthread_join(t, NULL);
	CHECK(r == 0 || r == -EINTR);
	if (r == 0)
		cairn_gc(st, &o, &s); /* clears a late interrupt */
	CHECK_EQ(cairn_verify(st, &vo), 0);
	cairn_store_close(st);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_names();
	test_marker_parity();
	test_quarantine();
	char csdir[300];
	snprintf(csdir, sizeof(csdir), "%s/cs", tmpdir);
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_create(csdir), 0);
	CHECK_EQ(chunkstore_open(csdir, &cs), 0);
	test_idxwalk_overlap(cs);
	test_idxwalk_crafted(cs);
	chunkstore_close(cs);
	test_range();
	test_api();
	close(chunkfd);
	rmtree(tmpdir);
	UNIT_DONE();
}
