/* statahead.c - a helper thread that lists and stats directories ahead of
 * an incremental backup's walk (see statahead.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/statahead.h"

enum { SA_FREE, SA_CLAIMED, SA_DONE };
enum { PREP_NONE, PREP_BUSY, PREP_READY, PREP_FAILED, PREP_TAKEN };

/* Directories made ahead and not yet taken: each holds a descriptor, its
 * listing and its stats (~170 bytes an entry).  Bounded in number and in
 * entries, so memory stays small whatever the tree's shape.  The number is
 * also kept to an eighth of the fd limit: the chunk store caches up to a
 * quarter, and changed files and bundles need theirs.  256 rather than
 * 64: the helper banks a longer lead while the walk is the slower of the
 * two and spends it where directories are small and the helper is
 * (bench/ab-unchanged.sh, 15 rounds: median 357 against 370 ms). */
#define SA_PREP_MAX 256
#define SA_PREP_ENTRIES 65536

/* A directory larger than this is walked without the helper: its arrays
 * alone would take over 10 MiB. */
#define SA_DIR_ENTRIES 65536

/* How long the idle helper polls for work before it sleeps.  The walk
 * enters a directory every ~100 us on a warm unchanged tree; a futex
 * wake-up per directory would cost the walk more than the helper saves
 * it.  (Only while waits are that short: see helper_wait_locked.) */
#define SA_SPIN_NS 300000

struct statahead {
	pthread_t th;
	dev_t rootdev;
	pthread_mutex_t lock;
	pthread_cond_t work;     /* something changed for the helper, or stop */
	pthread_cond_t released; /* the helper let go of a directory or made one */
	sa_dir_t *top;           /* entered directories, newest first (->below) */
	sa_dir_t *ready, *ready_tail; /* made ahead, not taken, oldest first */
	unsigned nready, prep_max, peak_ready;
	size_t ready_entries;    /* their entries, summed */
	_Atomic unsigned gen;    /* bumped whenever the walk enters, takes or leaves */
	bool idle;               /* the helper sleeps on work */
	bool spin;               /* its last wait was short: poll before sleeping */
	bool stop;
	_Atomic uint64_t stats, made; /* the helper's work, for statahead_counts */
};

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* ---- directories ---- */

static void dir_free(sa_dir_t *d)
{
	if (!d)
		return;
	if (d->own_fd)
		close(d->dfd);
	dirlist_free(&d->list);
	free(d->arrays);
	free(d);
}

/* Carves the per-entry arrays out of one allocation, widest type first. */
static int dir_arrays(sa_dir_t *d)
{
	size_t n = d->list.n;
	size_t each = sizeof(struct stat) + sizeof(sa_dir_t *) + sizeof(int) +
		      2 * sizeof(_Atomic uint8_t);
	char *p = d->arrays = malloc(n * each);
	if (!p)
		return -ENOMEM;
	d->st = (struct stat *)p;
	d->child = (sa_dir_t **)(p += n * sizeof(struct stat));
	d->err = (int *)(p += n * sizeof(sa_dir_t *));
	d->state = (_Atomic uint8_t *)(p += n * sizeof(int));
	d->prep = (_Atomic uint8_t *)(p + n * sizeof(_Atomic uint8_t));
	for (size_t i = 0; i < n; i++) {
		atomic_init(&d->state[i], SA_FREE);
		atomic_init(&d->prep[i], PREP_NONE);
		d->child[i] = NULL;
	}
	return 0;
}

/* Lists fd (up to max names, else -EFBIG) into a new directory, taking fd
 * when own_fd (closed on error too); with a helper, the directory gets the
 * per-entry arrays. */
