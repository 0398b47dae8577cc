/* coarse-ctime.c - LD_PRELOAD shim that makes a source look as it would
 * on a filesystem with 1 s timestamps (as FUSE or NFS may have), with every
 * change to one file landing in one tick: stats of objects below
 * $COARSE_ROOT (by name, or by an fd open on them) report whole seconds for
 * mtime and ctime, and those of the object named $FREEZE_NAME there (a
 * regular file, or with $FREEZE_ANY any object: a directory whose xattrs
 * change) report
 * as its ctime the second in which this shim first stat'ed it, kept in the
 * file $FREEZE_STATE so that later runs report the same.  A first run notes
 * "froze NAME" in $SWAP_LOG, later ones "frozen NAME", so a test can see
 * the shim acted.  mtime is only truncated (a test sets it back with touch
 * -d, as a write within the tick would leave it on such a filesystem). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void note(const char *what, const char *name)
{
	const char *log = getenv("SWAP_LOG");
	FILE *f = log ? fopen(log, "a") : NULL;
	if (f) {
		fprintf(f, "%s %s\n", what, name);
		fclose(f);
	}
}

/* Whether the whole path p is $COARSE_ROOT or below it. */
static int coarse(const char *p)
{
	const char *root = getenv("COARSE_ROOT");
	size_t n = root ? strlen(root) : 0;
	return n && !strncmp(p, root, n) && (p[n] == 0 || p[n] == '/');
}

/* Whether the whole path p is the frozen file. */
static int is_frozen(const char *p)
{
	const char *want = getenv("FREEZE_NAME");
	const char *base = strrchr(p, '/');
	return want && getenv("FREEZE_STATE") && !strcmp(base ? base + 1 : p, want);
}

/* The frozen ctime (seconds): the state file's, or now, stored there. */
static long long frozen_sec(void)
{
	const char *state = getenv("FREEZE_STATE"), *name = getenv("FREEZE_NAME");
	static int noted;
	long long sec = -1;
	pthread_mutex_lock(&lock);
	FILE *f = fopen(state, "r");
	if (f) {
		if (fscanf(f, "%lld", &sec) != 1)
			sec = -1;
		fclose(f);
	}
	if (sec < 0) {
		sec = (long long)time(NULL);
		f = fopen(state, "w");
		if (f) {
			fprintf(f, "%lld\n", sec);
			fclose(f);
		}
		if (!noted++)
			note("froze", name);
	} else if (!noted++) {
		note("frozen", name);
	}
	pthread_mutex_unlock(&lock);
	return sec;
}

/* Truncates the times of an object below $COARSE_ROOT to the second, and
 * freezes the frozen file's ctime. */
static void adjust(int fd, const char *path, int reg, struct timespec *m, struct timespec *c)
{
	char p[PATH_MAX * 2];
	if (!shim_path(fd, path, p, sizeof(p)) || !coarse(p))
		return;
	m->tv_nsec = 0;
	c->tv_nsec = 0;
	if ((reg || getenv("FREEZE_ANY")) && is_frozen(p))
		c->tv_sec = frozen_sec();
}

SHIM_STAT(adjust)
