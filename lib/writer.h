/* writer.h - the registry of running writers (backups, receives).
 *
 * GC's sweep may only remove chunks whose atime is older than the start of
 * the oldest running writer (minus the cutoff): a writer that found a chunk
 * existing and touched it, or is about to reference it, must not lose it.
 * Each writer is a file <store>/writers/<pid>.<process start time> holding
 * its start time in ns, created before the writer writes its first chunk.
 * A file whose process is gone is stale and ignored (and removed by GC).
 */
#ifndef CAIRN_WRITER_H
#define CAIRN_WRITER_H

#include "store.h"

/* Registers this process as a writer (idempotent; counted). */
int writer_register(cairn_store *st);
/* Drops one registration; the file goes with the last. */
void writer_unregister(cairn_store *st);
/* Start time (ns) of the oldest live writer, or INT64_MAX when none. */
int writer_oldest(cairn_store *st, int64_t *oldest_ns);

#endif
