/* open-eio.c - LD_PRELOAD shim for t0854: opening for reading a chunk (a
 * name of 64 hex digits) that is not listed in the file $EIO_KEEP fails
 * with EIO, as a disk or NFS error would.  Chunks are written (O_WRONLY,
 * under a temporary name) as usual. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool fails(const char *path, int flags)
{
	static char *keep;
	const char *f = getenv("EIO_KEEP");
	const char *b = path ? strrchr(path, '/') : NULL;
	b = b ? b + 1 : path;
	if (!f || !b || (flags & O_ACCMODE) != O_RDONLY || strlen(b) != 64 ||
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

#define SHIM(name)                                                                  \
	int name(int dirfd, const char *path, int flags, ...)                       \
	{                                                                           \
		static int (*real)(int, const char *, int, ...);                    \
		if (!real)                                                          \
			real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, #name); \
		va_list ap;                                                         \
		va_start(ap, flags);                                                \
		mode_t m = va_arg(ap, mode_t);                                      \
		va_end(ap);                                                         \
		if (fails(path, flags)) {                                           \
			errno = EIO;                                                \
			return -1;                                                  \
		}                                                                   \
		return real(dirfd, path, flags, m);                                 \
	}
SHIM(openat)
SHIM(openat64)
