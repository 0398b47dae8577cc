/* dir-swap.c - LD_PRELOAD shim that makes the race of a directory swapped
 * between the backup's stat and its open certain: the first openat of a
 * directory named $SWAP_A (relative to its parent's fd, as the walk opens
 * it) first exchanges $SWAP_A and $SWAP_B in that parent (renameat2 with
 * RENAME_EXCHANGE, one atomic step, as a tool rotating directories would)
 * and notes it in $SWAP_LOG, so a test can see the swap happened. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "shim.h"

static atomic_int done;

/* $SWAP_RECREATE=1: the empty directory $SWAP_A is removed and made again
 * (mode 705) with a file "fresh" in it, as `rm -r a; mkdir a` would; on a
 * filesystem that hands a freed inode number straight out again (ext4) it
 * is a new directory under the old one's number, and the log says so. */
static void recreate(int dirfd, const char *a, const char *log)
{
	struct stat before, after;
	if (fstatat(dirfd, a, &before, AT_SYMLINK_NOFOLLOW) < 0 || unlinkat(dirfd, a, AT_REMOVEDIR) < 0 ||
	    mkdirat(dirfd, a, 0705) < 0 || fstatat(dirfd, a, &after, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	char fresh[4096];
	snprintf(fresh, sizeof(fresh), "%s/fresh", a);
	int fd = -1;
	{
		int (*real)(int, const char *, int, ...) =
			(int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
		fd = real(dirfd, fresh, O_WRONLY | O_CREAT | O_EXCL, 0644);
	}
	if (fd < 0)
		return;
	close(fd);
	FILE *f = fopen(log, "a");
	if (f) {
		fprintf(f, "recreated %s %s\n", a, before.st_ino == after.st_ino ? "same-inode" : "new-inode");
		fclose(f);
	}
}

static void swap_once(int dirfd, const char *path, int flags, real_fn real)
{
	(void)real;
	const char *a = getenv("SWAP_A"), *b = getenv("SWAP_B"), *log = getenv("SWAP_LOG");
	const char *again = getenv("SWAP_RECREATE");
	if (!a || (!b && !again) || !log || getenv("SWAP_AT_XATTR") || !(flags & O_DIRECTORY) ||
	    strcmp(path, a) ||
	    atomic_exchange(&done, 1))
		return;
	if (again) {
		recreate(dirfd, a, log);
		return;
	}
	if (renameat2(dirfd, a, dirfd, b, RENAME_EXCHANGE) == 0) {
		FILE *f = fopen(log, "a");
		if (f) {
			fprintf(f, "swapped %s %s\n", a, b);
			fclose(f);
		}
	}
}

SHIM_OPENAT(swap_once)

/* $SWAP_AT_XATTR=1: the exchange is made at the first llistxattr of a
 * path ending in /$SWAP_A instead (a new or changed directory's xattrs are
 * read by path, between the walk's stat and its open). */
ssize_t llistxattr(const char *path, char *list, size_t size)
{
	static ssize_t (*real)(const char *, char *, size_t);
	if (!real)
		real = (ssize_t(*)(const char *, char *, size_t))dlsym(RTLD_NEXT, "llistxattr");
	const char *a = getenv("SWAP_A"), *b = getenv("SWAP_B"), *log = getenv("SWAP_LOG");
	size_t n = strlen(path), an = a ? strlen(a) : 0;
	if (getenv("SWAP_AT_XATTR") && a && b && log && n > an && path[n - an - 1] == '/' &&
	    !strcmp(path + n - an, a) && !atomic_exchange(&done, 1)) {
		char other[4096];
		snprintf(other, sizeof(other), "%.*s%s", (int)(n - an), path, b);
		if (renameat2(AT_FDCWD, path, AT_FDCWD, other, RENAME_EXCHANGE) == 0) {
			FILE *f = fopen(log, "a");
			if (f) {
				fprintf(f, "swapped %s %s at xattrs\n", a, b);
				fclose(f);
			}
		}
	}
	return real(path, list, size);
}
