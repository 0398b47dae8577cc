/* test_ahead.c - restore's decode-ahead (lib/ahead.c) on a real chunk
 * store and tree stream.
 *
 * The stream: bundle entries (one whose writer drops it before taking its
 * bundle, so the next entry naming that bundle must still get it), a file
 * of 30 chunks with a hole that the writer abandons half way after asking
 * for a chunk out of order, a file of 30 chunks whose 16th chunk is corrupt
 * and a file whose chunk is missing, then more bundle entries.  The window
 * holds three chunks, so the decode runs ahead across entries and within a
 * file.  Each pass runs with 1 and 3 workers; a last pass closes while
 * chunks are in flight.  Leaks and races show under make asan.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ahead.h"
#include "snapio.h"
#include "unit.h"

#define CH 65536
#define NDATA 64

static char tmpdir[] = "/dev/shm/test_ahead.XXXXXX";
static chunkstore_t *cs;
static uint8_t data[NDATA][CH];
static chunk_ref_t dref[NDATA];
static uint8_t bundles[3][5000];
static chunk_ref_t bref[3];
static chunk_ref_t missing;

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static void put(const void *p, size_t n, chunk_ref_t *ref)
{
	bool was_new;
	CHECK_EQ(chunk_store_data(cs, p, n, 3, ref, &was_new), 0);
}

static void make_chunks(void)
{
	for (int i = 0; i < NDATA; i++) {
		fill(data[i], CH, i + 1);
		put(data[i], CH, &dref[i]);
	}
	/* chunk 45 (the 16th of file "h") is stored under its digest with other
	 * bytes: a corrupt chunk */
	CHECK_EQ(chunkstore_flush(cs), 0);
	bool was_new;
	uint32_t stored;
	digest_t d = dref[45].digest;
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(&d, hex);
	char path[600];
	snprintf(path, sizeof(path), "%s/c/%.4s/%s", tmpdir, hex, hex);
	CHECK_EQ(remove(path), 0);
	CHECK_EQ(chunkstore_put(cs, &d, data[0], CH, 3, &stored, &was_new), 0);
	for (int i = 0; i < 3; i++) {
		fill(bundles[i], sizeof(bundles[i]), 1000 + i);
		put(bundles[i], sizeof(bundles[i]), &bref[i]);
	}
	fill(missing.digest.b, DIGEST_LEN, 77);
	missing.plain_len = CH;
	CHECK_EQ(chunkstore_flush(cs), 0);
}

static void add(buf_t *s, tree_entry_t *e)
{
	CHECK_EQ(tree_write_entry(s, e), 0);
}

static void add_bundle(buf_t *s, const char *path, int b, uint32_t off, uint64_t size)
{
	tree_entry_t e = {.type = TREE_REG, .path = (char *)path, .mode = 0644, .size = size,
			  .content = TREE_CONTENT_BUNDLE, .bundle = bref[b], .bundle_off = off};
	add(s, &e);
}

/* A file of chunks first..first+n-1, with a hole after the 5th. */
static void add_file(buf_t *s, const char *path, int first, int n, bool missing_last)
{
	tree_extent_t x[64];
	uint32_t k = 0;
	for (int i = 0; i < n; i++) {
		x[k++] = (tree_extent_t){.kind = TREE_EXT_CHUNK, .length = CH, .ref = dref[first + i]};
		if (i == 4)
			x[k++] = (tree_extent_t){.kind = TREE_EXT_HOLE, .length = 4096};
	}
	if (missing_last)
		x[k - 1].ref = missing;
	tree_entry_t e = {.type = TREE_REG, .path = (char *)path, .mode = 0644,
			  .size = (uint64_t)n * CH + 4096, .content = TREE_CONTENT_EXTENTS,
			  .nextent = k, .extents = x};
	add(s, &e);
}

static void add_dir(buf_t *s, const char *path)
{
	tree_entry_t e = {.type = TREE_DIR, .path = (char *)path, .mode = 0755};
	add(s, &e);
}

/* Roots of the tree stream (sorted paths). */
static void make_tree(buf_t *roots)
{
	buf_t s = {0};
	CHECK_EQ(tree_write_header(&s), 0);
	add_dir(&s, "");
	add_bundle(&s, "a", 0, 0, 100);    /* dropped before its bundle */
	add_bundle(&s, "b", 0, 100, 200);  /* same bundle: must still get it */
	add_bundle(&s, "c", 1, 0, 300);
	add_bundle(&s, "d", 0, 300, 50);   /* bundle 0 again after 1 */
	add_file(&s, "e", 0, 30, false);   /* abandoned after 12 chunks */
	add_dir(&s, "f");
	add_bundle(&s, "f/x", 2, 0, 10);   /* skipped by the filter */
	add_bundle(&s, "f/y", 2, 10, 10);  /* same bundle, wanted */
	add_file(&s, "h", 30, 30, false);  /* chunk 45 corrupt */
	add_file(&s, "i", 60, 2, true);    /* second chunk missing */
	add_bundle(&s, "j", 2, 20, 4000);
	chunker_params_t p;
	CHECK_EQ(chunker_params_init(&p, 4096), 0);
	cdcw_t w;
	cdcw_init(&w, cs, &p, 3, NULL);
	CHECK_EQ(cdcw_write(&w, s.data, s.len), 0);
	CHECK_EQ(cdcw_finish(&w), 0);
	CHECK_EQ(chunkstore_flush(cs), 0);
	*roots = w.refs;
	w.refs = (buf_t){0};
	cdcw_free(&w);
	buf_free(&s);
}

