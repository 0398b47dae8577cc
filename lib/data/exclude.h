/* exclude.h - gitignore-style exclusion of paths from a backup.
 *
 * Sources of patterns, lowest precedence first (the last matching pattern
 * wins, as in git):
 *   - .cairnignore files (one pattern a line, '#' comments), each relative
 *     to its own directory, deeper files after shallower ones;
 *   - the dataset property `exclude`: patterns separated by commas (a
 *     literal comma is written "\,"), relative to the source root.  It
 *     comes last so the dataset's owner has the final word.
 * With exclude_caches=on, a directory holding a valid CACHEDIR.TAG keeps
 * only that tag file (as tar --exclude-caches does).
 *
 * Pattern rules: '*' and '?' within a name, '[...]' classes, "**" for any
 * number of directories, a leading or inner '/' anchors the pattern to its
 * base directory (else it matches a name at any depth), a trailing '/'
 * matches directories only, a leading '!' re-includes, and '\' escapes the
 * next character.  A path inside an excluded directory cannot be re-included
 * (the directory is never read).
 */
#ifndef CAIRN_EXCLUDE_H
#define CAIRN_EXCLUDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/dirlist.h"

typedef struct excl excl_t;

/* True for the property names this module owns. */
bool exclude_is_prop(const char *name);

/* Checks one pattern; on error returns CAIRN_EBADPROP with a reason. */
int exclude_pattern_check(const char *pat, char *why, size_t whylen);

/* Checks a property value (comma-separated patterns). */
int exclude_list_check(const char *list, char *why, size_t whylen);

/* A matcher for one walk.  list may be NULL or "".  Returns 0, -ENOMEM or
 * CAIRN_EBADPROP (why filled). */
int exclude_new(const char *list, bool caches, bool ignore_files, excl_t **out, char *why,
		size_t whylen);
void exclude_free(excl_t *x);

/* Called when the walk enters directory dirpath ("" = the root), open as
 * dfd: reads its .cairnignore and looks for a CACHEDIR.TAG.  A walk that
 * has listed the directory passes the listing, and only the files that are
 * there are opened (a failed open per directory saved); NULL opens both.
 * Lines with bad syntax are ignored; *bad_line gets the first one's number
 * (0 = none) and why its reason.  Returns 0 or -ENOMEM. */
int exclude_enter(excl_t *x, int dfd, const char *dirpath, const dirlist_t *listed,
		  unsigned *bad_line, char *why, size_t whylen);
/* Called when the walk leaves the directory it last entered. */
void exclude_leave(excl_t *x);

/* Whether the entry `name` of the current directory (path = its path from
 * the root) is excluded. */
bool exclude_match(const excl_t *x, const char *path, const char *name, bool isdir);

/* Whether anything can be excluded at or below the directory the walk
 * entered last: a pattern of the property or of a .cairnignore on the way
 * down, or a CACHEDIR.TAG there.  Where nothing can be, the walk lets its
 * helper read directories ahead (statahead.h). */
bool exclude_any(const excl_t *x);

/* The matcher for a dataset's exclude, exclude_caches and cairnignore
 * properties (store.h types; errors recorded in errdetail). */
struct cairn_store;
struct ds_row;
int exclude_open(struct cairn_store *st, const struct ds_row *ds, excl_t **out);

#endif
