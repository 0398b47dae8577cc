/* ahead.c - restore's decode-ahead (see ahead.h).
 *
 * Two rings, both consumed in stream order by the writer:
 *   entries  read from the tree stream ahead of the writer; ents[ehead] is
 *            the entry the writer holds once ahead_next returned it;
 *   slots    one chunk each, submitted to the pool in stream order; the
 *            oldest belongs to the writer's entry or a later one.
 * A submission cursor (sub_idx entries past ehead, sub_ext within that
 * entry) says which chunk goes next.  Bundles: a bundle is submitted only
 * when it differs from the last one submitted, and every decoded bundle,
 * taken or dropped, becomes the writer's cached bundle; so an entry finds
 * its bundle either in that cache or at the head of the slots, never
 * both, just as the cursor decided.
 */
#include "ahead.h"

#include <errno.h>
#include <stdlib.h>

#include "pool.h"

#define AHEAD_SLOTS 256

typedef struct slot {
	chunkjob_t j; /* first: the pool hands this back to run_slot */
	ahead_t *a;
	chunk_ref_t ref;
	uint64_t seq; /* the entry it belongs to */
	bool bundle;
	buf_t out;
} slot_t;

typedef struct ent {
	tree_entry_t e;
	uint64_t seq;
	bool data;
} ent_t;

struct ahead {
	chunkstore_t *cs;
	const crypt_keys_t *key;
	snaptree_t *t;
	ahead_filter_fn filter;
	void *arg;
	size_t window;
	pool_t *pool;

	ent_t *ents; /* AHEAD_MAX_ENTRIES */
	size_t ehead, ecount;
	bool have_cur; /* ents[ehead] is handed out */
	uint64_t next_seq;
	int tree_err;
	bool tree_end;

	size_t sub_idx;   /* cursor: entry ents[ehead + sub_idx] ... */
	uint32_t sub_ext; /* ... its next extent (1 = bundle submitted) */
	bool sub_bundle_valid;
	digest_t sub_bundle; /* the last bundle submitted */

	slot_t slots[AHEAD_SLOTS];
	size_t shead, scount;
	bool head_held;  /* slots[shead] is handed out by ahead_chunk */
	size_t inflight; /* plain bytes of the slots in use */

	/* Buffers of released slots, the most recent last: reused while
	 * their pages are still mapped and warm, up to `window` bytes. */
	buf_t spare[AHEAD_SLOTS];
	size_t nspare, spare_bytes;

	bool cache_valid;
	digest_t cache_d;
	int cache_err;
	buf_t cache;
};

static void run_slot(chunkjob_t *j)
{
	slot_t *s = (slot_t *)j;
	j->err = chunkstore_get_key(s->a->cs, s->a->key, &s->ref.digest, &s->out);
}

static ent_t *ent_at(ahead_t *a, size_t i)
{
	return &a->ents[(a->ehead + i) % AHEAD_MAX_ENTRIES];
}

static slot_t *slot_head(ahead_t *a)
{
	return &a->slots[a->shead];
}

/* Reads entries until one is wanted: 1 when one was queued, 0 at the end
 * of the stream or at its error (kept for ahead_next). */
static int read_one(ahead_t *a)
{
	while (!a->tree_end && a->ecount < AHEAD_MAX_ENTRIES) {
		tree_entry_t e = {0};
		int r = snaptree_next(a->t, &e);
		if (r <= 0) {
			a->tree_err = r;
			a->tree_end = true;
			return 0;
		}
		ahead_want_t w = a->filter(&e, a->arg);
		if (w == AHEAD_SKIP) {
			tree_entry_clear(&e);
			continue;
		}
		ent_t *n = ent_at(a, a->ecount++);
		n->e = e;
		n->seq = a->next_seq++;
		n->data = w == AHEAD_DATA;
		return 1;
	}
	return 0;
}

/* The chunk at the cursor in entry n, moving past holes and repeated
 * bundles; false when n has no more. */
