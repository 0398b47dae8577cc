/* test_volume_slabs.c - a mostly empty volume must not pin a read slab
 * per chunk job (lib/data/backup.c read_volume).
 *
 * The reader fills 16 MiB slabs and the bytes in flight to the workers are
 * capped by the bytes of their jobs.  An all-zero chunk becomes a hole and
 * no job, so if it kept its room in the slab, a volume with one data chunk
 * per 16 MiB would keep a whole slab alive for every job the workers have
 * not finished: with slow workers (one thread, zstd-19 here; a slow store
 * in real life) the reader runs ahead and the process grows by 16 MiB per
 * data chunk.  Here 24 such slabs are backed up with one worker: the peak
 * resident size must grow far less than the 384 MiB of 24 pinned slabs,
 * and the image must come back exactly.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn.h"
#include "unit.h"

enum { SLAB = 16 << 20, NSLABS = 24, CHUNK = 256 << 10 };

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint8_t next_byte(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)rng;
}

/* A sparse image with one compressible but not trivial data chunk at the
 * start of every 16 MiB. */
static void make_image(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(ftruncate(fd, (off_t)NSLABS * SLAB), 0);
	static uint8_t b[CHUNK];
	for (int i = 0; i < NSLABS; i++) {
		for (size_t k = 0; k < CHUNK; k++)
			b[k] = "0123456789abcdef"[next_byte() & 15];
		CHECK_EQ(pwrite(fd, b, CHUNK, (off_t)i * SLAB), CHUNK);
	}
	close(fd);
}

static int same_file(const char *a, const char *b)
{
	int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
	int same = fa >= 0 && fb >= 0;
	static uint8_t x[1 << 20], y[1 << 20];
	while (same) {
		ssize_t m = read(fa, x, sizeof(x)), n = read(fb, y, sizeof(y));
		same = m == n && m >= 0 && !memcmp(x, y, m > 0 ? m : 0);
		if (m <= 0)
			break;
	}
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return same;
}

int main(void)
{
	char dir[] = "/tmp/cairn-test-volslab-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char img[300], store[300], out[300], cmd[400];
	snprintf(img, sizeof(img), "%s/disk.img", dir);
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(out, sizeof(out), "%s/out.img", dir);
	make_image(img);

	CHECK_EQ(cairn_store_init(store, NULL), 0);
	cairn_store *st;
	CHECK_EQ(cairn_store_open(store, &st), 0);
	cairn_prop props[] = {{"source", img}, {"chunksize", "262144"},
			      {"compression", "zstd-19"}};
	CHECK_EQ(cairn_dataset_create(st, "vol", CAIRN_TYPE_VOLUME, props, 3, false), 0);
	struct rusage ru;
	CHECK_EQ(getrusage(RUSAGE_SELF, &ru), 0);
	long before = ru.ru_maxrss;
	cairn_snapshot_opts o = {.threads = 1};
	const char *names[] = {"vol@1"};
	CHECK_EQ(cairn_snapshot_create(st, names, 1, &o), 0);

	CHECK_EQ(getrusage(RUSAGE_SELF, &ru), 0);
	long grew_mib = (ru.ru_maxrss - before) >> 10;
	/* The 6 MiB of data fit in one slab, so at most the reader's, one
	 * more and the two of the free list are alive (64 MiB) beside the
	 * rest of the backup; 24 pinned slabs would be 384 MiB.  Measured as
	 * growth of the peak, so that sanitizer builds' own memory is left out. */
	if (grew_mib >= 100)
		fprintf(stderr, "the backup grew the peak resident size by %ld MiB\n", grew_mib);
	CHECK(grew_mib < 100);

	CHECK_EQ(cairn_restore(st, "vol@1", out, NULL), 0);
	CHECK(same_file(img, out));
	struct stat s;
	CHECK(stat(out, &s) == 0 && s.st_size == (off_t)NSLABS * SLAB);
	CHECK(s.st_blocks * 512 < (off_t)NSLABS * SLAB / 4); /* holes stay holes */
	cairn_store_close(st);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
	UNIT_DONE();
}
