/* link-swap.c - LD_PRELOAD shim that makes the race of a symlink replaced
 * between the backup's stat and its readlink certain: the first readlinkat
 * of the name $SWAP_LINK first renames $SWAP_NEW (a name in the same
 * directory) over it, as `ln -sfn` through a temporary name does, and
 * notes it in $SWAP_LOG, so a test can see the swap happened. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int done;

ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
	static ssize_t (*real)(int, const char *, char *, size_t);
	if (!real)
		real = (ssize_t(*)(int, const char *, char *, size_t))dlsym(RTLD_NEXT, "readlinkat");
	const char *want = getenv("SWAP_LINK"), *new = getenv("SWAP_NEW"), *log = getenv("SWAP_LOG");
	if (want && new && log && !strcmp(path, want) && !atomic_exchange(&done, 1) &&
	    renameat(dirfd, new, dirfd, want) == 0) {
		FILE *f = fopen(log, "a");
		if (f) {
			fprintf(f, "swapped %s\n", want);
			fclose(f);
		}
	}
	return real(dirfd, path, buf, size);
}
