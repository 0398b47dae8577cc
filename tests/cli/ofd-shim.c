/* ofd-shim.c - LD_PRELOAD shim over fcntl's open file description (OFD)
 * locks, for the tests of key locks.  $OFD_SHIM picks what it does:
 * - "refuse" (t1761, t1762): F_OFD_SETLK, F_OFD_SETLKW and F_OFD_GETLK
 *   fail with EINVAL, as they do on a file system without OFD locks.  Each
 *   refusal is logged to the file $OFD_SHIM_LOG as "CALL CMD", so the test
 *   knows the shim acted.
 * - "log" (t1763): every F_OFD_SETLK read lock attempt goes through, and is
 *   then logged to $OFD_SHIM_LOG as "START RESULT" (the range's first byte;
 *   0 or -errno), so the test can count the attempts on each root's range.
 * Every other fcntl goes through unlogged (SQLite's POSIX locks among
 * them). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* log_line: appends one formatted line to $OFD_SHIM_LOG (if set); errno
 * is kept. */
static void log_line(const char *fmt, ...)
{
	int e = errno;
	const char *log = getenv("OFD_SHIM_LOG");
	FILE *f = log ? fopen(log, "a") : NULL;
	if (f) {
		va_list ap;
		va_start(ap, fmt);
		vfprintf(f, fmt, ap);
		va_end(ap);
		fclose(f);
	}
	errno = e;
}

static int is_ofd(int cmd)
{
	return cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW || cmd == F_OFD_GETLK;
}

static int pass(const char *name, int fd, int cmd, void *arg)
{
	int (*real)(int, int, ...) = (int (*)(int, int, ...))dlsym(RTLD_NEXT, name);
	const char *mode = getenv("OFD_SHIM");
	if (mode && strcmp(mode, "refuse") == 0 && is_ofd(cmd)) {
		log_line("%s %d\n", name, cmd);
		errno = EINVAL;
		return -1;
	}
	int r = real(fd, cmd, arg);
	const struct flock *fl = arg;
	if (mode && strcmp(mode, "log") == 0 && cmd == F_OFD_SETLK && fl->l_type == F_RDLCK)
		log_line("%lld %d\n", (long long)fl->l_start, r < 0 ? -errno : 0);
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
