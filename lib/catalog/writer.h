/* writer.h - the registry of running writers (backups, receives).
 *
 * GC's sweep may only remove chunks whose atime is older than the start of
 * the oldest running writer (minus the cutoff): a writer that found a chunk
 * existing and touched it, or is about to reference it, must not lose it.
 *
 * Each writer is a file <store>/writers/<pid>.<start ticks>.<random> holding
 * its start time in ns.  Liveness is NOT judged by the pid in the name:
 * pids lie across PID namespaces (containers), NFS clients and pid reuse.
 * The writer holds an exclusive open-file-description lock on its file for
 * as long as it writes; the kernel drops the lock when the process dies.
 * A registry file whose lock GC can take belongs to nobody: it is stale,
 * ignored and removed.  The file is created under a hidden name, locked,
 * filled, synced and only then renamed into place, so GC never sees a
 * registration that is not yet locked.  (The <pid>.<ticks> prefix keeps
 * older cairn versions, which parse it, treating the writer as alive.)
 */
#ifndef CAIRN_WRITER_H
#define CAIRN_WRITER_H

#include "store/store.h"

/* Registers this process as a writer (idempotent; counted). */
int writer_register(cairn_store *st);
/* Drops one registration; the file and its lock go with the last. */
void writer_unregister(cairn_store *st);
/* Start time (ns) of the oldest live writer, or INT64_MAX when none.
 * Removes the files of dead writers on the way (best effort). */
int writer_oldest(cairn_store *st, int64_t *oldest_ns);

/* Creates dfd/hidden exclusively, takes its write lock, writes
 * "<now ns> <pid>\n", renames it to name (with durable, syncing the file
 * before and dfd after): an owner file that no scan ever sees unlocked
 * while its owner lives.  The open, locked fd goes to *fd.  0 or -errno
 * (nothing left behind). */
int owner_file_publish(int dfd, const char *hidden, const char *name, bool durable, int *fd);

/* Visits a directory of owner files: removes those whose lock is free
 * (dead owners), files that are not regular, and hidden ones left
 * unpublished for an hour; calls live(fd) for the others. */
int owner_dir_scan(int dfd, void (*live)(int fd, void *arg), void *arg);

/* 0 when nobody holds the lock of the open registry (or hold-owner) file
 * fd (its owner is dead), -EAGAIN when its owner is alive, else -errno. */
int owner_file_dead(int fd);

#endif
