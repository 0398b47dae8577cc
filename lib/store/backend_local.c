/* backend_local.c - chunk backend on a directory: "file:///path".
 *
 * Objects are files: <path>/chunks/xxxx/<hex>, <path>/meta/<name>.  A put
 * writes a temporary file, fsyncs it and renames it into place, so an
 * object either exists whole or not at all; the directories of a batch
 * are fsynced once each after its renames.  Listing walks the chunk
 * directories in order; the cursor is the next directory to read.
 */
#include "store/backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NDIRS 65536
#define PAGE 1000

typedef struct localbe {
	backend_t be;
	int fd; /* the root directory */
	pthread_mutex_t lock;
	backend_stats st;
	char err[512];
} localbe_t;

static atomic_uint_fast64_t tmpno;

static int fail(localbe_t *b, int r, const char *what, const char *name)
{
	char msg[sizeof(b->err)];
	snprintf(msg, sizeof(msg), "%s %s: %s", what, name, strerror(-r));
	backend_note_error(msg);
	pthread_mutex_lock(&b->lock);
	memcpy(b->err, msg, sizeof(b->err));
	pthread_mutex_unlock(&b->lock);
	return r;
}

static void count(localbe_t *b, uint64_t *field, uint64_t n)
{
	pthread_mutex_lock(&b->lock);
	*field += n;
	pthread_mutex_unlock(&b->lock);
}

