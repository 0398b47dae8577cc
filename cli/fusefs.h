/* fusefs.h - the FUSE file system of cairn mount (cli/fusefs.c). */
#ifndef CAIRN_FUSEFS_H
#define CAIRN_FUSEFS_H

#include <stdbool.h>

typedef struct fusefs_opts {
	const char *store;      /* store directory */
	const char *mountpoint;
	const char *dataset;    /* NULL: every dataset */
	bool allow_other;       /* -o allow_other */
	bool foreground;        /* -f: do not go to the background */
} fusefs_opts_t;

/* Checks before mounting that dataset exists and is a filesystem; prints
 * the error and returns 1 if not. */
struct cairn_store;
int fusefs_check(struct cairn_store *st, const char *dataset);

/* Mounts, serves until unmounted, releases the holds; the exit code. */
int fusefs_run(const fusefs_opts_t *o);

#endif
