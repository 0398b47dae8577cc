/* fat-ctime.c - LD_PRELOAD shim that shows a source's regular files with
 * times as vfat keeps them: its ctime is its mtime (vfat stores no change
 * time), while the birth time statx reports is the real creation time, so
 * a file whose mtime was set into the past was born after its "ctime".
 * Regular files below $FAT_ROOT (stat'ed by name or by an open fd) are
 * shown so.  The first openat of the name $WRITE_FILE (relative to the
 * source's root, as the backup opens files) first overwrites its first
 * byte in place (its mtime, so its shown ctime, moves), as a program
 * writing the file between the walk's stat and the open would, and notes
 * "wrote NAME" in $SWAP_LOG. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_int done;

/* Whether path relative to fd (or what fd is open on, path empty) is
 * below $FAT_ROOT. */
static int below_root(int fd, const char *path)
{
	const char *root = getenv("FAT_ROOT");
	char dir[PATH_MAX], link[64], p[PATH_MAX * 2];
	if (!root)
		return 0;
	if (*path == '/') {
		snprintf(p, sizeof(p), "%s", path);
	} else {
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
		snprintf(p, sizeof(p), "%s%s%s", dir, *path ? "/" : "", path);
	}
	size_t n = strlen(root);
	return !strncmp(p, root, n) && p[n] == '/';
}

int fstatat64(int fd, const char *path, struct stat64 *st, int flags)
{
	static int (*real)(int, const char *, struct stat64 *, int);
	if (!real)
		real = (int (*)(int, const char *, struct stat64 *, int))dlsym(RTLD_NEXT, "fstatat64");
	int r = real(fd, path, st, flags);
	if (r == 0 && S_ISREG(st->st_mode) && below_root(fd, path))
		st->st_ctim = st->st_mtim;
	return r;
}

int fstat64(int fd, struct stat64 *st)
{
	static int (*real)(int, struct stat64 *);
	if (!real)
		real = (int (*)(int, struct stat64 *))dlsym(RTLD_NEXT, "fstat64");
	int r = real(fd, st);
	if (r == 0 && S_ISREG(st->st_mode) && below_root(fd, ""))
		st->st_ctim = st->st_mtim;
	return r;
}

int fstat(int fd, struct stat *st)
{
	return fstat64(fd, (struct stat64 *)st);
}

int statx(int fd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
	static int (*real)(int, const char *, int, unsigned int, struct statx *);
	if (!real)
		real = (int (*)(int, const char *, int, unsigned int, struct statx *))dlsym(RTLD_NEXT, "statx");
	int r = real(fd, path, flags, mask, stx);
	if (r == 0 && S_ISREG(stx->stx_mode) && below_root(fd, path))
		stx->stx_ctime = stx->stx_mtime;
	return r;
}

static void write_in_place(int dirfd, const char *name, const char *log,
			   int (*real)(int, const char *, int, ...))
{
	int fd = real(dirfd, name, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	int ok = pwrite(fd, "W", 1, 0) == 1;
	close(fd);
	FILE *f = ok ? fopen(log, "a") : NULL;
	if (f) {
		fprintf(f, "wrote %s\n", name);
		fclose(f);
	}
}

/* The binary may call either name (openat64 with 64-bit offsets). */
#define OPEN_SHIM(fn)                                                                \
	int fn(int dirfd, const char *path, int flags, ...)                          \
	{                                                                            \
		static int (*real)(int, const char *, int, ...);                     \
		if (!real)                                                           \
			real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, #fn); \
		mode_t mode = 0;                                                     \
		if (flags & (O_CREAT | O_TMPFILE)) {                                 \
			va_list ap;                                                  \
			va_start(ap, flags);                                         \
			mode = va_arg(ap, mode_t);                                   \
			va_end(ap);                                                  \
		}                                                                    \
		const char *want = getenv("WRITE_FILE"), *log = getenv("SWAP_LOG"); \
		if (want && log && !(flags & (O_CREAT | O_DIRECTORY)) &&             \
		    !strcmp(path, want) && !atomic_exchange(&done, 1))               \
			write_in_place(dirfd, path, log, real);                      \
		return real(dirfd, path, flags, mode);                               \
	}
OPEN_SHIM(openat)
OPEN_SHIM(openat64)
