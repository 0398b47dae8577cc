/* shim.h - the wrappers several LD_PRELOAD test shims share.  A shim
 * defines _GNU_SOURCE before including this (as before any header) and
 * then, with its own hook, expands:
 *
 *   SHIM_OPENAT(hook)  openat and openat64 (the binary may call either;
 *       openat64 with 64-bit offsets) that call
 *       hook(dirfd, path, flags, real) and then the real function, passing
 *       the mode argument on (it is there only with O_CREAT or O_TMPFILE).
 *       real is the wrapped function, for a hook that opens files itself.
 *
 *   SHIM_STAT(adjust)  fstatat64, fstat64, fstat and statx that call the
 *       real function and, when it succeeded, adjust(fd, path, reg, &mtime,
 *       &ctime) with path "" for an fd and reg whether the object is a
 *       regular file, so a shim can rewrite the times it reports.
 *
 * Its hooks may use shim_path and first_plain_open below. */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef int (*real_fn)(int, const char *, int, ...);

/* The whole path of path relative to fd (or of what fd is open on, when
 * path is empty) into buf; 0 when it cannot be told. */
static inline int shim_path(int fd, const char *path, char *buf, size_t size)
{
	if (*path == '/') {
		snprintf(buf, size, "%s", path);
		return 1;
	}
	char dir[PATH_MAX], link[64];
	if (fd == AT_FDCWD) {
		if (!getcwd(dir, sizeof(dir)))
			return 0;
	} else {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, dir, sizeof(dir) - 1);
		if (n < 0)
			return 0;
		dir[n] = 0;
	}
	snprintf(buf, size, "%s%s%s", dir, *path ? "/" : "", path);
	return 1;
}

/* Whether this open is the first plain one (neither creating nor of a
 * directory) of the name want, which *done notes, so a shim acts once. */
static inline int first_plain_open(const char *path, int flags, const char *want, atomic_int *done)
{
	return want && !(flags & (O_CREAT | O_DIRECTORY)) && !strcmp(path, want) &&
	       !atomic_exchange(done, 1);
}

#define SHIM_OPENAT_AS(fn, hook)                                    \
	int fn(int dirfd, const char *path, int flags, ...)         \
	{                                                           \
		static real_fn real;                                \
		if (!real)                                          \
			real = (real_fn)dlsym(RTLD_NEXT, #fn);      \
		mode_t mode = 0;                                    \
		if (flags & (O_CREAT | O_TMPFILE)) {                \
			va_list ap;                                 \
			va_start(ap, flags);                        \
			mode = va_arg(ap, mode_t);                  \
			va_end(ap);                                 \
		}                                                   \
		hook(dirfd, path, flags, real);                     \
		return real(dirfd, path, flags, mode);              \
	}
#define SHIM_OPENAT(hook)                \
	SHIM_OPENAT_AS(openat, hook)     \
	SHIM_OPENAT_AS(openat64, hook)

#define SHIM_STAT(adjust)                                                                               \
	int fstatat64(int fd, const char *path, struct stat64 *st, int flags)                          \
	{                                                                                               \
		static int (*real)(int, const char *, struct stat64 *, int);                           \
		if (!real)                                                                              \
			real = (int (*)(int, const char *, struct stat64 *, int))dlsym(RTLD_NEXT, "fstatat64"); \
		int r = real(fd, path, st, flags);                                                      \
		if (r == 0)                                                                             \
			adjust(fd, path, S_ISREG(st->st_mode), &st->st_mtim, &st->st_ctim);             \
		return r;                                                                               \
	}                                                                                               \
                                                                                                        \
	int fstat64(int fd, struct stat64 *st)                                                          \
	{                                                                                               \
		static int (*real)(int, struct stat64 *);                                               \
		if (!real)                                                                              \
			real = (int (*)(int, struct stat64 *))dlsym(RTLD_NEXT, "fstat64");             \
		int r = real(fd, st);                                                                   \
		if (r == 0)                                                                             \
			adjust(fd, "", S_ISREG(st->st_mode), &st->st_mtim, &st->st_ctim);               \
		return r;                                                                               \
	}                                                                                               \
                                                                                                        \
	int fstat(int fd, struct stat *st)                                                              \
	{                                                                                               \
		return fstat64(fd, (struct stat64 *)st);                                                \
	}                                                                                               \
                                                                                                        \
	int statx(int fd, const char *path, int flags, unsigned int mask, struct statx *stx)            \
	{                                                                                               \
		static int (*real)(int, const char *, int, unsigned int, struct statx *);              \
		if (!real)                                                                              \
			real = (int (*)(int, const char *, int, unsigned int, struct statx *))dlsym(   \
				RTLD_NEXT, "statx");                                                    \
		int r = real(fd, path, flags, mask, stx);                                               \
		if (r == 0) {                                                                           \
			struct timespec m = {stx->stx_mtime.tv_sec, stx->stx_mtime.tv_nsec};            \
			struct timespec c = {stx->stx_ctime.tv_sec, stx->stx_ctime.tv_nsec};            \
			adjust(fd, path, S_ISREG(stx->stx_mode), &m, &c);                               \
			stx->stx_mtime.tv_sec = m.tv_sec;                                               \
			stx->stx_mtime.tv_nsec = m.tv_nsec;                                             \
			stx->stx_ctime.tv_sec = c.tv_sec;                                               \
			stx->stx_ctime.tv_nsec = c.tv_nsec;                                             \
		}                                                                                       \
		return r;                                                                               \
	}