static ahead_want_t filter(const tree_entry_t *e, void *arg)
{
	(*(int *)arg)++;
	if (!strcmp(e->path, "f/x"))
		return AHEAD_SKIP;
	return e->type == TREE_REG ? AHEAD_DATA : AHEAD_META;
}

static tree_entry_t *next(ahead_t *a, const char *want)
{
	tree_entry_t *e = NULL;
	CHECK_EQ(ahead_next(a, &e), 1);
	CHECK(e && !strcmp(e->path, want));
	return e;
}

static void check_bundle(ahead_t *a, tree_entry_t *e, int b)
{
	const buf_t *out = NULL;
	CHECK_EQ(ahead_bundle(a, &e->bundle, &out), 0);
	CHECK(out && out->len == sizeof(bundles[b]) && !memcmp(out->data, bundles[b], out->len));
}

/* Takes chunks of e in order while they match data[first + i]; returns the
 * first error (0 if all n were taken). */
static int take(ahead_t *a, tree_entry_t *e, int first, int n)
{
	int got = 0;
	for (uint32_t i = 0; i < e->nextent && got < n; i++) {
		if (e->extents[i].kind == TREE_EXT_HOLE)
			continue;
		const buf_t *out = NULL;
		int r = ahead_chunk(a, &e->extents[i].ref, &out);
		if (r < 0)
			return r;
		CHECK(out->len == CH && !memcmp(out->data, data[first + got], CH));
		got++;
	}
	return 0;
}

static void pass(const buf_t *roots, int threads)
{
	snaptree_t t;
	CHECK_EQ(snaptree_open(&t, cs, roots), 0);
	ahead_t *a = NULL;
	int seen = 0;
	CHECK_EQ(ahead_open(&a, cs, NULL, &t, filter, &seen, 3 * CH, threads), 0);
	next(a, "");
	next(a, "a");
	check_bundle(a, next(a, "b"), 0);
	check_bundle(a, next(a, "c"), 1);
	check_bundle(a, next(a, "d"), 0);
	tree_entry_t *e = next(a, "e");
	CHECK_EQ(take(a, e, 0, 12), 0);
	const buf_t *out;
	CHECK_EQ(ahead_chunk(a, &e->extents[20].ref, &out), -EPROTO); /* out of order */
	CHECK_EQ(ahead_bundle(a, &bref[1], &out), -EPROTO);          /* not this entry's */
	next(a, "f");
	CHECK_EQ(ahead_chunk(a, &dref[12], &out), -EPROTO); /* a directory has none */
	check_bundle(a, next(a, "f/y"), 2);
	e = next(a, "h");
	CHECK_EQ(take(a, e, 30, 30), CAIRN_ECORRUPT);
	e = next(a, "i");
	CHECK_EQ(take(a, e, 60, 2), -ENOENT);
	check_bundle(a, next(a, "j"), 2);
	tree_entry_t *end = NULL;
	CHECK_EQ(ahead_next(a, &end), 0);
	CHECK_EQ(ahead_next(a, &end), 0);
	CHECK_EQ(seen, 12);
	ahead_close(a);
	snaptree_close(&t);
}

/* Closing with chunks in flight and entries read ahead. */
static void pass_close_early(const buf_t *roots)
{
	snaptree_t t;
	CHECK_EQ(snaptree_open(&t, cs, roots), 0);
	ahead_t *a = NULL;
	int seen = 0;
	CHECK_EQ(ahead_open(&a, cs, NULL, &t, filter, &seen, 0, 2), 0);
	tree_entry_t *e = NULL;
	while (ahead_next(a, &e) == 1 && strcmp(e->path, "e"))
		;
	CHECK(e && !strcmp(e->path, "e"));
	CHECK_EQ(take(a, e, 0, 3), 0);
	ahead_close(a);
	snaptree_close(&t);
}

int main(void)
{
	CHECK(mkdtemp(tmpdir) != NULL);
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/c", tmpdir);
	CHECK_EQ(chunkstore_create(dir), 0);
	CHECK_EQ(chunkstore_open(dir, &cs), 0);
	make_chunks();
	buf_t roots = {0};
	make_tree(&roots);
	pass(&roots, 1);
	pass(&roots, 3);
	pass_close_early(&roots);
	buf_free(&roots);
	chunkstore_close(cs);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	CHECK_EQ(system(cmd), 0);
	UNIT_DONE();
}
