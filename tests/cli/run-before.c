/* run-before.c - LD_PRELOAD shim that runs a command at a chosen moment:
 * the first mkdir (RUN_CALL=mkdir) or open (RUN_CALL=open) of the path
 * $RUN_AT runs $RUN_CMD (with the shim unloaded) before the call itself,
 * and notes it in $RUN_LOG, so that a test can see the command ran.  A
 * restore makes a tree's target with mkdir after looking its snapshot up
 * and before holding it, and opens a volume's target after judging it:
 * the command can rename snapshots, or change the target, just there. */
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

static void run_before(const char *call, const char *path)
{
	const char *at = getenv("RUN_AT"), *cmd = getenv("RUN_CMD"), *log = getenv("RUN_LOG");
	const char *which = getenv("RUN_CALL");
	if (!at || !cmd || !log || !which || strcmp(which, call) || strcmp(path, at) ||
	    atomic_exchange(&done, 1))
		return;
	unsetenv("LD_PRELOAD");
	int rc = system(cmd);
	FILE *f = fopen(log, "a");
	if (f) {
		fprintf(f, "ran %d\n", rc);
		fclose(f);
	}
}

int mkdir(const char *path, mode_t mode)
{
	static int (*real)(const char *, mode_t);
	if (!real)
		real = (int (*)(const char *, mode_t))dlsym(RTLD_NEXT, "mkdir");
	run_before("mkdir", path);
	return real(path, mode);
}

static int open_as(const char *sym, const char *path, int flags, va_list ap)
{
	int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, sym);
	mode_t mode = flags & (O_CREAT | O_TMPFILE) ? va_arg(ap, mode_t) : 0;
	run_before("open", path);
	return real(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	int r = open_as("open", path, flags, ap);
	va_end(ap);
	return r;
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	int r = open_as("open64", path, flags, ap);
	va_end(ap);
	return r;
}
