/* scratch_store.h - a throw-away store for fuzz targets that drive the
 * public API: created once per process in a temporary directory (tmpfs when
 * there is one), removed at exit.  Static functions: include once. */
#ifndef CAIRN_FUZZ_SCRATCH_STORE_H
#define CAIRN_FUZZ_SCRATCH_STORE_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cairn.h"

static cairn_store *scratch_st;
static char scratch_dir[256];

static int scratch_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void scratch_cleanup(void)
{
	cairn_store_close(scratch_st);
	scratch_st = NULL;
	if (scratch_dir[0])
		nftw(scratch_dir, scratch_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The store, with one filesystem dataset "fz". */
static cairn_store *scratch_store(void)
{
	if (scratch_st)
		return scratch_st;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(scratch_dir, sizeof(scratch_dir), "%s/cairn-fuzz.XXXXXX", base);
	if (!mkdtemp(scratch_dir))
		abort();
	atexit(scratch_cleanup);
	char path[300];
	snprintf(path, sizeof(path), "%s/store", scratch_dir);
	/* The library option, not an environment door: a fuzz run cares
	 * about parsers, not about the filesystem's atimes. */
	cairn_init_opts io = {.skip_atime_check = true, .chunk_size = 64 << 10};
	if (cairn_store_init(path, &io) != 0 || cairn_store_open(path, &scratch_st) != 0)
		abort();
	if (cairn_dataset_create(scratch_st, "fz", CAIRN_TYPE_FILESYSTEM, NULL, 0, false) != 0)
		abort();
	return scratch_st;
}

#endif
