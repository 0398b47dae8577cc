/* lanes.c - tree entries handed to worker threads, one FIFO per worker.
 *
 * One mutex guards every lane: a push or a take is a few stores, and the
 * work done per entry (creating and writing a file) is far longer.
 *
 * The pusher is usually ahead, so its lane is full and it waits.  Waking
 * it after every handled entry would cost two context switches per file;
 * a lane wakes it only once its queue is down to half (or empty, which is
 * what lanes_drain waits for). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/lanes.h"
#include "util.h"

typedef struct lane_item {
	tree_entry_t e;
	uint64_t seq;
	size_t bytes; /* what e owns */
} lane_item_t;

typedef struct lane {
	struct lanes *l;
	void *arg;
	pthread_t th;
	bool started;
	pthread_cond_t has_work;
	lane_item_t ring[LANE_DEPTH];
	size_t head, len;
	size_t bytes; /* owned by the queued entries */
	bool busy;    /* an entry taken and not yet handled */
} lane_t;

struct lanes {
	pthread_mutex_t mu;
	pthread_cond_t progressed; /* a lane is half empty, or idle */
	bool waiting;              /* the pusher waits on progressed */
	bool stopping;
	lane_fn fn;
	void (*tick)(void *);
	void *tick_arg;
	int n;
	lane_t *lane;
};

static void *lane_main(void *arg)
{
	lane_t *ln = arg;
	lanes_t *l = ln->l;
	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (!ln->len && !l->stopping)
			pthread_cond_wait(&ln->has_work, &l->mu);
		if (!ln->len)
			break;
		lane_item_t it = ln->ring[ln->head];
		ln->head = (ln->head + 1) % LANE_DEPTH;
		ln->len--;
		ln->bytes -= it.bytes;
		ln->busy = true;
		pthread_mutex_unlock(&l->mu);
		l->fn(ln->arg, &it.e, it.seq);
		pthread_mutex_lock(&l->mu);
		ln->busy = false;
		if (l->waiting && ln->len <= LANE_DEPTH / 2 && ln->bytes <= LANE_BYTES / 2)
			pthread_cond_broadcast(&l->progressed);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* Waits on progressed for up to 200 ms; on a timeout, runs tick without
 * the lock.  Called with the lock held. */
static void wait_or_tick(lanes_t *l)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += 200000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	l->waiting = true;
	int r = pthread_cond_timedwait(&l->progressed, &l->mu, &until);
	l->waiting = false;
	if (r == ETIMEDOUT && l->tick) {
		pthread_mutex_unlock(&l->mu);
		l->tick(l->tick_arg);
		pthread_mutex_lock(&l->mu);
	}
}

int lanes_start(lanes_t **out, int n, lane_fn fn, void *const *args, void (*tick)(void *),
		void *tick_arg)
{
	*out = NULL;
	lanes_t *l = calloc(1, sizeof(*l));
	lane_t *lane = calloc(n, sizeof(*lane));
	if (!l || !lane) {
		free(l);
		free(lane);
		return -ENOMEM;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->progressed, &ca);
	pthread_condattr_destroy(&ca);
	l->fn = fn;
	l->tick = tick;
	l->tick_arg = tick_arg;
	l->n = n;
	l->lane = lane;
	int r = 0;
	for (int i = 0; i < n; i++) {
		lane[i].l = l;
		lane[i].arg = args[i];
		pthread_cond_init(&lane[i].has_work, NULL);
	}
	for (int i = 0; i < n && !r; i++) {
		r = -thread_start(&lane[i].th, lane_main, &lane[i]);
		lane[i].started = !r;
	}
	if (r) {
		lanes_stop(l);
		return r;
	}
	*out = l;
	return 0;
}

/* The heap memory e owns. */
static size_t entry_bytes(const tree_entry_t *e)
{
	size_t n = (e->path ? strlen(e->path) + 1 : 0) + (e->link ? strlen(e->link) + 1 : 0) +
		   (size_t)e->nextent * sizeof(*e->extents) + (size_t)e->nxattr * sizeof(*e->xattrs);
	for (uint16_t i = 0; e->xattrs && i < e->nxattr; i++)
		n += strlen(e->xattrs[i].name) + 1 + e->xattrs[i].len;
	return n;
}

void lanes_push(lanes_t *l, int i, tree_entry_t *e, uint64_t seq)
{
	lane_t *ln = &l->lane[i];
	size_t bytes = entry_bytes(e);
	pthread_mutex_lock(&l->mu);
	while (ln->len == LANE_DEPTH || (ln->len && ln->bytes + bytes > LANE_BYTES))
		wait_or_tick(l);
	lane_item_t *it = &ln->ring[(ln->head + ln->len) % LANE_DEPTH];
	it->e = *e;
	it->seq = seq;
	it->bytes = bytes;
	memset(e, 0, sizeof(*e));
	ln->len++;
	ln->bytes += bytes;
	pthread_cond_signal(&ln->has_work);
	pthread_mutex_unlock(&l->mu);
}

int lanes_shortest(lanes_t *l)
{
	int best = 0;
	pthread_mutex_lock(&l->mu);
	for (int i = 1; i < l->n; i++)
		if (l->lane[i].len + l->lane[i].busy < l->lane[best].len + l->lane[best].busy)
			best = i;
	pthread_mutex_unlock(&l->mu);
	return best;
}

static bool all_idle(const lanes_t *l)
{
	for (int i = 0; i < l->n; i++)
		if (l->lane[i].len || l->lane[i].busy)
			return false;
	return true;
}

void lanes_drain(lanes_t *l)
{
	pthread_mutex_lock(&l->mu);
	while (!all_idle(l))
		wait_or_tick(l);
	pthread_mutex_unlock(&l->mu);
}

void lanes_stop(lanes_t *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stopping = true;
	for (int i = 0; i < l->n; i++)
		pthread_cond_signal(&l->lane[i].has_work);
	pthread_mutex_unlock(&l->mu);
	for (int i = 0; i < l->n; i++) {
		/* A lane stops only once its queue is empty (lane_main). */
		if (l->lane[i].started)
			pthread_join(l->lane[i].th, NULL);
		pthread_cond_destroy(&l->lane[i].has_work);
	}
	pthread_cond_destroy(&l->progressed);
	pthread_mutex_destroy(&l->mu);
	free(l->lane);
	free(l);
}
