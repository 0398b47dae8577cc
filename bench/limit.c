/* bench/limit.c - the machine's ceiling for cairn's backup data path.
 *
 * Loads a corpus into memory, cuts it the way a backup does (FastCDC chunks
 * for files of at least the minimum chunk size, small files packed into
 * bundles with the same boundary rule as lib/data/backup.c), then hashes
 * (digest_of: SHA-256) and encodes (blob_encode: zstd at the store's default
 * level plus the blob header's XXH3) every piece on all cores.  Only that
 * last step is timed: no file system work at all, so no backup on this
 * machine can beat the figure.  These are cairn's own library calls,
 * linked from libcairn.a.
 *
 * usage: limit [-j THREADS] [-l LEVEL] [-c CHUNKSIZE] [-r RUNS] CORPUS
 * Prints one line per run and a final line "limit: ... MB/s" (best run;
 * MB = 10^6 bytes of plain data).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/blob.h"
#include "data/chunker.h"
#include "util.h"

/* Must match lib/data/backup.c's bundle rule. */
#define BUNDLE_HASH_MASK 31u

typedef struct file {
	char *path;
	dev_t dev;
	ino_t ino;
	off_t size;
} file_t;

typedef struct piece {
	const uint8_t *data;
	size_t len;
} piece_t;

static file_t *files;
static size_t nfiles, capfiles;
static piece_t *pieces;
static size_t npieces, cappieces;
static atomic_size_t next_piece;
static int level = 2; /* the store's default compression */

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		perror("limit: realloc");
		exit(2);
	}
	return p;
}

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	if (type != FTW_F || !S_ISREG(st->st_mode) || st->st_size == 0)
		return 0;
	if (nfiles == capfiles) {
		capfiles = capfiles ? capfiles * 2 : 4096;
		files = xrealloc(files, capfiles * sizeof(*files));
	}
	files[nfiles++] = (file_t){strdup(path), st->st_dev, st->st_ino, st->st_size};
	return 0;
}

/* Tree order as a backup walks it: paths sorted bytewise per directory is
 * close to a plain strcmp of full paths; the order only decides which small
 * files share a bundle. */
static int path_cmp(const void *a, const void *b)
{
	return strcmp(((const file_t *)a)->path, ((const file_t *)b)->path);
}