static int dir_new(const statahead_t *sa, int fd, bool own_fd, size_t max, sa_dir_t **out)
{
	*out = NULL;
	sa_dir_t *d = calloc(1, sizeof(*d));
	if (!d) {
		if (own_fd)
			close(fd);
		return -ENOMEM;
	}
	d->dfd = fd;
	d->own_fd = own_fd;
	int r = dirlist_read_max(&d->list, fd, max);
	if (r < 0) {
		dir_free(d);
		return r;
	}
	/* Without the arrays (too large, or no memory for them) the walk
	 * does this directory alone, as it would without a helper. */
	if (sa && d->list.n && d->list.n <= SA_DIR_ENTRIES)
		dir_arrays(d);
	d->exhausted = !d->state;
	d->no_ahead = true;
	*out = d;
	return 0;
}

/* ---- entries ---- */

static int stat_entry(const sa_dir_t *d, size_t i, struct stat *st)
{
	return fstatat(d->dfd, d->list.names[i], st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static bool claim(sa_dir_t *d, size_t i)
{
	uint8_t expect = SA_FREE;
	return atomic_compare_exchange_strong(&d->state[i], &expect, SA_CLAIMED);
}

/* Claims and stats entry i, publishing the result. */
static void stat_claimed(sa_dir_t *d, size_t i)
{
	d->err[i] = stat_entry(d, i, &d->st[i]);
	atomic_store_explicit(&d->state[i], SA_DONE, memory_order_release);
}

/* The helper's share: entries from the back until one is already taken
 * (the walk claims in order, so everything before it is the walk's). */
static void stat_from_back(statahead_t *sa, sa_dir_t *d)
{
	uint64_t done = 0;
	for (size_t j = d->list.n; j-- > 0 && claim(d, j); done++)
		stat_claimed(d, j);
	atomic_fetch_add_explicit(&sa->stats, done, memory_order_relaxed);
}

/* ---- the helper ---- */

static void notify_locked(statahead_t *sa)
{
	atomic_fetch_add_explicit(&sa->gen, 1, memory_order_release);
	if (sa->idle)
		pthread_cond_signal(&sa->work);
}

static void push_locked(statahead_t *sa, sa_dir_t *d)
{
	d->below = sa->top;
	sa->top = d;
	notify_locked(sa);
}

/* The ready list is doubly linked: up to prep_max directories wait in it,
 * and the walk takes them from anywhere (usually the head). */
static void append_ready_locked(statahead_t *sa, sa_dir_t *d)
{
	d->next_ready = NULL;
	d->prev_ready = sa->ready_tail;
	*(sa->ready_tail ? &sa->ready_tail->next_ready : &sa->ready) = d;
	sa->ready_tail = d;
	if (++sa->nready > sa->peak_ready)
		sa->peak_ready = sa->nready;
	sa->ready_entries += d->list.n;
}

static void unlink_ready_locked(statahead_t *sa, sa_dir_t *d)
{
	if (!d->prev_ready && sa->ready != d)
		return; /* not in the list: nothing to undo */
	*(d->prev_ready ? &d->prev_ready->next_ready : &sa->ready) = d->next_ready;
	*(d->next_ready ? &d->next_ready->prev_ready : &sa->ready_tail) = d->prev_ready;
	d->next_ready = d->prev_ready = NULL;
	sa->nready--;
	sa->ready_entries -= d->list.n;
}

/* The newest directory with entries nobody has claimed: an entered one,
 * else one made ahead (in the order the walk will take them). */
static sa_dir_t *next_to_stat_locked(statahead_t *sa)
{
	for (sa_dir_t *d = sa->top; d; d = d->below)
		if (!d->exhausted && !d->ending)
			return d;
	for (sa_dir_t *d = sa->ready; d; d = d->next_ready)
		if (!d->exhausted && !d->ending)
			return d;
	return NULL;
}

/* Looks through d from entry `from` on, in walk order, for a subdirectory
 * nobody has made, descending into the ones made ahead.  Returns 1 with
 * *parent and *idx set, 0 if d's subtree has none, -1 if an entry's stat is
 * not known yet (what follows it cannot be judged).  d->prep_scan skips
 * what an earlier look found complete: only the helper makes directories,
 * so a complete subtree stays complete. */
static int find_unmade_locked(const statahead_t *sa, sa_dir_t *d, size_t from, sa_dir_t **parent,
			      size_t *idx)
{
	if (!d->state || d->no_ahead)
		return 0; /* walked without the helper, or not to be read ahead */
	size_t j = from > d->prep_scan ? from : d->prep_scan;
	for (; j < d->list.n; j++) {
		if (atomic_load_explicit(&d->state[j], memory_order_acquire) != SA_DONE)
			return -1;
		bool dir = !d->err[j] && S_ISDIR(d->st[j].st_mode) && d->st[j].st_dev == sa->rootdev;
		if (dir && d->prep[j] == PREP_NONE) {
			*parent = d;
			*idx = j;
			return 1;
		}
		if (dir && d->prep[j] == PREP_READY) {
			int r = find_unmade_locked(sa, d->child[j], 0, parent, idx);
			if (r)
				return r;
		}
		if (j == d->prep_scan)
			d->prep_scan = j + 1;
	}
	return 0;
}

/* The next subdirectory the walk will enter that nobody has made: after
 * the newest directory's current entry, then after its parent's, and so
 * on down the stack (the order the walk will go). */
static bool next_to_make_locked(statahead_t *sa, sa_dir_t **parent, size_t *idx)
{
	if (sa->nready >= sa->prep_max || sa->ready_entries >= SA_PREP_ENTRIES)
		return false;
	for (sa_dir_t *d = sa->top; d; d = d->below) {
		if (d->ending)
			continue;
		size_t next = atomic_load_explicit(&d->pos, memory_order_relaxed);
		int r = find_unmade_locked(sa, d, next, parent, idx);
		if (r)
			return r > 0;
	}
	return false;
}

/* Makes subdirectory j of d (the lock is not held); NULL if it cannot be
 * opened or listed: the walk then tries itself and reports the error. */
static sa_dir_t *make_child(statahead_t *sa, sa_dir_t *d, size_t j)
{
	int fd = dirlist_open(d->dfd, d->list.names[j]);
	if (fd < 0)
		return NULL;
	sa_dir_t *c;
	if (dir_new(sa, fd, true, SA_DIR_ENTRIES, &c) < 0)
		return NULL;
	/* Its parent was allowed, so only its own .cairnignore or cache tag
	 * could exclude something below it. */
	c->no_ahead = c->list.has_ignore_file || c->list.has_cachedir_tag;
	return c;
}

/* Polls for a change from the walk for up to SA_SPIN_NS; true if one came. */
static bool spin_for_work(statahead_t *sa, unsigned gen)
{
	int64_t until = mono_ns() + SA_SPIN_NS;
	for (unsigned k = 1;; k++) {
		if (atomic_load_explicit(&sa->gen, memory_order_acquire) != gen)
			return true;
		cpu_relax();
		if (!(k % 64) && mono_ns() > until)
			return false;
	}
}

static void helper_stat_locked(statahead_t *sa, sa_dir_t *d)
{
	d->users++;
	pthread_mutex_unlock(&sa->lock);
	stat_from_back(sa, d);
	pthread_mutex_lock(&sa->lock);
	d->users--;
	d->exhausted = true;
	pthread_cond_broadcast(&sa->released);
}

static void helper_make_locked(statahead_t *sa, sa_dir_t *d, size_t j)
{
	d->prep[j] = PREP_BUSY;
	d->users++;
	pthread_mutex_unlock(&sa->lock);
	sa_dir_t *c = make_child(sa, d, j);
	pthread_mutex_lock(&sa->lock);
	d->users--;
	if (c) {
		d->child[j] = c;
		d->prep[j] = PREP_READY;
		append_ready_locked(sa, c);
		atomic_fetch_add_explicit(&sa->made, 1, memory_order_relaxed);
	} else {
		d->prep[j] = PREP_FAILED; /* the walk opens it and reports why */
	}
	pthread_cond_broadcast(&sa->released);
}

/* Waits for the walk to change something.  Spinning pays only while the
 * walk moves fast (an unchanged tree); while it reads and packs changed
 * files, the other CPU belongs to the compression workers.  So the helper
 * spins only if its last wait was short, and otherwise sleeps at once. */
static void helper_wait_locked(statahead_t *sa)
{
	unsigned gen = atomic_load(&sa->gen);
	bool more = false;
	if (sa->spin) {
		pthread_mutex_unlock(&sa->lock);
		more = spin_for_work(sa, gen);
		pthread_mutex_lock(&sa->lock);
	}
	if (!more && !sa->stop && atomic_load(&sa->gen) == gen) {
		int64_t t0 = mono_ns();
		sa->idle = true;
		pthread_cond_wait(&sa->work, &sa->lock);
		sa->idle = false;
		sa->spin = mono_ns() - t0 < SA_SPIN_NS;
	}
}

static void *helper_main(void *arg)
{
	statahead_t *sa = arg;
	pthread_setname_np(pthread_self(), "cairn-statahead");
	pthread_mutex_lock(&sa->lock);
	while (!sa->stop) {
		sa_dir_t *d;
		size_t j;
		if ((d = next_to_stat_locked(sa)))
			helper_stat_locked(sa, d);
		else if (next_to_make_locked(sa, &d, &j))
			helper_make_locked(sa, d, j);
		else
			helper_wait_locked(sa);
	}
	pthread_mutex_unlock(&sa->lock);
	return NULL;
}

int statahead_start(dev_t rootdev, statahead_t **out)
{
	*out = NULL;
	statahead_t *sa = calloc(1, sizeof(*sa));
	if (!sa)
		return -ENOMEM;
	sa->rootdev = rootdev;
	sa->prep_max = fd_limit_share(8, 8, SA_PREP_MAX);
	sa->spin = true;
	pthread_mutex_init(&sa->lock, NULL);
	pthread_cond_init(&sa->work, NULL);
	pthread_cond_init(&sa->released, NULL);
	int r = thread_start(&sa->th, helper_main, sa);
	if (r) {
		pthread_cond_destroy(&sa->released);
		pthread_cond_destroy(&sa->work);
		pthread_mutex_destroy(&sa->lock);
		free(sa);
		return -r;
	}
	*out = sa;
	return 0;
}

void statahead_counts(statahead_t *sa, uint64_t *stats, uint64_t *made, unsigned *peak)
{
	*stats = atomic_load(&sa->stats);
	*made = atomic_load(&sa->made);
	pthread_mutex_lock(&sa->lock);
	*peak = sa->peak_ready;
	pthread_mutex_unlock(&sa->lock);
}

void statahead_stop(statahead_t *sa)
{
	if (!sa)
		return;
	pthread_mutex_lock(&sa->lock);
	sa->stop = true;
	pthread_cond_signal(&sa->work);
	pthread_mutex_unlock(&sa->lock);
	pthread_join(sa->th, NULL);
	pthread_cond_destroy(&sa->released);
	pthread_cond_destroy(&sa->work);
	pthread_mutex_destroy(&sa->lock);
	free(sa);
}

/* ---- the walk's side ---- */

/* A directory the walk lists itself, offered to the helper. */
static int enter_listed(statahead_t *sa, int fd, bool own_fd, sa_dir_t **out)
{
	int r = dir_new(sa, fd, own_fd, SIZE_MAX, out);
	if (r == 0 && sa) {
		pthread_mutex_lock(&sa->lock);
		push_locked(sa, *out);
		pthread_mutex_unlock(&sa->lock);
	}
	return r;
}

int sa_root(statahead_t *sa, int fd, sa_dir_t **out)
{
	return enter_listed(sa, fd, false, out);
}

void sa_allow_ahead(statahead_t *sa, sa_dir_t *d)
{
	if (!sa || !d->no_ahead)
		return;
	pthread_mutex_lock(&sa->lock);
	d->no_ahead = false;
	notify_locked(sa);
	pthread_mutex_unlock(&sa->lock);
}

/* The helper holds an entry for one fstatat: spin, and yield only if it
 * was preempted in the middle. */
static void wait_done(const _Atomic uint8_t *s)
{
	for (unsigned k = 1; atomic_load_explicit(s, memory_order_acquire) != SA_DONE; k++) {
		if (k % 4096)
			cpu_relax();
		else
			sched_yield();
	}
}

int sa_dir_stat(sa_dir_t *d, size_t i, struct stat *st)
{
	if (!d->state)
		return stat_entry(d, i, st);
	atomic_store_explicit(&d->pos, i + 1, memory_order_relaxed);
	if (claim(d, i))
		stat_claimed(d, i);
	else
		wait_done(&d->state[i]);
	*st = d->st[i];
	return d->err[i];
}

/* The subdirectory the helper made for entry i, or NULL; either way the
 * entry is the walk's from now on. */
static sa_dir_t *take_child(statahead_t *sa, sa_dir_t *d, size_t i)
{
	/* Being made: an open and a getdents, tens of microseconds; spinning
	 * through them is cheaper than a futex sleep and wake-up. */
	int64_t until = 0;
	for (unsigned k = 1; atomic_load(&d->prep[i]) == PREP_BUSY; k++) {
		cpu_relax();
		if (k % 64)
			continue;
		if (!until)
			until = mono_ns() + SA_SPIN_NS;
		else if (mono_ns() > until)
			break;
	}
	pthread_mutex_lock(&sa->lock);
	while (d->prep[i] == PREP_BUSY)
		pthread_cond_wait(&sa->released, &sa->lock);
	sa_dir_t *c = d->prep[i] == PREP_READY ? d->child[i] : NULL;
	d->prep[i] = PREP_TAKEN;
	d->child[i] = NULL;
	if (c) {
		unlink_ready_locked(sa, c);
		push_locked(sa, c);
	}
	pthread_mutex_unlock(&sa->lock);
	return c;
}

int sa_enter(statahead_t *sa, sa_dir_t *d, size_t i, sa_dir_t **out)
{
	if (d->state && (*out = take_child(sa, d, i)))
		return 0;
	int fd = dirlist_open(d->dfd, d->list.names[i]);
	return fd < 0 ? -errno : enter_listed(sa, fd, true, out);
}

/* Takes the directories made ahead below d back from the helper, with
 * those made below them in turn, once it has let go of each; returns them
 * chained through next_ready. */
static sa_dir_t *withdraw_children_locked(statahead_t *sa, sa_dir_t *d, sa_dir_t *out)
{
	if (!d->state)
		return out;
	for (size_t i = 0; i < d->list.n; i++) {
		if (d->prep[i] != PREP_READY)
			continue;
		sa_dir_t *c = d->child[i];
		d->child[i] = NULL;
		d->prep[i] = PREP_TAKEN;
		unlink_ready_locked(sa, c);
		c->ending = true;
		while (c->users)
			pthread_cond_wait(&sa->released, &sa->lock);
		out = withdraw_children_locked(sa, c, out);
		c->next_ready = out;
		out = c;
	}
	return out;
}

void sa_leave(statahead_t *sa, sa_dir_t *d)
{
	sa_dir_t *orphans = NULL;
	if (sa) {
		pthread_mutex_lock(&sa->lock);
		d->ending = true;
		while (d->users)
			pthread_cond_wait(&sa->released, &sa->lock);
		orphans = withdraw_children_locked(sa, d, NULL);
		/* Nested walk: d is the newest; unlinking it wherever it is
		 * keeps the stack sound even if a caller leaves out of order. */
		for (sa_dir_t **p = &sa->top; *p; p = &(*p)->below)
			if (*p == d) {
				*p = d->below;
				break;
			}
		notify_locked(sa);
		pthread_mutex_unlock(&sa->lock);
	}
	while (orphans) {
		sa_dir_t *next = orphans->next_ready;
		dir_free(orphans);
		orphans = next;
	}
	dir_free(d);
}
