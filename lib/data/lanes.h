/* lanes.h - tree entries handed to worker threads, one FIFO per worker.
 *
 * Restore spends most of its time in per-file work: creating the file,
 * decoding its chunks, writing them and setting the metadata.  Files are
 * independent once their directory exists, so the reading thread creates
 * directories itself and pushes each regular file to a lane: a worker
 * thread with its own bounded queue, taking entries in the order they were
 * pushed.  The caller picks the lane, so entries that share a decoded
 * bundle can stay on one worker and its bundle cache.
 *
 * Memory is bounded: a push blocks while its lane holds LANE_DEPTH
 * entries, or LANE_BYTES of what they own (paths, targets, xattrs,
 * extent lists; one entry is always let in).  While it blocks, and while
 * lanes_drain waits, tick (if set) is called about every 200 ms on the
 * pushing thread, so that progress can still be shown while one large
 * file keeps a worker busy.
 */
#ifndef CAIRN_LANES_H
#define CAIRN_LANES_H

#include <stdint.h>

#include "data/tree.h"

#define LANE_DEPTH 1024
#define LANE_BYTES (8u << 20)

typedef struct lanes lanes_t;

/* Called on lane i's thread for each entry, in push order.  It owns e
 * (and must tree_entry_clear it); seq is the number push gave it. */
typedef void (*lane_fn)(void *lane_arg, tree_entry_t *e, uint64_t seq);

/* Starts n worker threads (n >= 1); lane i calls fn(args[i], ...).
 * Returns 0, -ENOMEM or a negative pthread error; on failure nothing runs. */
int lanes_start(lanes_t **out, int n, lane_fn fn, void *const *args, void (*tick)(void *),
		void *tick_arg);

/* Moves *e into lane i's queue (e is zeroed), blocking while it is full. */
void lanes_push(lanes_t *l, int i, tree_entry_t *e, uint64_t seq);

/* The lane with the fewest queued entries (the first of equals). */
int lanes_shortest(lanes_t *l);

/* Waits until every pushed entry has been handled. */
void lanes_drain(lanes_t *l);

/* Drains, stops the threads and frees; NULL is allowed. */
void lanes_stop(lanes_t *l);

#endif
