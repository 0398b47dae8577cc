/* test_pool_backup.c - a backup is the same whatever the number of workers.
 *
 * Bundles and large-file chunks are hashed, compressed and stored on the
 * worker pool while the main thread walks on; entries are emitted once
 * their group's jobs are done.  Here one source (many small files that form
 * bundles, large files of several chunks, hardlinks, a symlink, a sparse
 * file, an empty file, a 40 MiB file read in many pieces) is backed
 * up into separate stores with 1, 2 and 7 workers, then changed and backed
 * up again (reused bundles, kept members and carried ones in one run): each
 * snapshot's tree and chunk index roots must be the same bytes in every
 * store, and each store must restore the source.  The big file's chunks
 * must be those of one contiguous cut of it: reading it piece by piece
 * (and cutting as the pieces come) moves no boundary.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn.h"
#include "catalog/catalog.h"
#include "data/chunker.h"
#include "store/store.h"
#include "unit.h"

static char tmpdir[256], src[300];
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* len bytes: half random, half a repeated phrase, so zstd has work. */
static void write_file(const char *rel, size_t len)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", src, rel);
	uint8_t *b = malloc(len ? len : 1);
	for (size_t i = 0; i < len; i++)
		b[i] = (i / 512) % 2 ? (uint8_t)next_rand() : "cairn pool test "[i % 16];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_EQ(write(fd, b, len), (ssize_t)len);
		close(fd);
	}
	free(b);
}

static void make_source(void)
{
	snprintf(src, sizeof(src), "%s/src", tmpdir);
	CHECK_EQ(mkdir(src, 0755), 0);
	for (int d = 0; d < 12; d++) {
		char dir[400];
		snprintf(dir, sizeof(dir), "%s/d%02d", src, d);
		CHECK_EQ(mkdir(dir, 0755), 0);
		for (int f = 0; f < 40; f++) {
			char rel[64];
			snprintf(rel, sizeof(rel), "d%02d/f%03d", d, f);
			/* chunksize 64K: below 16K a file goes into a bundle. */
			size_t len = f % 13 == 5 ? 70000 + next_rand() % 300000 : next_rand() % 15000;
			write_file(rel, len);
		}
	}
	write_file("empty", 0);
	write_file("big", 40 << 20); /* read two maximal chunks (512K) at a time */
	char a[600], b[600];
	snprintf(a, sizeof(a), "%s/d00/f005", src);
	snprintf(b, sizeof(b), "%s/d03/link-big", src);
	CHECK_EQ(link(a, b), 0);
	snprintf(a, sizeof(a), "%s/d01/f001", src);
	snprintf(b, sizeof(b), "%s/d04/link-small", src);
	CHECK_EQ(link(a, b), 0);
	snprintf(b, sizeof(b), "%s/sym", src);
	CHECK_EQ(symlink("d01/f001", b), 0);
	snprintf(a, sizeof(a), "%s/sparse", src);
	int fd = open(a, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, "tail", 4, 5 << 20), 4);
	close(fd);
}

/* Changes a few small and large files and one small file in every other
 * directory: unchanged neighbours stay in their bundles, and the scattered
 * changed files are carried together into new bundles across groups. */
static void change_source(void)
{
	write_file("d02/f010", 9000);
	write_file("d07/f005", 200000);
	write_file("d09/new", 3000);
	for (int d = 0; d < 12; d += 2) {
		char rel[64];
		snprintf(rel, sizeof(rel), "d%02d/f%03d", d, 20 + d);
		write_file(rel, 1000 + next_rand() % 8000);
	}
}

/* The tree and index roots of ds@name in the store at path. */
static void snap_roots(const char *path, const char *name, buf_t *tree, buf_t *idx)
{
	cairn_store *st;
	CHECK_EQ(cairn_store_open(path, &st), 0);
	ds_row_t ds = {0};
	snap_row_t s = {0};
	CHECK_EQ(catalog_begin_read(st->cat), 0);
	CHECK_EQ(catalog_ds_by_name(st->cat, "ds", &ds), 0);
	CHECK_EQ(catalog_snap_lookup(st->cat, ds.id, name, &s), 0);
	CHECK_EQ(catalog_snap_roots(st->cat, s.id, tree, idx), 0);
	catalog_end_read(st->cat);
	snap_row_clear(&s);
	ds_row_clear(&ds);
	cairn_store_close(st);
}

static const char *cmp_root;
static int cmp_bad;

static int cmp_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	char other[1200];
	snprintf(other, sizeof(other), "%s/%s", cmp_root, path + strlen(src) + 1);
	FILE *a = fopen(path, "rb"), *b = fopen(other, "rb");
	int ca, cb;
	if (!a || !b)
		cmp_bad++;
	else
		do {
			ca = getc(a);
			cb = getc(b);
			if (ca != cb) {
				fprintf(stderr, "restored %s differs\n", other);
				cmp_bad++;
				break;
			}
		} while (ca != EOF);
	if (a)
		fclose(a);
	if (b)
		fclose(b);
	return 0;
}