static int mkdirs_for(int root, const char *name)
{
	char path[128];
	snprintf(path, sizeof(path), "%s", name);
	for (char *p = strchr(path, '/'); p; p = strchr(p + 1, '/')) {
		*p = 0;
		if (mkdirat(root, path, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

/* Writes one object durably: temporary file, fsync, rename.  only_new:
 * -EEXIST if name exists (like S3's If-None-Match: *), -EOPNOTSUPP where
 * the file system can neither rename without replacing nor hard-link. */
static int put_file(localbe_t *b, const char *name, const void *data, int srcfd, size_t len,
		    bool only_new)
{
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%" PRIu64, name, (int)getpid(),
		 (uint64_t)atomic_fetch_add(&tmpno, 1));
	int fd = openat(b->fd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT) {
		int r = mkdirs_for(b->fd, name);
		if (r < 0)
			return r;
		fd = openat(b->fd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return -errno;
	int r = 0;
	if (data) {
		r = write_full(fd, data, len);
	} else {
		uint8_t buf[65536];
		for (size_t off = 0; off < len && !r;) {
			ssize_t n = pread_full(srcfd, buf, MIN(sizeof(buf), len - off), off);
			r = n <= 0 ? (n < 0 ? (int)n : -EIO) : write_full(fd, buf, n);
			off += n > 0 ? (size_t)n : 0;
		}
	}
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && only_new) {
		r = rename_noreplace(b->fd, tmp, name);
		/* (neither RENAME_NOREPLACE nor hard links here) */
		if (r == -EPERM || r == -EOPNOTSUPP)
			r = -EOPNOTSUPP;
	}
	else if (!r && renameat(b->fd, tmp, b->fd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(b->fd, tmp, 0);
	return r;
}

/* Reads name whole into out; -EIO for anything over max bytes. */
static int read_file(localbe_t *b, const char *name, buf_t *out, uint64_t max)
{
	_cleanup_close_ int fd = openat(b->fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EIO;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	out->len = 0;
	int r = buf_reserve(out, st.st_size + 1);
	if (r < 0)
		return r;
	ssize_t n = read_full(fd, out->data, st.st_size);
	if (n < 0)
		return n;
	out->len = n;
	count(b, &b->st.bytes_down, n);
	return 0;
}

static int lb_put_many(backend_t *be, size_t n, const backend_put *items, int *errs)
{
	localbe_t *b = (localbe_t *)be;
	int first = 0;
	for (size_t i = 0; i < n; i++) {
		char name[80];
		backend_chunk_name(&items[i].d, name);
		int r = put_file(b, name, items[i].data, items[i].fd, items[i].len, false);
		count(b, &b->st.put, 1);
		if (r < 0) {
			fail(b, r, "put", name);
			if (!first)
				first = r;
		} else {
			count(b, &b->st.bytes_up, items[i].len);
		}
		if (errs)
			errs[i] = r;
	}
	/* The renames: one syncfs for the whole batch. */
	if (!first && syncfs(b->fd) < 0)
		first = fail(b, -errno, "syncfs", "");
	return first;
}

static int lb_have_many(backend_t *be, size_t n, const digest_t *d, bool *have)
{
	localbe_t *b = (localbe_t *)be;
	for (size_t i = 0; i < n; i++) {
		char name[80];
		backend_chunk_name(&d[i], name);
		struct stat st;
		count(b, &b->st.head, 1);
		have[i] = fstatat(b->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (!have[i] && errno != ENOENT)
			return fail(b, -errno, "stat", name);
	}
	return 0;
}

static int lb_get(backend_t *be, const digest_t *d, buf_t *out)
{
	localbe_t *b = (localbe_t *)be;
	char name[80];
	backend_chunk_name(d, name);
	count(b, &b->st.get, 1);
	int r = read_file(b, name, out, 64 << 20);
	return r < 0 && r != -ENOENT ? fail(b, r, "get", name) : r;
}

static int lb_delete_many(backend_t *be, size_t n, const digest_t *d)
{
	localbe_t *b = (localbe_t *)be;
	for (size_t i = 0; i < n; i++) {
		char name[80];
		backend_chunk_name(&d[i], name);
		if (unlinkat(b->fd, name, 0) < 0 && errno != ENOENT)
			return fail(b, -errno, "delete", name);
	}
	count(b, &b->st.delete_req, (n + PAGE - 1) / PAGE);
	count(b, &b->st.delete_keys, n);
	return 0;
}

/* Reads chunk directories from the cursor on until a page is full. */
static int lb_list_page(backend_t *be, char **cursor, backend_obj **objs, size_t *n)
{
	localbe_t *b = (localbe_t *)be;
	unsigned dir = *cursor ? (unsigned)strtoul(*cursor, NULL, 16) : 0;
	size_t cap = PAGE, k = 0;
	backend_obj *v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	count(b, &b->st.list, 1);
	for (; dir < NDIRS && k < PAGE; dir++) {
		char dn[16];
		snprintf(dn, sizeof(dn), "chunks/%04x", dir);
		int fd = openat(b->fd, dn, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				continue;
			free(v);
			return fail(b, -errno, "list", dn);
		}
		DIR *dp = fdopendir(fd);
		if (!dp) {
			close(fd);
			free(v);
			return -ENOMEM;
		}
		struct dirent *e;
		while ((e = readdir(dp))) {
			char name[300];
			snprintf(name, sizeof(name), "%s/%s", dn, e->d_name);
			digest_t d;
			struct stat st;
			if (backend_parse_chunk_name(name, &d) < 0 ||
			    fstatat(dirfd(dp), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (k == cap) {
				backend_obj *nv = realloc(v, 2 * cap * sizeof(*v));
				if (!nv) {
					closedir(dp);
					free(v);
					return -ENOMEM;
				}
				v = nv;
				cap *= 2;
			}
			v[k++] = (backend_obj){.d = d,
					       .mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
							   st.st_mtim.tv_nsec,
					       .size = st.st_size};
		}
		closedir(dp);
	}
	free(*cursor);
	*cursor = NULL;
	if (dir < NDIRS && asprintf(cursor, "%04x", dir) < 0) {
		free(v);
		return -ENOMEM;
	}
	*objs = v;
	*n = k;
	return 0;
}

static int lb_put_meta(backend_t *be, const char *name, int fd, size_t len, bool only_new)
{
	localbe_t *b = (localbe_t *)be;
	char path[96];
	snprintf(path, sizeof(path), "meta/%s", name);
	count(b, &b->st.put, 1);
	int r = put_file(b, path, NULL, fd, len, only_new);
	return r < 0 ? fail(b, r, "put", path) : 0;
}

static int lb_get_meta(backend_t *be, const char *name, buf_t *out, uint64_t max)
{
	localbe_t *b = (localbe_t *)be;
	char path[96];
	snprintf(path, sizeof(path), "meta/%s", name);
	count(b, &b->st.get, 1);
	int r = read_file(b, path, out, max);
	return r < 0 ? fail(b, r, "get", path) : 0;
}

/* Copies meta/name into fd (truncated first), 64 KiB at a time. */
static int lb_get_meta_fd(backend_t *be, const char *name, int fd)
{
	localbe_t *b = (localbe_t *)be;
	char path[96];
	snprintf(path, sizeof(path), "meta/%s", name);
	count(b, &b->st.get, 1);
	_cleanup_close_ int src = openat(b->fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	int r = src < 0 ? -errno : fstat(src, &st) < 0 ? -errno : 0;
	if (!r && (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > BACKEND_META_MAX))
		r = -EIO;
	if (!r && (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0))
		r = -errno;
	uint8_t buf[65536];
	uint64_t done = 0;
	while (!r) {
		ssize_t n = read_full(src, buf, sizeof(buf));
		if (n <= 0) {
			r = (int)n;
			break;
		}
		if ((done += (uint64_t)n) > BACKEND_META_MAX)
			r = -EIO;
		else
			r = write_full(fd, buf, n);
	}
	if (!r)
		count(b, &b->st.bytes_down, done);
	return r < 0 ? fail(b, r, "get", path) : 0;
}

static int lb_delete_meta(backend_t *be, const char *name)
{
	localbe_t *b = (localbe_t *)be;
	char path[96];
	snprintf(path, sizeof(path), "meta/%s", name);
	count(b, &b->st.delete_req, 1);
	if (unlinkat(b->fd, path, 0) < 0 && errno != ENOENT)
		return fail(b, -errno, "delete", path);
	return 0;
}

static void lb_stats(backend_t *be, backend_stats *out)
{
	localbe_t *b = (localbe_t *)be;
	pthread_mutex_lock(&b->lock);
	*out = b->st;
	pthread_mutex_unlock(&b->lock);
}

static const char *lb_errmsg(backend_t *be)
{
	return ((localbe_t *)be)->err;
}

static void lb_close(backend_t *be)
{
	localbe_t *b = (localbe_t *)be;
	close(b->fd);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

static const backend_ops local_ops = {
	.kind = "local",
	.put_many = lb_put_many,
	.have_many = lb_have_many,
	.get = lb_get,
	.delete_many = lb_delete_many,
	.list_page = lb_list_page,
	.put_meta = lb_put_meta,
	.get_meta = lb_get_meta,
	.get_meta_fd = lb_get_meta_fd,
	.delete_meta = lb_delete_meta,
	.stats = lb_stats,
	.errmsg = lb_errmsg,
	.close = lb_close,
};

int backend_local_open(const char *path, bool create, backend_t **out, char *errbuf,
		       size_t errlen)
{
	if (create && mkdir(path, 0700) < 0 && errno != EEXIST) {
		int r = -errno;
		if (errbuf)
			snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		return r;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int r = -errno;
		if (errbuf)
			snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		return r;
	}
	localbe_t *b = calloc(1, sizeof(*b));
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	b->be.ops = &local_ops;
	b->fd = fd;
	pthread_mutex_init(&b->lock, NULL);
	*out = &b->be;
	return 0;
}
