/* chunk-eio.c - LD_PRELOAD shim for the tests of a receiver whose disk
 * fails: a call on a chunk (a name of 64 hex digits) not listed in the
 * file $EIO_KEEP fails with EIO, as a disk or NFS error would.  $EIO_CALL
 * picks the call:
 *   touch  utimensat on a chunk that is on disk (t0847); a chunk being
 *          written (not there yet) is touched as usual;
 *   open   openat for reading (t0854); chunks are written (O_WRONLY,
 *          under a temporary name) as usual. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Whether path names a chunk that is not in $EIO_KEEP, when $EIO_CALL is call. */
static bool unlisted_chunk(const char *path, const char *call)
{
	static char *keep;
	const char *f = getenv("EIO_KEEP"), *want = getenv("EIO_CALL");
	const char *b = path ? strrchr(path, '/') : NULL;
	b = b ? b + 1 : path;
	if (!f || !want || strcmp(want, call) || !b || strlen(b) != 64 ||
	    strspn(b, "0123456789abcdef") != 64)
		return false;
	if (!keep) {
		FILE *fp = fopen(f, "r");
		keep = calloc(1, 1 << 24);
		if (fp && keep) {
			size_t n = fread(keep, 1, (1 << 24) - 1, fp);
			keep[n] = 0;
		}
		if (fp)
			fclose(fp);
	}
	return keep && !strstr(keep, b);
}

int utimensat(int dirfd, const char *path, const struct timespec t[2], int flags)
{
	static int (*real)(int, const char *, const struct timespec *, int);
	if (!real)
		real = (int (*)(int, const char *, const struct timespec *, int))dlsym(RTLD_NEXT,
										 "utimensat");
	if (unlisted_chunk(path, "touch") && real(dirfd, path, t, flags) == 0) {
		errno = EIO;
		return -1;
	}
	return real(dirfd, path, t, flags);
}

#define OPEN_SHIM(name)                                                               \
	int name(int dirfd, const char *path, int flags, ...)                         \
	{                                                                             \
		static int (*real)(int, const char *, int, ...);                      \
		if (!real)                                                            \
			real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, #name); \
		va_list ap;                                                           \
		va_start(ap, flags);                                                  \
		mode_t m = va_arg(ap, mode_t);                                        \
		va_end(ap);                                                           \
		if ((flags & O_ACCMODE) == O_RDONLY && unlisted_chunk(path, "open")) { \
			errno = EIO;                                                  \
			return -1;                                                    \
		}                                                                     \
		return real(dirfd, path, flags, m);                                   \
	}
OPEN_SHIM(openat)
OPEN_SHIM(openat64)
