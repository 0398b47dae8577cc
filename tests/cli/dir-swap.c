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

static atomic_int done;

static void swap_once(int dirfd, const char *path, int flags)
{
	const char *a = getenv("SWAP_A"), *b = getenv("SWAP_B"), *log = getenv("SWAP_LOG");
	if (!a || !b || !log || !(flags & O_DIRECTORY) || strcmp(path, a) || atomic_exchange(&done, 1))
		return;
	if (renameat2(dirfd, a, dirfd, b, RENAME_EXCHANGE) == 0) {
		FILE *f = fopen(log, "a");
		if (f) {
			fprintf(f, "swapped %s %s\n", a, b);
			fclose(f);
		}
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
		swap_once(dirfd, path, flags);                                       \
		return real(dirfd, path, flags, mode);                               \
	}
OPEN_SHIM(openat)
OPEN_SHIM(openat64)
