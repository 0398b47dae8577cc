/* lockholders.h - which processes hold a lock on part of a file.
 *
 * Open file description (OFD) locks have no owning process: F_OFD_GETLK
 * reports l_pid -1, and so do /proc/locks and the "lock:" lines of
 * /proc/PID/fdinfo/FD.  But fdinfo lists the locks of one descriptor of
 * one process, so the processes with a descriptor of the file whose
 * fdinfo shows a lock covering the range are its holders (a descriptor
 * inherited or passed on names each process that has it).  A user sees
 * only their own processes' fdinfo; root sees all. */
#ifndef CAIRN_LOCKHOLDERS_H
#define CAIRN_LOCKHOLDERS_H

#include <stddef.h>
#include <sys/types.h>

/* Writes "pid N (comm), ..." for the processes that hold a lock (a read
 * or write lock of fcntl, POSIX or OFD: those an OFD lock conflicts with;
 * not flock's, not one waiting) overlapping [start, start + len) of the
 * file (dev, ino) into buf, at most a few and then "and N more".
 * Returns how many it found; 0 leaves buf empty (none, or none this user
 * may look at). */
size_t lock_holders(dev_t dev, ino_t ino, off_t start, off_t len, char *buf, size_t buflen);
/* The same for the holders of a flock() lock (shared or exclusive) on the
 * file (dev, ino): for a file locked with flock() where fcntl's OFD locks
 * are not to be had. */
size_t flock_holders(dev_t dev, ino_t ino, char *buf, size_t buflen);

#endif
