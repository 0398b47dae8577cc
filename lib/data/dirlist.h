/* dirlist.h - one directory's entry names, sorted bytewise, for the tree
 * walks of backup and diff. */
#ifndef CAIRN_DIRLIST_H
#define CAIRN_DIRLIST_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

typedef struct dirlist {
	char **names;         /* n names, sorted bytewise (strcmp); point into arena */
	size_t n;
	bool has_ignore_file; /* ".cairnignore" is among them */
	bool has_cachedir_tag; /* "CACHEDIR.TAG" is among them */
	buf_t arena;          /* the names, NUL-terminated, one after another */
	size_t cap;
} dirlist_t;

/* Lists the open directory dfd, which must be at its start (freshly
 * opened): "." and ".." are left out.  l must be zeroed or previously
 * freed with dirlist_free.  Returns 0 or negative errno (the listing is
 * then empty). */
int dirlist_read(dirlist_t *l, int dfd);

/* dirlist_read that gives up with -EFBIG (the listing then empty) past max
 * names. */
int dirlist_read_max(dirlist_t *l, int dfd, size_t max);

void dirlist_free(dirlist_t *l);

/* Opens directory name in dfd for listing, without following a symlink
 * and, where the caller may, without touching its atime (a walk that
 * changed the atimes it records would never see an unchanged tree).
 * Returns the descriptor, or -1 with errno set. */
int dirlist_open(int dfd, const char *name);

#endif
