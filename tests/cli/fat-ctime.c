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

#include "shim.h"

static atomic_int done;

/* Whether path relative to fd (or what fd is open on, path empty) is
 * below $FAT_ROOT. */
static int below_root(int fd, const char *path)
{
	const char *root = getenv("FAT_ROOT");
	char p[PATH_MAX * 2];
	if (!root || !shim_path(fd, path, p, sizeof(p)))
		return 0;
	size_t n = strlen(root);
	return !strncmp(p, root, n) && p[n] == '/';
}

/* vfat keeps no change time: a regular file's shown ctime is its mtime. */
static void no_ctime(int fd, const char *path, int reg, struct timespec *m, struct timespec *c)
{
	if (reg && below_root(fd, path))
		*c = *m;
}
SHIM_STAT(no_ctime)

static void write_in_place(int dirfd, const char *name, const char *log, real_fn real)
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

/* Writes $WRITE_FILE in place at its first plain open. */
static void write_once(int dirfd, const char *path, int flags, real_fn real)
{
	const char *log = getenv("SWAP_LOG");
	if (log && first_plain_open(path, flags, getenv("WRITE_FILE"), &done))
		write_in_place(dirfd, path, log, real);
}
SHIM_OPENAT(write_once)
