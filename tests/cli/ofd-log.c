/* ofd-log.c - LD_PRELOAD shim for t1763: every F_OFD_SETLK read lock
 * attempt goes through, and is then logged to the file $OFDLOG_LOG as
 * "START RESULT" (the range's first byte; 0 or -errno), so the test can
 * count the attempts on each root's range.  Every other fcntl goes
 * through unlogged. */
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
	int r = real(fd, cmd, arg);
	const struct flock *fl = arg;
	if (cmd == F_OFD_SETLK && fl->l_type == F_RDLCK) {
		int e = errno;
		const char *log = getenv("OFDLOG_LOG");
		FILE *f = log ? fopen(log, "a") : NULL;
		if (f) {
			fprintf(f, "%lld %d\n", (long long)fl->l_start, r < 0 ? -e : 0);
			fclose(f);
		}
		errno = e;
	}
	return r;
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
