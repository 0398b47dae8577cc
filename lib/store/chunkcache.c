/* chunkcache.c - a bounded local copy of remote chunk blobs (LRU); see
 * chunkcache.h for the rules. */
#include "store/chunkcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_DIR "cache"
#define LOW_WATER_PERCENT 80
/* A temporary file this old belongs to a writer that died. */
#define STALE_TMP_NS (600LL * 1000000000LL)
/* Larger files are no blob (chunkstore's bound is far below). */
#define MAX_CACHED_BLOB (64u << 20)

struct chunkcache {
	int dirfd;
	uint64_t max_bytes;
	pthread_mutex_t lock;
	bool sized;     /* bytes holds a scan's result plus later inserts */
	uint64_t bytes; /* estimate of the directory's total size */
	/* Tests only (CAIRN_TEST_CACHE_PUT_DELAY_US): a pause between sizing
	 * the copy an insert replaces and renaming over it, to widen the
	 * window an eviction could otherwise fall into. */
	unsigned put_delay_us;
	atomic_uint_fast64_t hits, misses, inserts, evictions, tmpno;
};

int chunkcache_open(int store_dirfd, uint64_t max_bytes, chunkcache_t **out)
{
	*out = NULL;
	if (!max_bytes)
		return 0;
	if (mkdirat(store_dirfd, CACHE_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(store_dirfd, CACHE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	chunkcache_t *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->dirfd = fd;
	c->max_bytes = max_bytes;
	const char *delay = getenv("CAIRN_TEST_CACHE_PUT_DELAY_US");
	c->put_delay_us = delay ? (unsigned)strtoul(delay, NULL, 10) : 0;
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

void chunkcache_close(chunkcache_t *c)
{
	if (!c)
		return;
	close(c->dirfd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int chunkcache_get(chunkcache_t *c, const digest_t *d, buf_t *out)
{
	if (!c)
		return -ENOENT;
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(d, hex);
	_cleanup_close_ int fd = openat(c->dirfd, hex, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !st.st_size ||
	    (uint64_t)st.st_size > MAX_CACHED_BLOB)
		goto miss;
	out->len = 0;
	if (buf_reserve(out, st.st_size) < 0 || read_full(fd, out->data, st.st_size) != st.st_size)
		goto miss;
	out->len = st.st_size;
	futimens(fd, NULL); /* the LRU clock: recently used */
	atomic_fetch_add(&c->hits, 1);
	return 0;
miss:
	out->len = 0;
	atomic_fetch_add(&c->misses, 1);
	return -ENOENT;
}

typedef struct entry {
	char name[DIGEST_HEX_LEN + 1];
	int64_t mtime_ns;
	uint64_t size;
} entry_t;

static int older_first(const void *a, const void *b)
{
	const entry_t *x = a, *y = b;
	return (x->mtime_ns > y->mtime_ns) - (x->mtime_ns < y->mtime_ns);
}

static bool is_blob_name(const char *n)
{
	if (strlen(n) != DIGEST_HEX_LEN)
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

/* Lists the cache's blobs into *list (and removes dead writers' temporary
 * files on the way).  Returns the total size, or a negative errno. */
static int64_t scan(chunkcache_t *c, entry_t **list, size_t *n)
{
	*list = NULL;
	*n = 0;
	int fd = dup(c->dirfd);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	rewinddir(dir);
	int64_t total = 0, now = now_ns();
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		struct stat st;
		if (de->d_name[0] == '.' && strncmp(de->d_name, ".tmp.", 5))
			continue;
		if (fstatat(c->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		int64_t mt = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
		if (!is_blob_name(de->d_name)) {
			if (!strncmp(de->d_name, ".tmp.", 5) && now - mt > STALE_TMP_NS)
				unlinkat(c->dirfd, de->d_name, 0);
			continue;
		}
		if (*n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			entry_t *p = realloc(*list, ncap * sizeof(*p));
			if (!p)
				break;
			*list = p;
			cap = ncap;
		}
		entry_t *e = &(*list)[(*n)++];
		memcpy(e->name, de->d_name, sizeof(e->name));
		e->mtime_ns = mt;
		e->size = st.st_size;
		total += st.st_size;
	}
	closedir(dir);
	return total;
}

/* Removes the least recently used blobs until the cache is at its low
 * water mark.  Called with c->lock held. */
static void evict(chunkcache_t *c)
{
	entry_t *list;
	size_t n;
	int64_t total = scan(c, &list, &n);
	if (total < 0)
		return;
	uint64_t low = c->max_bytes / 100 * LOW_WATER_PERCENT;
	qsort(list, n, sizeof(*list), older_first);
	for (size_t i = 0; i < n && (uint64_t)total > low; i++) {
		if (unlinkat(c->dirfd, list[i].name, 0) == 0 || errno == ENOENT) {
			total -= list[i].size;
			atomic_fetch_add(&c->evictions, 1);
		}
	}
	free(list);
	c->bytes = total;
	c->sized = true;
}

/* The size of the blob file name already holds (0: none), which an
 * insert under that name replaces rather than adds to. */
static uint64_t held_size(chunkcache_t *c, const char *name)
{
	struct stat st;
	if (fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return (uint64_t)st.st_size;
}

void chunkcache_put(chunkcache_t *c, const digest_t *d, const void *blob, size_t len)
{
	if (!c || !len || len > MAX_CACHED_BLOB || len > c->max_bytes)
		return;
	char hex[DIGEST_HEX_LEN + 1], tmp[64];
	digest_to_hex(d, hex);
	snprintf(tmp, sizeof(tmp), ".tmp.%d.%llu", (int)getpid(),
		 (unsigned long long)atomic_fetch_add(&c->tmpno, 1));
	int fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	/* No fsync: after a crash a torn copy fails to decode and is dropped. */
	int r = write_full(fd, blob, len);
	close(fd);
	if (r < 0) {
		unlinkat(c->dirfd, tmp, 0);
		return;
	}
	/* Sizing the copy replaced and renaming over it happen under the
	 * lock, as evictions do: an eviction between the two would remove
	 * that copy and count it gone, and this insert would then take its
	 * size off the estimate a second time (one blob too low).  (Another
	 * process's eviction is not ordered so; each eviction rescans.) */
	pthread_mutex_lock(&c->lock);
	uint64_t replaced = held_size(c, hex);
	if (c->put_delay_us && replaced)
		usleep(c->put_delay_us);
	if (renameat(c->dirfd, tmp, c->dirfd, hex) < 0) {
		pthread_mutex_unlock(&c->lock);
		unlinkat(c->dirfd, tmp, 0);
		return;
	}
	atomic_fetch_add(&c->inserts, 1);
	if (!c->sized) {
		entry_t *list;
		size_t n;
		int64_t total = scan(c, &list, &n);
		free(list);
		c->bytes = total < 0 ? 0 : (uint64_t)total;
		c->sized = true;
	} else {
		/* The same blob again replaces its copy: counted once, or the
		 * estimate outgrows the directory and evicts early. */
		c->bytes = c->bytes - MIN(c->bytes, replaced) + len;
	}
	if (c->bytes > c->max_bytes)
		evict(c);
	pthread_mutex_unlock(&c->lock);
}

void chunkcache_drop(chunkcache_t *c, const digest_t *d)
{
	if (!c)
		return;
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(d, hex);
	/* Under the lock, as inserts size what they replace: the copy gone
	 * comes off the estimate, or it outgrows the directory and the next
	 * inserts evict blobs the cache had room for. */
	pthread_mutex_lock(&c->lock);
	uint64_t size = held_size(c, hex);
	if (unlinkat(c->dirfd, hex, 0) == 0 && c->sized)
		c->bytes -= MIN(c->bytes, size);
	pthread_mutex_unlock(&c->lock);
}

void chunkcache_get_stats(chunkcache_t *c, chunkcache_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!c)
		return;
	out->hits = atomic_load(&c->hits);
	out->misses = atomic_load(&c->misses);
	out->inserts = atomic_load(&c->inserts);
	out->evictions = atomic_load(&c->evictions);
	pthread_mutex_lock(&c->lock);
	out->bytes = c->bytes;
	pthread_mutex_unlock(&c->lock);
}
