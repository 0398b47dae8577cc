/* writer.c - see writer.h. */
#include "writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static int writers_dir(cairn_store *st)
{
	if (mkdirat(st->dirfd, "writers", 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(st->dirfd, "writers", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void my_name(char *out, size_t len)
{
	snprintf(out, len, "%d.%llu", (int)getpid(),
		 (unsigned long long)process_start_time(getpid()));
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
	char name[64], body[32];
	my_name(name, sizeof(name));
	int n = snprintf(body, sizeof(body), "%lld\n", (long long)now_ns());
	int fd = openat(dfd, name, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
	int r = fd < 0 ? -errno : write_full(fd, body, n);
	/* GC must see the registration before any chunk this writer touches. */
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	close(dfd);
	if (r < 0)
		st->writer_refs--;
	return r;
}

void writer_unregister(cairn_store *st)
{
	if (!st->writer_refs || --st->writer_refs)
		return;
	char path[80];
	char name[64];
	my_name(name, sizeof(name));
	snprintf(path, sizeof(path), "writers/%s", name);
	unlinkat(st->dirfd, path, 0);
}

int writer_oldest(cairn_store *st, int64_t *oldest)
{
	*oldest = INT64_MAX;
	int dfd = writers_dir(st);
	if (dfd < 0)
		return dfd;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		int pid;
		unsigned long long pstart;
		if (sscanf(de->d_name, "%d.%llu", &pid, &pstart) != 2)
			continue;
		if (process_start_time(pid) != pstart) {
			unlinkat(dirfd(d), de->d_name, 0); /* the writer died */
			continue;
		}
		char buf[32] = {0};
		int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t k = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		long long t = k > 0 ? atoll(buf) : 0;
		/* An unreadable start (being written) counts as "now minus
		 * nothing": treat it as the oldest possible, to be safe. */
		if (t <= 0)
			t = 0;
		if (t < *oldest)
			*oldest = t;
	}
	closedir(d);
	return 0;
}