static bool next_ref(ahead_t *a, const ent_t *n, chunk_ref_t *ref, bool *bundle)
{
	const tree_entry_t *e = &n->e;
	if (!n->data)
		return false;
	if (e->content == TREE_CONTENT_EXTENTS) {
		while (a->sub_ext < e->nextent && e->extents[a->sub_ext].kind == TREE_EXT_HOLE)
			a->sub_ext++;
		if (a->sub_ext >= e->nextent)
			return false;
		*ref = e->extents[a->sub_ext].ref;
		*bundle = false;
		return true;
	}
	if (e->content != TREE_CONTENT_BUNDLE || a->sub_ext)
		return false;
	if (a->sub_bundle_valid && !digest_cmp(&a->sub_bundle, &e->bundle.digest)) {
		a->sub_ext = 1;
		return false;
	}
	*ref = e->bundle;
	*bundle = true;
	return true;
}

static void submit(ahead_t *a, const chunk_ref_t *ref, bool bundle, uint64_t seq)
{
	slot_t *s = &a->slots[(a->shead + a->scount++) % AHEAD_SLOTS];
	s->a = a;
	s->ref = *ref;
	s->seq = seq;
	s->bundle = bundle;
	s->j.run = run_slot;
	s->j.err = 0;
	if (a->nspare) {
		s->out = a->spare[--a->nspare];
		a->spare_bytes -= s->out.cap;
	}
	a->inflight += ref->plain_len;
	if (bundle) {
		a->sub_bundle = ref->digest;
		a->sub_bundle_valid = true;
	}
	pool_submit(a->pool, &s->j);
}

/* Submits chunks at the cursor while the window has room, reading entries
 * ahead as needed. */
static void top_up(ahead_t *a)
{
	for (;;) {
		if (a->sub_idx >= a->ecount) {
			if (!read_one(a))
				return;
			continue;
		}
		chunk_ref_t ref;
		bool bundle;
		if (!next_ref(a, ent_at(a, a->sub_idx), &ref, &bundle)) {
			a->sub_idx++;
			a->sub_ext = 0;
			continue;
		}
		if (a->scount == AHEAD_SLOTS ||
		    (a->scount && a->inflight + ref.plain_len > a->window))
			return;
		submit(a, &ref, bundle, ent_at(a, a->sub_idx)->seq);
		a->sub_ext++;
	}
}

/* Makes sure s has run: taken back from the queue and run here when no
 * worker got to it yet (the writer has nothing better to do), or waited
 * for. */
static void finish(ahead_t *a, slot_t *s)
{
	if (pool_cancel(a->pool, &s->j))
		run_slot(&s->j);
	else
		pool_wait(a->pool, &s->j);
}

/* Frees the head slot; its buffer goes to the spares unless they hold
 * the window's worth already.  Fresh buffers cost a page fault per page. */
static void release_head(ahead_t *a)
{
	slot_t *s = slot_head(a);
	if (s->out.data && a->nspare < AHEAD_SLOTS && a->spare_bytes + s->out.cap <= a->window) {
		a->spare_bytes += s->out.cap;
		a->spare[a->nspare++] = s->out;
		s->out = (buf_t){0};
	} else {
		buf_free(&s->out);
	}
	a->inflight -= s->ref.plain_len;
	a->shead = (a->shead + 1) % AHEAD_SLOTS;
	a->scount--;
	a->head_held = false;
}

/* The (finished) head slot's bundle becomes the cached one. */
static void adopt_head(ahead_t *a)
{
	slot_t *s = slot_head(a);
	buf_t b = a->cache;
	a->cache = s->out;
	s->out = b;
	a->cache_d = s->ref.digest;
	a->cache_err = s->j.err;
	a->cache_valid = true;
	release_head(a);
}

