/* file-swap.c - LD_PRELOAD shim that makes the race of a regular file
 * replaced between the backup's stat and its open certain: the first
 * openat of the name $SWAP_FILE (relative to the source's root, as the
 * backup opens files) first removes that file and creates a new one on the
 * name with as many bytes, all 'N' (rm f; write f anew), and notes in
 * $SWAP_LOG whether the new file got the old one's inode number back
 * (ext4 hands a freed number straight out again), so a test can see the
 * swap happened and that the inode could not tell the files apart. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

static atomic_int done;

static void recreate(int dirfd, const char *name, const char *log, real_fn real)
{
	struct stat before, after;
	if (fstatat(dirfd, name, &before, AT_SYMLINK_NOFOLLOW) < 0 || unlinkat(dirfd, name, 0) < 0)
		return;
	int fd = real(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	char block[4096];
	memset(block, 'N', sizeof(block));
	for (off_t left = before.st_size; left > 0;) {
		ssize_t k = write(fd, block, left < (off_t)sizeof(block) ? (size_t)left : sizeof(block));
		if (k <= 0)
			break;
		left -= k;
	}
	close(fd);
	if (fstatat(dirfd, name, &after, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	FILE *f = fopen(log, "a");
	if (f) {
		fprintf(f, "recreated %s %s\n", name,
			before.st_ino == after.st_ino ? "same-inode" : "new-inode");
		fclose(f);
	}
}

/* Recreates $SWAP_FILE at its first plain open. */
static void recreate_once(int dirfd, const char *path, int flags, real_fn real)
{
	const char *log = getenv("SWAP_LOG");
	if (log && first_plain_open(path, flags, getenv("SWAP_FILE"), &done))
		recreate(dirfd, path, log, real);
}
SHIM_OPENAT(recreate_once)
