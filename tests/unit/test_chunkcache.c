/* test_chunkcache.c - the chunk cache's size estimate (store/chunkcache.h)
 * against what its directory really holds.
 *
 * An insert that replaces a blob already cached takes the old copy's size
 * off the estimate.  It sized that copy before taking the lock, so an
 * eviction in between (another thread's insert) could remove the copy and
 * count it gone, and the insert then took it off a second time: the
 * estimate ended one blob below the directory.  CAIRN_TEST_CACHE_PUT_DELAY_US
 * holds the replacing insert between sizing and renaming long enough for
 * the other thread's eviction to fall there every time.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/chunkcache.h"
#include "unit.h"

enum { BLOB = 1000, LIMIT = 10000, NBLOBS = 11 };

static uint8_t blob[NBLOBS][BLOB];
static digest_t d[NBLOBS];
static chunkcache_t *cache;

/* The total size of the blob files in dir (named by 64 hex digits). */
static uint64_t dir_bytes(int dirfd)
{
	DIR *dir = fdopendir(dup(dirfd));
	uint64_t total = 0;
	struct dirent *de;
	if (dir)
		rewinddir(dir); /* the duplicate shares dirfd's offset */
	while (dir && (de = readdir(dir))) {
		struct stat st;
		if (strlen(de->d_name) == DIGEST_HEX_LEN &&
		    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			total += st.st_size;
	}
	if (dir)
		closedir(dir);
	return total;
}

static void *replace_first(void *arg)
{
	(void)arg;
	chunkcache_put(cache, &d[0], blob[0], BLOB);
	return NULL;
}

/* Blobs 0..8 fill the cache to 9000 bytes (limit 10000, low water 8000),
 * blob 0 the oldest.  One thread inserts blob 0 again (held 300 ms between
 * sizing its copy and renaming); meanwhile blobs 9 and 10 take the cache
 * over the limit, and the eviction removes the oldest blobs.  Whatever
 * the order the lock gives them, the estimate must equal the directory. */
static void replace_races_eviction(void)
{
	char dir[] = "/tmp/test_chunkcache.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	setenv("CAIRN_TEST_CACHE_PUT_DELAY_US", "300000", 1);
	CHECK(dfd >= 0 && chunkcache_open(dfd, LIMIT, &cache) == 0 && cache);
	unsetenv("CAIRN_TEST_CACHE_PUT_DELAY_US");
	if (!cache)
		return;
	int cfd = openat(dfd, "cache", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(cfd >= 0);
	for (int i = 0; i < NBLOBS; i++) {
		memset(blob[i], 'a' + i, BLOB);
		digest_of(blob[i], BLOB, &d[i]);
	}
	for (int i = 0; i < 9; i++)
		chunkcache_put(cache, &d[i], blob[i], BLOB);
	/* Blob 0 the least recently used, whatever the clock's resolution. */
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(&d[0], hex);
	struct timespec old[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};
	CHECK(utimensat(cfd, hex, old, AT_SYMLINK_NOFOLLOW) == 0);

	pthread_t t;
	CHECK(pthread_create(&t, NULL, replace_first, NULL) == 0);
	usleep(100000); /* the replacing insert is in its pause */
	chunkcache_put(cache, &d[9], blob[9], BLOB);
	chunkcache_put(cache, &d[10], blob[10], BLOB);
	pthread_join(t, NULL);

	chunkcache_stats st;
	chunkcache_get_stats(cache, &st);
	CHECK(st.evictions > 0);
	CHECK_EQ(st.bytes, dir_bytes(cfd));

	for (int i = 0; i < NBLOBS; i++)
		chunkcache_drop(cache, &d[i]);
	chunkcache_close(cache);
	close(cfd);
	unlinkat(dfd, "cache", AT_REMOVEDIR);
	close(dfd);
	rmdir(dir);
}

/* Blobs 0..8 fill the cache to 9000 bytes (limit 10000); dropping five
 * of them (and one never cached) must take 5000 off the estimate, which
 * then follows the directory through two more inserts (evicting nothing)
 * and the drop of everything.  The drop left the estimate at 9000: it
 * stayed above the directory, and every insert past the limit as the
 * estimate saw it rescanned the cache for nothing. */
static void drop_lowers_estimate(void)
{
	char dir[] = "/tmp/test_chunkcache.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0 && chunkcache_open(dfd, LIMIT, &cache) == 0 && cache);
	if (!cache)
		return;
	int cfd = openat(dfd, "cache", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(cfd >= 0);
	for (int i = 0; i < NBLOBS; i++) {
		memset(blob[i], 'a' + i, BLOB);
		digest_of(blob[i], BLOB, &d[i]);
	}
	for (int i = 0; i < 9; i++)
		chunkcache_put(cache, &d[i], blob[i], BLOB);
	for (int i = 0; i < 5; i++)
		chunkcache_drop(cache, &d[i]);
	chunkcache_drop(cache, &d[9]); /* not cached: nothing to take off */
	chunkcache_stats st;
	chunkcache_get_stats(cache, &st);
	CHECK_EQ(st.bytes, 4 * BLOB);
	CHECK_EQ(st.bytes, dir_bytes(cfd));

	chunkcache_put(cache, &d[9], blob[9], BLOB);
	chunkcache_put(cache, &d[10], blob[10], BLOB);
	chunkcache_get_stats(cache, &st);
	CHECK_EQ(st.evictions, 0);
	CHECK_EQ(st.bytes, 6 * BLOB);
	CHECK_EQ(st.bytes, dir_bytes(cfd));

	for (int i = 0; i < NBLOBS; i++)
		chunkcache_drop(cache, &d[i]);
	chunkcache_get_stats(cache, &st);
	CHECK_EQ(st.bytes, 0);
	chunkcache_close(cache);
	close(cfd);
	unlinkat(dfd, "cache", AT_REMOVEDIR);
	close(dfd);
	rmdir(dir);
}

int main(void)
{
	replace_races_eviction();
	drop_lowers_estimate();
	UNIT_DONE();
}
