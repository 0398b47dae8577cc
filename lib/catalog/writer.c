/* writer.c - see writer.h. */
#include "catalog/writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A hidden registration older than this whose lock is free was left by a
 * writer killed while registering; younger ones may be about to be locked. */
#define STALE_NEW_SECS 3600

static int writers_dir(cairn_store *st)
{
	if (mkdirat(st->dirfd, "writers", 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(st->dirfd, "writers", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int owner_file_dead(int fd)
{
	/* A read lock conflicts with the owner's write lock and needs no write
	 * access, so this works on files we could not open for writing. */
	int r = lock_try(fd, F_RDLCK);
	if (r == 0) {
		struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
		fcntl(fd, F_OFD_SETLK, &fl);
	}
	return r;
}

int owner_file_publish(int dfd, const char *hidden, const char *name, bool durable, int *out)
{
	int fd = openat(dfd, hidden, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	char body[64];
	int n = snprintf(body, sizeof(body), "%lld %d\n", (long long)now_ns(), (int)getpid());
	int r = lock_try(fd, F_WRLCK);
	if (r == 0)
		r = write_full(fd, body, n);
	if (r == 0 && durable && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && renameat(dfd, hidden, dfd, name) < 0)
		r = -errno;
	if (r == 0 && durable && fsync(dfd) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dfd, hidden, 0);
		unlinkat(dfd, name, 0);
		close(fd);
		return r;
	}
	*out = fd;
	return 0;
}

int writer_register(cairn_store *st)
{
	if (st->writer_refs++)
		return 0;
	int dfd = writers_dir(st);
	if (dfd < 0) {
		st->writer_refs--;
		return dfd;
	}
	uint64_t rnd = random_u64();
	char hidden[64];
	snprintf(st->writer_name, sizeof(st->writer_name), "%d.%llu.%016llx", (int)getpid(),
		 (unsigned long long)process_start_time(getpid()), (unsigned long long)rnd);
	snprintf(hidden, sizeof(hidden), ".new.%016llx", (unsigned long long)rnd);
	/* GC (maybe on another NFS client) must see the registration before
	 * any chunk this writer touches: durable. */
	int r = owner_file_publish(dfd, hidden, st->writer_name, true, &st->writer_fd);
	close(dfd);
	if (r < 0)
		st->writer_refs--;
	return r;
}

void writer_unregister(cairn_store *st)
{
	if (!st->writer_refs || --st->writer_refs)
		return;
	char path[128];
	snprintf(path, sizeof(path), "writers/%s", st->writer_name);
	/* Unlink before unlocking: GC must never see the file unlocked while
	 * we still count as running. */
	unlinkat(st->dirfd, path, 0);
	close(st->writer_fd);
	st->writer_fd = -1;
}

/* The registration's start time, or 0 (oldest possible: safe) when the
 * body cannot be read. */
static int64_t start_of(int fd)
{
	char buf[64] = {0};
	ssize_t k = pread(fd, buf, sizeof(buf) - 1, 0);
	long long t = k > 0 ? atoll(buf) : 0;
	return t > 0 ? t : 0;
}

/* Looks at one entry: removes it if it is a dead owner's, else passes
 * the open file to live(). */
static void consider(int dfd, const char *name, void (*live)(int fd, void *arg), void *arg)
{
	bool hidden = name[0] == '.';
	if (hidden && strncmp(name, ".new.", 5))
		return; /* ".", ".." */
	int fd = open_regular(dfd, name, O_RDONLY);
	if (fd == CAIRN_ECORRUPT) {
		/* Not a regular file: nobody can lock it, so no owner. */
		unlinkat(dfd, name, 0);
		return;
	}
	if (fd < 0)
		return; /* gone meanwhile */
	struct stat sb;
	/* A young hidden file may be about to be locked by its owner: even
	 * probing it could make that lock fail. */
	if (hidden && (fstat(fd, &sb) < 0 || sb.st_mtime >= time(NULL) - STALE_NEW_SECS)) {
		close(fd);
		return;
	}
	int r = owner_file_dead(fd);
	if (r == 0)
		unlinkat(dfd, name, 0);
	else if (!hidden && live)
		live(fd, arg); /* alive, or we cannot tell: count it, to be safe */
	close(fd);
}

int owner_dir_scan(int dfd, void (*live)(int fd, void *arg), void *arg)
{
	int fd = dup(dfd);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		consider(dirfd(d), de->d_name, live, arg);
	closedir(d);
	return 0;
}

static void note_start(int fd, void *arg)
{
	int64_t *oldest = arg, t = start_of(fd);
	if (t < *oldest)
		*oldest = t;
}

int writer_oldest(cairn_store *st, int64_t *oldest)
{
	*oldest = INT64_MAX;
	int dfd = writers_dir(st);
	if (dfd < 0)
		return dfd;
	int r = owner_dir_scan(dfd, note_start, oldest);
	close(dfd);
	return r;
}
