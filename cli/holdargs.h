/* holdargs.h - shared by hold and release. */
#ifndef CAIRN_CLI_HOLDARGS_H
#define CAIRN_CLI_HOLDARGS_H

#include "cli.h"

typedef struct holdargs {
	cairn_hold_item *items;
	char **owned;
	size_t n, cap, owned_cap;
} holdargs_t;

/* One item per snapshot (with recursive: per descendant having it).
 * Returns 0 or -ENOMEM; either way holdargs_free releases out. */
int holdargs_build(cairn_store *st, const char *tag, char **snaps, int n, bool recursive,
		   holdargs_t *out);
/* Moves src's items to the end of dst and frees src; 0 or -ENOMEM. */
int holdargs_append(holdargs_t *dst, holdargs_t *src);
/* Prints every failed item; returns how many failed. */
int holdargs_report(const holdargs_t *h, const char *what);
void holdargs_free(holdargs_t *h);

#endif
