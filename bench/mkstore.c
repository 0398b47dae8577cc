/* mkstore.c - builds a synthetic store for bench/gc.sh.
 *
 *   mkstore STORE [CHUNKS [DATASETS [SNAPSHOTS [SHARED [SLIDE [SIZE]]]]]]
 *
 * CHUNKS distinct chunk files (SIZE plain bytes each, default 150, stored
 * uncompressed with blob_encode under their SHA-256 names), written
 * straight into .chunks/xxxx/ in creation ("backup day") order.  DATASETS
 * datasets with SNAPSHOTS snapshots each.  Every snapshot references the
 * SHARED chunks all datasets have in common plus a window of its
 * dataset's own chunks that slides by SLIDE chunks per snapshot: day j
 * creates the SLIDE new chunks of every dataset, and consecutive
 * snapshots of a dataset share all but SLIDE chunks.  Each snapshot gets
 * a real index stream (index_write) and a one-entry tree stream; all
 * dataset and snapshot rows go in ONE catalog transaction.
 *
 * Defaults: 2,000,000 chunks, 10 datasets x 20 snapshots, 50,000 shared,
 * slide 5,000 (so each snapshot references 150,000 chunks; 30M
 * references in all).  Prints what it made.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/blob.h"
#include "data/snapio.h"
#include "store/store.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void die(const char *what, int r)
{
	fprintf(stderr, "mkstore: %s: %s\n", what, cairn_strerror(r));
	exit(1);
}

typedef struct chunkinfo {
	digest_t d;
	uint32_t stored;
} chunkinfo_t;

static chunkinfo_t *chunks;
static uint32_t size_plain = 150;

static int chunkfd;

/* Writes chunk i (deterministic content) into the store. */
static void make_chunk(uint64_t i)
{
	uint8_t plain[4096];
	uint64_t x = i * 0x9e3779b97f4a7c15ull + 12345;
	for (uint32_t k = 0; k < size_plain; k += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(plain + k, &x, MIN(8, size_plain - k));
	}
	memcpy(plain, &i, MIN(8, size_plain));
	chunkinfo_t *c = &chunks[i];
	digest_of(plain, size_plain, &c->d);
	static buf_t blob;
	int r = blob_encode(plain, size_plain, 0, &blob);
	if (r < 0)
		die("blob_encode", r);
	char path[80], hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(&c->d, hex);
	snprintf(path, sizeof(path), "%.4s/%s", hex, hex);
	int fd = openat(chunkfd, path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT) {
		/* The store makes its fan-out directories on first use. */
		char sub[5];
		snprintf(sub, sizeof(sub), "%.4s", hex);
		if (mkdirat(chunkfd, sub, 0700) < 0 && errno != EEXIST)
			die(sub, -errno);
		fd = openat(chunkfd, path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
	}
	if (fd < 0 || write_full(fd, blob.data, blob.len) < 0)
		die(path, -errno);
	close(fd);
	c->stored = blob.len;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: mkstore STORE [CHUNKS [DATASETS [SNAPSHOTS [SHARED [SLIDE "
				"[SIZE]]]]]]\n");
		return 2;
	}
	const char *path = argv[1];
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 2000000;
	uint64_t nds = argc > 3 ? strtoull(argv[3], NULL, 10) : 10;
	uint64_t nsnap = argc > 4 ? strtoull(argv[4], NULL, 10) : 20;
	uint64_t shared = argc > 5 ? strtoull(argv[5], NULL, 10) : 50000;
	uint64_t slide = argc > 6 ? strtoull(argv[6], NULL, 10) : 5000;
	if (argc > 7)
		size_plain = strtoul(argv[7], NULL, 10);
	if (!n || !nds || !nsnap || shared >= n || size_plain < 8 || size_plain > 4096) {
		fprintf(stderr, "mkstore: bad parameters\n");
		return 2;
	}
	uint64_t region = (n - shared) / nds;
	if (region <= (nsnap - 1) * slide) {
		fprintf(stderr, "mkstore: slide too large for the chunk count\n");
		return 2;
	}
	uint64_t window = region - (nsnap - 1) * slide;
	int r = cairn_store_init(path, &(cairn_init_opts){0});
	if (r < 0)
		die(path, r);
	cairn_store *st;
	r = cairn_store_open(path, &st);
	if (r < 0)
		die(path, r);
	chunkfd = openat(st->dirfd, ".chunks", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	chunks = calloc(n, sizeof(*chunks));
	if (chunkfd < 0 || !chunks)
		die("setup", -ENOMEM);
	/* Dataset k owns ids [k*region, (k+1)*region); the shared ids are at
	 * the end.  Day 0 creates the shared chunks and every initial window;
	 * day j the SLIDE newest chunks of every dataset. */
	int64_t t0 = mono_ns();
	uint64_t made = 0;
	for (uint64_t i = nds * region; i < n; i++, made++)
		make_chunk(i);
	for (uint64_t day = 0; day < nsnap; day++)
		for (uint64_t k = 0; k < nds; k++) {
			uint64_t a = k * region + (day ? window + (day - 1) * slide : 0);
			uint64_t b = k * region + window + day * slide;
			for (uint64_t i = a; i < b; i++, made++)
				make_chunk(i);
		}
	fprintf(stderr, "mkstore: %llu chunk files in %.1fs\n", (unsigned long long)made,
		(mono_ns() - t0) / 1e9);

	/* A tiny tree stream shared by every snapshot. */
	buf_t tree = {0}, tree_roots = {0};
	tree_entry_t root = {.type = TREE_DIR, .path = "", .mode = 0755};
	if (tree_write_header(&tree) < 0 || tree_write_entry(&tree, &root) < 0)
		die("tree", -ENOMEM);
	chunk_ref_t tref;
	r = chunk_store_data(st->cs, tree.data, tree.len, 0, &tref, NULL);
	if (r < 0)
		die("tree chunk", r);
	uint8_t packed[CHUNK_REF_WIRE];
	chunk_ref_pack(&tref, packed);
	buf_append(&tree_roots, packed, sizeof(packed));

	uint64_t txg;
	r = catalog_begin_write(st->cat, &txg);
	if (r < 0)
		die("catalog", r);
	int64_t now = time(NULL);
	uint64_t refs = 0, idxbytes = 0;
	t0 = mono_ns();
	for (uint64_t k = 0; k < nds; k++) {
		char name[64];
		snprintf(name, sizeof(name), "ds%02llu", (unsigned long long)k);
		ds_row_t ds = {.name = name, .type = CAIRN_TYPE_FILESYSTEM, .guid = next_rand(),
			       .createtxg = txg, .creation = now - 86400 * (int64_t)nsnap};
		r = catalog_ds_insert(st->cat, &ds);
		if (r < 0)
			die("dataset row", r);
		for (uint64_t j = 0; j < nsnap; j++) {
			refset_t set = {0};
			uint64_t a = k * region + j * slide;
			for (uint64_t i = a; i < a + window; i++) {
				chunk_ref_t c = {.digest = chunks[i].d, .plain_len = size_plain,
						 .stored_len = chunks[i].stored};
				refset_add(&set, &c);
			}
			for (uint64_t i = nds * region; i < n; i++) {
				chunk_ref_t c = {.digest = chunks[i].d, .plain_len = size_plain,
						 .stored_len = chunks[i].stored};
				refset_add(&set, &c);
			}
			refset_add(&set, &tref);
			refs += set.n + set.has_zero;
			buf_t idx = {0};
			uint64_t referenced, logical;
			r = index_write(st->cs, &set, &idx, &referenced, &logical);
			if (r < 0)
				die("index_write", r);
			idxbytes += idx.len / CHUNK_REF_WIRE;
			char sname[32];
			snprintf(sname, sizeof(sname), "day%03llu", (unsigned long long)j);
			snap_row_t row = {.dataset = ds.id, .name = sname, .guid = next_rand(),
					  .createtxg = txg + j, .creation = now - 86400 * (nsnap - j),
					  .referenced = referenced, .logicalreferenced = logical,
					  .written = referenced, .used = referenced};
			r = catalog_snap_insert(st->cat, &row, &tree_roots, &idx);
			if (r < 0)
				die("snapshot row", r);
			buf_free(&idx);
			refset_free(&set);
		}
	}
	r = chunkstore_flush(st->cs);
	if (r == 0)
		r = catalog_commit(st->cat);
	if (r < 0)
		die("commit", r);
	fprintf(stderr,
		"mkstore: %llu snapshots (%llu datasets x %llu), %llu references, %llu index "
		"chunks, in %.1fs\n",
		(unsigned long long)(nds * nsnap), (unsigned long long)nds,
		(unsigned long long)nsnap, (unsigned long long)refs, (unsigned long long)idxbytes,
		(mono_ns() - t0) / 1e9);
	printf("chunks=%llu snapshots=%llu references=%llu\n", (unsigned long long)made + 1,
	       (unsigned long long)(nds * nsnap), (unsigned long long)refs);
	close(chunkfd);
	cairn_store_close(st);
	free(chunks);
	return 0;
}