static int inode_cmp(const void *a, const void *b)
{
	const file_t *x = *(file_t *const *)a, *y = *(file_t *const *)b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void piece_add(const uint8_t *p, size_t n)
{
	if (npieces == cappieces) {
		cappieces = cappieces ? cappieces * 2 : 65536;
		pieces = xrealloc(pieces, cappieces * sizeof(*pieces));
	}
	pieces[npieces++] = (piece_t){p, n};
}

static ssize_t load(const file_t *f, uint8_t *dst)
{
	int fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t k = read_full(fd, dst, f->size);
	close(fd);
	return k;
}

static void *worker(void *arg)
{
	buf_t out = {0};
	for (;;) {
		size_t i = atomic_fetch_add(&next_piece, 1);
		if (i >= npieces)
			break;
		digest_t d;
		digest_of(pieces[i].data, pieces[i].len, &d);
		if (blob_encode(pieces[i].data, pieces[i].len, level, &out) < 0) {
			fprintf(stderr, "limit: blob_encode failed\n");
			exit(2);
		}
	}
	buf_free(&out);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = sysconf(_SC_NPROCESSORS_ONLN), runs = 3, opt;
	uint32_t avg = 1 << 20;
	while ((opt = getopt(argc, argv, "j:l:c:r:")) != -1) {
		switch (opt) {
		case 'j': threads = atoi(optarg); break;
		case 'l': level = atoi(optarg); break;
		case 'c': avg = strtoul(optarg, NULL, 0); break;
		case 'r': runs = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (optind + 1 != argc || threads < 1 || threads > 256 || runs < 1 || level < 0 ||
	    level > 19) {
usage:
		fprintf(stderr, "usage: limit [-j THREADS] [-l LEVEL] [-c CHUNKSIZE] [-r RUNS] CORPUS\n");
		return 2;
	}
	chunker_params_t cp;
	if (chunker_params_init(&cp, avg) < 0) {
		fprintf(stderr, "limit: bad chunk size %u\n", avg);
		return 2;
	}
	if (nftw(argv[optind], collect, 64, FTW_PHYS) < 0) {
		perror(argv[optind]);
		return 1;
	}
	/* Each inode once, as a backup reads it (hardlinks are not re-read). */
	file_t **byino = xrealloc(NULL, (nfiles + 1) * sizeof(*byino));
	for (size_t i = 0; i < nfiles; i++)
		byino[i] = &files[i];
	qsort(byino, nfiles, sizeof(*byino), inode_cmp);
	for (size_t i = 1; i < nfiles; i++)
		if (byino[i]->dev == byino[i - 1]->dev && byino[i]->ino == byino[i - 1]->ino)
			byino[i]->size = 0;
	free(byino);
	qsort(files, nfiles, sizeof(*files), path_cmp);
	uint64_t total = 0;
	for (size_t i = 0; i < nfiles; i++)
		total += files[i].size;
	uint8_t *arena = malloc(total ? total : 1);
	if (!arena) {
		perror("limit: malloc");
		return 2;
	}
	/* Large files first in the arena, then the small ones back to back,
	 * so that a bundle is one contiguous piece. */
	uint64_t off = 0, loaded = 0;
	for (size_t i = 0; i < nfiles; i++) {
		if (!files[i].size || (uint64_t)files[i].size < cp.min_size)
			continue;
		ssize_t k = load(&files[i], arena + off);
		if (k <= 0)
			continue;
		for (size_t done = 0; done < (size_t)k;) {
			size_t n = chunker_cut(&cp, arena + off + done, k - done);
			piece_add(arena + off + done, n);
			done += n;
		}
		off += k;
	}
	uint64_t bundle_start = off, group = 0;
	for (size_t i = 0; i < nfiles; i++) {
		if (!files[i].size || (uint64_t)files[i].size >= cp.min_size)
			continue;
		ssize_t k = load(&files[i], arena + off);
		if (k <= 0)
			continue;
		off += k;
		group += k;
		const char *name = strrchr(files[i].path, '/');
		name = name ? name + 1 : files[i].path;
		uint64_t h = fnv1a64(name, strlen(name));
		if ((group >= avg / 4 && !(h & BUNDLE_HASH_MASK)) || group >= avg) {
			piece_add(arena + bundle_start, off - bundle_start);
			bundle_start = off;
			group = 0;
		}
	}
	if (off > bundle_start)
		piece_add(arena + bundle_start, off - bundle_start);
	loaded = off;
	printf("corpus %s: %llu bytes in %zu pieces (chunk size %u, zstd level %d), %d threads\n",
	       argv[optind], (unsigned long long)loaded, npieces, avg, level, threads);
	double best = 0;
	for (int run = 0; run < runs; run++) {
		atomic_store(&next_piece, 0);
		pthread_t th[256];
		int64_t t0 = mono_ns();
		for (int i = 0; i < threads; i++)
			if (pthread_create(&th[i], NULL, worker, NULL)) {
				fprintf(stderr, "limit: pthread_create failed\n");
				return 2;
			}
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		double s = (mono_ns() - t0) / 1e9;
		double mbs = loaded / s / 1e6;
		printf("run %d: %.3f s, %.1f MB/s\n", run + 1, s, mbs);
		if (mbs > best)
			best = mbs;
	}
	printf("limit: %.1f MB/s\n", best);
	free(arena);
	for (size_t i = 0; i < nfiles; i++)
		free(files[i].path);
	free(files);
	free(pieces);
	return 0;
}
