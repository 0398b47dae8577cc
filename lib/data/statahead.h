/* statahead.h - the directory side of an incremental backup's walk, shared
 * with a helper thread that lists and stats ahead of it.
 *
 * An unchanged backup is an open, a getdents and a close per directory and
 * one fstatat per object, and little else; on a virtual machine each of
 * those costs microseconds of kernel time, more than the walk spends on
 * the object itself.  So a helper thread does them ahead of the walk:
 *
 *  - In each directory the walk has entered, the walk takes entries from
 *    the front, in name order, and the helper stats them from the back.
 *    Each entry is claimed by exactly one of the two (a compare-and-swap
 *    on its state), so nothing is statted twice and the walk never waits
 *    for an entry nobody has claimed: it stats that one itself.
 *  - With nothing left to claim, the helper opens and lists the next
 *    subdirectories the walk will enter (a bounded number at a time)
 *    and stats them from the back too.  The walk takes such a directory
 *    over instead of opening it.  It does so only where nothing can be
 *    excluded: below a directory the walk has allowed (sa_allow_ahead),
 *    and not below one whose listing holds a .cairnignore or a
 *    CACHEDIR.TAG, so it never opens what the walk would leave out.
 *
 * The walk is strictly nested (a directory ends after every directory
 * entered below it), so the entered directories form a stack; the helper
 * works on the newest first.  Whether the helper got there first changes
 * who made a system call, never its result: entries, names and stats are
 * the same ones the walk would have read itself.
 *
 * With no helper (sa NULL: a first backup, which is bound by reading
 * files, not by stats) every call here is the plain system call.
 */
#ifndef CAIRN_STATAHEAD_H
#define CAIRN_STATAHEAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "data/dirlist.h"

typedef struct statahead statahead_t;

/* One open, listed directory.  Made by sa_root or sa_enter, freed by
 * sa_leave.  The walk reads dfd and list; the rest is shared with the
 * helper. */
typedef struct sa_dir {
	int dfd;
	bool own_fd;             /* sa_leave closes dfd */
	dirlist_t list;          /* the names, sorted */
	/* Per entry, when there is a helper (NULL otherwise): */
	_Atomic uint8_t *state;  /* free, claimed, or done (st/err valid) */
	struct stat *st;
	int *err;                /* 0 or negative errno of the fstatat */
	_Atomic uint8_t *prep;   /* subdirectory: none, being made, ready, failed, taken */
	struct sa_dir **child;   /* the ready subdirectory */
	_Atomic size_t pos;      /* entries the walk has begun */
	void *arrays;            /* the one allocation behind the five above */
	/* The helper's bookkeeping, under the statahead lock: */
	size_t prep_scan;        /* entries before it were looked at */
	struct sa_dir *below;    /* stack: the directory this one was entered from */
	struct sa_dir *next_ready, *prev_ready; /* made, not yet taken directories */
	bool exhausted;          /* the helper met the walk: nothing to claim */
	bool no_ahead;           /* the helper must not make its subdirectories */
	bool ending;             /* sa_leave waits for the helper to let go */
	unsigned users;          /* the helper is inside (stats or makes a child) */
} sa_dir_t;

/* Starts the helper for a walk that stays on device rootdev (it makes no
 * subdirectory on another).  Returns 0 or negative errno; on failure the
 * walk goes on with sa NULL. */
int statahead_start(dev_t rootdev, statahead_t **sa);

/* What the helper has done so far: entries statted, directories made
 * ahead (whether or not the walk took them), and the most it held made
 * and not yet taken at one time. */
void statahead_counts(statahead_t *sa, uint64_t *stats, uint64_t *made, unsigned *peak);

/* Stops and joins the helper; every directory must have been left.  NULL
 * is a no-op. */
void statahead_stop(statahead_t *sa);

/* Lists the walk's root, the open directory fd (left open by sa_leave).
 * Returns 0 or negative errno (of getdents, or -ENOMEM). */
int sa_root(statahead_t *sa, int fd, sa_dir_t **out);

/* The lstat of entry i (fstatat with AT_SYMLINK_NOFOLLOW): made here
 * unless the helper claimed it, then its result.  Call it for entries in
 * increasing order.  Returns 0 or negative errno. */
int sa_dir_stat(sa_dir_t *d, size_t i, struct stat *st);

/* Lets the helper make d's subdirectories ahead: the walk calls it once
 * it knows nothing below d can be excluded (exclude_any).  A directory
 * starts without, so nothing is made before the walk has judged. */
void sa_allow_ahead(statahead_t *sa, sa_dir_t *d);

/* Enters subdirectory i of d: the helper's if it made it, else opened
 * (without touching its atime) and listed here.  Returns 0 or negative
 * errno (of openat or getdents, or -ENOMEM). */
int sa_enter(statahead_t *sa, sa_dir_t *d, size_t i, sa_dir_t **out);

/* Leaves d, the newest directory entered: waits until the helper has let
 * go of it and of the subdirectories it made for it, then closes and
 * frees them. */
void sa_leave(statahead_t *sa, sa_dir_t *d);

#endif