/* Drops what the writer did not take of its entry, then the entry. */
static void drop_current(ahead_t *a)
{
	if (a->head_held)
		release_head(a);
	if (!a->have_cur)
		return;
	uint64_t seq = ent_at(a, 0)->seq;
	while (a->scount && slot_head(a)->seq == seq) {
		slot_t *s = slot_head(a);
		if (s->bundle) {
			/* Later entries may share it. */
			finish(a, s);
			adopt_head(a);
		} else {
			if (!pool_cancel(a->pool, &s->j))
				pool_wait(a->pool, &s->j);
			release_head(a);
		}
	}
	tree_entry_clear(&ent_at(a, 0)->e);
	a->ehead = (a->ehead + 1) % AHEAD_MAX_ENTRIES;
	a->ecount--;
	if (a->sub_idx)
		a->sub_idx--;
	else
		a->sub_ext = 0; /* the rest of the dropped entry is never submitted */
	a->have_cur = false;
}

int ahead_open(ahead_t **out, chunkstore_t *cs, const crypt_keys_t *k, snaptree_t *t,
	       ahead_filter_fn filter, void *arg, size_t window, int nthreads)
{
	*out = NULL;
	ahead_t *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->ents = calloc(AHEAD_MAX_ENTRIES, sizeof(*a->ents));
	if (!a->ents) {
		free(a);
		return -ENOMEM;
	}
	a->pool = pool_new(cs, nthreads);
	if (!a->pool) {
		free(a->ents);
		free(a);
		return -EAGAIN;
	}
	a->cs = cs;
	a->key = k;
	a->t = t;
	a->filter = filter;
	a->arg = arg;
	a->window = window ? window : AHEAD_DEFAULT_WINDOW;
	*out = a;
	return 0;
}

int ahead_next(ahead_t *a, tree_entry_t **e)
{
	drop_current(a);
	if (!a->ecount && !read_one(a))
		return a->tree_err;
	a->have_cur = true;
	*e = &ent_at(a, 0)->e;
	top_up(a);
	return 1;
}

/* The head slot if it is the current entry's next chunk ref (bundle or
 * not), finished; NULL when the order is broken. */
static slot_t *take_head(ahead_t *a, const chunk_ref_t *ref, bool bundle)
{
	if (a->head_held)
		release_head(a);
	if (!a->have_cur)
		return NULL;
	top_up(a);
	slot_t *s = slot_head(a);
	if (!a->scount || s->seq != ent_at(a, 0)->seq || s->bundle != bundle ||
	    digest_cmp(&s->ref.digest, &ref->digest))
		return NULL;
	finish(a, s);
	return s;
}

int ahead_chunk(ahead_t *a, const chunk_ref_t *ref, const buf_t **out)
{
	slot_t *s = take_head(a, ref, false);
	if (!s)
		return -EPROTO;
	if (s->j.err) {
		int r = s->j.err;
		release_head(a);
		return r;
	}
	a->head_held = true;
	*out = &s->out;
	return 0;
}

int ahead_bundle(ahead_t *a, const chunk_ref_t *ref, const buf_t **out)
{
	if (a->head_held)
		release_head(a);
	if (!a->cache_valid || digest_cmp(&a->cache_d, &ref->digest)) {
		if (!take_head(a, ref, true))
			return -EPROTO;
		adopt_head(a);
	}
	if (a->cache_err)
		return a->cache_err;
	*out = &a->cache;
	return 0;
}

void ahead_close(ahead_t *a)
{
	if (!a)
		return;
	if (a->head_held)
		release_head(a);
	while (a->scount) {
		slot_t *s = slot_head(a);
		if (!pool_cancel(a->pool, &s->j))
			pool_wait(a->pool, &s->j);
		release_head(a);
	}
	pool_free(a->pool);
	for (size_t i = 0; i < AHEAD_SLOTS; i++)
		buf_free(&a->slots[i].out);
	for (size_t i = 0; i < a->nspare; i++)
		buf_free(&a->spare[i]);
	for (size_t i = 0; i < a->ecount; i++)
		tree_entry_clear(&ent_at(a, i)->e);
	buf_free(&a->cache);
	free(a->ents);
	free(a);
}
