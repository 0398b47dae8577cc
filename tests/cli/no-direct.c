/* no-direct.c - LD_PRELOAD shim for the test of chunk writes on a file
 * system without O_DIRECT (t1195).  $NODIRECT picks what fails with
 * EINVAL, as such a file system answers:
 *   open   openat with O_DIRECT (old tmpfs, some FUSE file systems);
 *   write  pwrite on a file opened with O_DIRECT (O_DIRECT taken at open,
 *          but not this alignment).
 * Each failure is counted in the file $NODIRECT_LOG (one line each), so
 * the test knows the fallback really ran. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failing(const char *what)
{
	const char *want = getenv("NODIRECT");
	if (!want || strcmp(want, what))
		return 0;
	const char *log = getenv("NODIRECT_LOG");
	FILE *f = log ? fopen(log, "a") : NULL;
	if (f) {
		fprintf(f, "%s\n", what);
		fclose(f);
	}
	errno = EINVAL;
	return 1;
}

static int shim_openat(const char *name, int dirfd, const char *path, int flags, mode_t mode)
{
	int (*real)(int, const char *, int, ...) =
		(int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, name);
	if ((flags & O_DIRECT) && failing("open"))
		return -1;
	return real(dirfd, path, flags, mode);
}

/* The mode argument is there only with O_CREAT or O_TMPFILE. */
#define OPENAT_SHIM(name)                                            \
	int name(int dirfd, const char *path, int flags, ...)        \
	{                                                            \
		mode_t mode = 0;                                     \
		if (flags & (O_CREAT | O_TMPFILE)) {                 \
			va_list ap;                                  \
			va_start(ap, flags);                         \
			mode = va_arg(ap, mode_t);                   \
			va_end(ap);                                  \
		}                                                    \
		return shim_openat(#name, dirfd, path, flags, mode); \
	}
OPENAT_SHIM(openat)
OPENAT_SHIM(openat64)

static ssize_t shim_pwrite(const char *name, int fd, const void *buf, size_t len, off_t off)
{
	ssize_t (*real)(int, const void *, size_t, off_t) =
		(ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, name);
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_DIRECT) && failing("write"))
		return -1;
	return real(fd, buf, len, off);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return shim_pwrite("pwrite", fd, buf, len, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	return shim_pwrite("pwrite64", fd, buf, len, off);
}
