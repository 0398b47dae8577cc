/* link-swap.c - LD_PRELOAD shim that makes the race of a symlink replaced
 * between the backup's stat and its readlink certain: the first readlinkat
 * of the name $SWAP_LINK first renames $SWAP_NEW (a name in the same
 * directory) over it, as `ln -sfn` through a temporary name does, and
 * notes it in $SWAP_LOG, so a test can see the swap happened.  With
 * $SWAP_RECREATE set instead of $SWAP_NEW, it removes the link and makes a
 * new one to that target on the name (rm; ln -s), which on a filesystem
 * that hands a freed inode number straight out again (ext4) is a new link
 * under the old one's inode number; the log says whether it was. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_int done;

static void note(const char *log, const char *what, const char *name)
{
	FILE *f = fopen(log, "a");
	if (f) {
		fprintf(f, "%s %s\n", what, name);
		fclose(f);
	}
}

ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
	static ssize_t (*real)(int, const char *, char *, size_t);
	if (!real)
		real = (ssize_t(*)(int, const char *, char *, size_t))dlsym(RTLD_NEXT, "readlinkat");
	const char *want = getenv("SWAP_LINK"), *new = getenv("SWAP_NEW"), *log = getenv("SWAP_LOG");
	const char *again = getenv("SWAP_RECREATE");
	if (!want || !log || strcmp(path, want) || (!new && !again) || atomic_exchange(&done, 1))
		return real(dirfd, path, buf, size);
	if (new) {
		if (renameat(dirfd, new, dirfd, want) == 0)
			note(log, "swapped", want);
	} else {
		struct stat before, after;
		if (fstatat(dirfd, want, &before, AT_SYMLINK_NOFOLLOW) == 0 &&
		    unlinkat(dirfd, want, 0) == 0 && symlinkat(again, dirfd, want) == 0 &&
		    fstatat(dirfd, want, &after, AT_SYMLINK_NOFOLLOW) == 0)
			note(log, before.st_ino == after.st_ino ? "recreated-same-inode" : "recreated-new-inode",
			     want);
	}
	return real(dirfd, path, buf, size);
}
