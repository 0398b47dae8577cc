/* no-ofd.c - LD_PRELOAD shim for the test of key locks on a file system
 * without open file description locks (t1761): fcntl's F_OFD_SETLK,
 * F_OFD_SETLKW and F_OFD_GETLK fail with EINVAL, as they do there.  Each
 * failure is counted in the file $NOOFD_LOG (one line each), so the test
 * knows the shim acted.  Every other fcntl goes through (SQLite's POSIX
 * locks among them). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int pass(const char *name, int fd, int cmd, void *arg)
{
	int (*real)(int, int, ...) = (int (*)(int, int, ...))dlsym(RTLD_NEXT, name);
	if (cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW || cmd == F_OFD_GETLK) {
		const char *log = getenv("NOOFD_LOG");
		FILE *f = log ? fopen(log, "a") : NULL;
		if (f) {
			fprintf(f, "%s %d\n", name, cmd);
			fclose(f);
		}
		errno = EINVAL;
		return -1;
	}
	return real(fd, cmd, arg);
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return pass("fcntl", fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return pass("fcntl64", fd, cmd, arg);
}