/* Every regular file of the source has the same bytes in target. */
static void check_restore(const char *store, const char *snap, const char *target)
{
	cairn_store *st;
	CHECK_EQ(cairn_store_open(store, &st), 0);
	CHECK_EQ(cairn_restore(st, snap, target, NULL), 0);
	cairn_store_close(st);
	cmp_root = target;
	cmp_bad = 0;
	CHECK_EQ(nftw(src, cmp_one, 16, FTW_PHYS), 0);
	CHECK_EQ(cmp_bad, 0);
}

/* Cuts src/big in one piece, as if it were read whole, and checks that
 * the store holds every chunk of that cut. */
static void check_contiguous_cuts(const char *store)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/big", src);
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	size_t len = 40 << 20, chunks = 0, missing = 0;
	uint8_t *b = malloc(len);
	CHECK(b && fd >= 0 && pread_full(fd, b, len, 0) == (ssize_t)len);
	if (fd >= 0)
		close(fd);
	chunker_params_t p;
	CHECK_EQ(chunker_params_init(&p, 65536), 0);
	cairn_store *st;
	CHECK_EQ(cairn_store_open(store, &st), 0);
	for (size_t at = 0; b && at < len; chunks++) {
		size_t n = chunker_cut(&p, b + at, len - at);
		digest_t d;
		digest_of(b + at, n, &d);
		if (chunkstore_has(st->cs, &d) != 0)
			missing++;
		at += n;
	}
	cairn_store_close(st);
	free(b);
	CHECK(chunks > 300); /* 40 MiB of 64K-average chunks */
	CHECK_EQ(missing, 0);
	if (missing)
		fprintf(stderr, "%s: %zu of %zu chunks of a contiguous cut missing\n", store,
			missing, chunks);
}

/* Waits out the timestamp tick of the source's last change (the kernel's
 * coarse clock, at most 10 ms): a file changed in the tick a backup starts
 * in is recorded as racy (see racy_since in backup.c), so whether it is
 * depends on when each store's backup runs, and the trees compared below
 * would differ by it, not by the worker count. */
static void past_racy_tick(void)
{
	usleep(100000);
}

static void backup(const char *store, const char *snap, int threads)
{
	cairn_store *st;
	CHECK_EQ(cairn_store_open(store, &st), 0);
	cairn_snapshot_opts o = {.threads = threads};
	const char *names[] = {snap};
	CHECK_EQ(cairn_snapshot_create(st, names, 1, &o), 0);
	cairn_store_close(st);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/cairn-test-pool-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	make_source();
	past_racy_tick();
	static const int counts[] = {1, 2, 7};
	enum { N = sizeof(counts) / sizeof(counts[0]) };
	char stores[N][300];
	for (int i = 0; i < N; i++) {
		snprintf(stores[i], sizeof(stores[i]), "%s/store%d", tmpdir, counts[i]);
		CHECK_EQ(cairn_store_init(stores[i], NULL), 0);
		cairn_store *st;
		CHECK_EQ(cairn_store_open(stores[i], &st), 0);
		const cairn_prop p[] = {{"source", src}, {"chunksize", "65536"}};
		CHECK_EQ(cairn_dataset_create(st, "ds", CAIRN_TYPE_FILESYSTEM, p, 2, false), 0);
		cairn_store_close(st);
		backup(stores[i], "ds@1", counts[i]);
	}
	for (int i = 0; i < N; i++)
		check_contiguous_cuts(stores[i]);
	change_source();
	past_racy_tick();
	for (int i = 0; i < N; i++)
		backup(stores[i], "ds@2", counts[i]);

	static const char *const snaps[] = {"1", "2"};
	for (int s = 0; s < 2; s++) {
		buf_t tree0 = {0}, idx0 = {0};
		snap_roots(stores[0], snaps[s], &tree0, &idx0);
		CHECK(tree0.len > 0 && idx0.len > 0);
		for (int i = 1; i < N; i++) {
			buf_t tree = {0}, idx = {0};
			snap_roots(stores[i], snaps[s], &tree, &idx);
			CHECK(tree.len == tree0.len && !memcmp(tree.data, tree0.data, tree.len));
			CHECK(idx.len == idx0.len && !memcmp(idx.data, idx0.data, idx.len));
			if (tree.len != tree0.len || memcmp(tree.data, tree0.data, tree.len))
				fprintf(stderr, "ds@%s: tree with %d workers differs from 1 worker\n",
					snaps[s], counts[i]);
			buf_free(&tree);
			buf_free(&idx);
		}
		buf_free(&tree0);
		buf_free(&idx0);
	}
	for (int i = 0; i < N; i++) {
		char target[400];
		snprintf(target, sizeof(target), "%s/restore%d", tmpdir, counts[i]);
		check_restore(stores[i], "ds@2", target);
	}
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	UNIT_DONE();
}
