/* symlink-swap.c - LD_PRELOAD shim that makes the race of a restored
 * symlink swapped right after it is made certain: the first symlinkat
 * making the name $SWAP_LINK (a last component) is followed at once by a
 * rename of $SWAP_NEW (a path on the same filesystem) over it, as another
 * user writing the target directory could do, and the swap is noted in
 * $SWAP_LOG, so a test can see it happened. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int done;

int symlinkat(const char *target, int dirfd, const char *path)
{
	static int (*real)(const char *, int, const char *);
	if (!real)
		real = (int (*)(const char *, int, const char *))dlsym(RTLD_NEXT, "symlinkat");
	int r = real(target, dirfd, path);
	const char *want = getenv("SWAP_LINK"), *new = getenv("SWAP_NEW"), *log = getenv("SWAP_LOG");
	if (r < 0 || !want || !new || !log || strcmp(path, want) || atomic_exchange(&done, 1))
		return r;
	if (renameat(AT_FDCWD, new, dirfd, path) == 0) {
		FILE *f = fopen(log, "a");
		if (f) {
			fprintf(f, "swapped %s\n", path);
			fclose(f);
		}
	}
	return r;
}
