/* fuzz_index.c - libFuzzer target for the chunk index reader (idxrd).
 *
 * The input is the plain bytes of an index stream.  It is stored as ONE
 * chunk in a chunk store made in a temporary directory on the first call,
 * and read with idxrd over a root list holding that one ref; then again
 * split into several chunks at input-derived places (records then straddle
 * chunk boundaries).  Both reads must never crash and must agree exactly
 * with a straightforward reference parser of the same bytes: the same refs
 * in the same order, then the same end (0) or error (CAIRN_ECORRUPT).
 *
 * The store is reopened for every input and never flushed, so chunks stay
 * temporary files that chunkstore_close() removes: the disk does not fill
 * up however long the fuzzer runs.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/snapio.h"

static char g_dir[256];
static char g_chunks[300];

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void cleanup(void)
{
	if (g_dir[0])
		nftw(g_dir, rm_one, 64, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
	/* /dev/shm when there is one: creating 65536 directories is quicker */
	const char *bases[] = {"/dev/shm", getenv("TMPDIR"), "/tmp"};
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		if (!bases[i] || access(bases[i], W_OK) != 0)
			continue;
		snprintf(g_dir, sizeof(g_dir), "%s/fuzz_index.XXXXXX", bases[i]);
		if (mkdtemp(g_dir))
			break;
		g_dir[0] = 0;
	}
	if (!g_dir[0])
		abort();
	atexit(cleanup);
	snprintf(g_chunks, sizeof(g_chunks), "%s/chunks", g_dir);
	if (chunkstore_create(g_chunks) != 0)
		abort();
}

/* The expected outcome: refs, then 0 or CAIRN_ECORRUPT. */
typedef struct outcome {
	chunk_ref_t *refs;
	size_t n, cap;
	int end;
} outcome_t;

static void push(outcome_t *o, const chunk_ref_t *r)
{
	if (o->n == o->cap) {
		o->cap = o->cap ? 2 * o->cap : 64;
		o->refs = realloc(o->refs, o->cap * sizeof(*o->refs));
		if (!o->refs)
			abort();
	}
	o->refs[o->n++] = *r;
}

static void reference(const uint8_t *d, size_t len, outcome_t *o)
{
	if (len < INDEX_HEADER_LEN || memcmp(d, INDEX_MAGIC, 8) || get_u32(d + 8) != 1) {
		o->end = CAIRN_ECORRUPT;
		return;
	}
	size_t off = INDEX_HEADER_LEN;
	const digest_t *last = NULL;
	for (; off + CHUNK_REF_WIRE <= len; off += CHUNK_REF_WIRE) {
		chunk_ref_t r;
		chunk_ref_unpack(d + off, &r);
		if (r.plain_len == 0 || r.plain_len > CHUNK_MAX_PLAIN ||
		    (last && digest_cmp(last, &r.digest) >= 0)) {
			o->end = CAIRN_ECORRUPT;
			return;
		}
		push(o, &r);
		last = &o->refs[o->n - 1].digest;
	}
	o->end = off == len ? 0 : CAIRN_ECORRUPT;
}

static void read_index(chunkstore_t *cs, const buf_t *roots, outcome_t *o)
{
	idxrd_t x;
	idxrd_open(&x, cs, roots);
	chunk_ref_t r;
	int e;
	while ((e = idxrd_next(&x, &r)) == 1) {
		if (r.plain_len == 0 || r.plain_len > CHUNK_MAX_PLAIN)
			abort();
		if (o->n && digest_cmp(&o->refs[o->n - 1].digest, &r.digest) >= 0)
			abort();
		push(o, &r);
	}
	if (e == 0 && idxrd_next(&x, &r) != 0)
		abort(); /* the end is sticky */
	o->end = e;
	idxrd_close(&x);
}

static void same(const outcome_t *a, const outcome_t *b)
{
	if (a->end != b->end || a->n != b->n)
		abort();
	if (a->n && memcmp(a->refs, b->refs, a->n * sizeof(*a->refs)))
		abort();
}

static void add_chunk(chunkstore_t *cs, const uint8_t *d, size_t len, buf_t *roots)
{
	chunk_ref_t ref;
	if (chunk_store_data(cs, d, len, 0, &ref, NULL) != 0)
		abort();
	uint8_t w[CHUNK_REF_WIRE];
	chunk_ref_pack(&ref, w);
	if (buf_append(roots, w, sizeof(w)) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		setup();
		ready = true;
	}
	if (size > CHUNK_MAX_PLAIN)
		return 0;
	chunkstore_t *cs;
	if (chunkstore_open(g_chunks, &cs) != 0)
		abort();

	outcome_t want = {0}, one = {0}, split = {0};
	reference(data, size, &want);

	/* One chunk holding the whole stream. */
	buf_t roots = {0};
	add_chunk(cs, data, size, &roots);
	read_index(cs, &roots, &one);
	same(&want, &one);

	/* The same bytes cut into pieces of 1..53 bytes. */
	roots.len = 0;
	uint64_t h = fnv1a64(data, size);
	for (size_t off = 0; off < size;) {
		size_t n = 1 + h % 53;
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		if (n > size - off)
			n = size - off;
		add_chunk(cs, data + off, n, &roots);
		off += n;
	}
	read_index(cs, &roots, &split);
	same(&want, &split);

	buf_free(&roots);
	free(want.refs);
	free(one.refs);
	free(split.refs);
	chunkstore_close(cs);
	return 0;
}
