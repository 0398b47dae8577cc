/* xattr-eio.c - LD_PRELOAD shim for a source whose disk fails on one
 * xattr: reading the value of the xattr named $XATTR_EIO_NAME (by fd or
 * by path) fails with EIO, as a bad block or a network filesystem's error
 * would, while listing the names still works.  Each failed call appends a
 * line to $XATTR_EIO_LOG, so a test can see the error happened. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

static int failing(const char *name)
{
	const char *want = getenv("XATTR_EIO_NAME");
	if (!want || strcmp(want, name))
		return 0;
	const char *log = getenv("XATTR_EIO_LOG");
	FILE *f = log ? fopen(log, "a") : NULL;
	if (f) {
		fprintf(f, "%s\n", name);
		fclose(f);
	}
	errno = EIO;
	return 1;
}

ssize_t fgetxattr(int fd, const char *name, void *val, size_t size)
{
	static ssize_t (*real)(int, const char *, void *, size_t);
	if (!real)
		real = (ssize_t(*)(int, const char *, void *, size_t))dlsym(RTLD_NEXT, "fgetxattr");
	return failing(name) ? -1 : real(fd, name, val, size);
}

ssize_t lgetxattr(const char *path, const char *name, void *val, size_t size)
{
	static ssize_t (*real)(const char *, const char *, void *, size_t);
	if (!real)
		real = (ssize_t(*)(const char *, const char *, void *, size_t))dlsym(RTLD_NEXT,
										 "lgetxattr");
	return failing(name) ? -1 : real(path, name, val, size);
}
