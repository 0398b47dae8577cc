/* zfs_compat.h - cairn answering as `zfs` and `zpool` (see docs/ZFS-COMPAT.md). */
#ifndef CAIRN_ZFS_COMPAT_H
#define CAIRN_ZFS_COMPAT_H

#include <stdbool.h>

/* True when argv0's basename is "zfs" or "zpool". */
bool zfs_compat_invoked(const char *argv0);

/* Runs a zfs or zpool command line: the pool name of the dataset operands
 * selects a store through the pools file, then the cairn verb runs with
 * zfs's outputs, error texts and exit codes.  Returns the exit code. */
int zfs_compat_main(int argc, char **argv);

/* The verb word zfs puts in "cannot VERB 'X': reason" for a cairn verb. */
const char *zfs_compat_action(const char *verb);

#endif
