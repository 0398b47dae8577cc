/* slab.c - see slab.h. */
#include <stdbool.h>
#include <stdlib.h>

#include "data/slab.h"

void slabpool_init(slabpool_t *sp, size_t cap, unsigned keep)
{
	pthread_mutex_init(&sp->lock, NULL);
	sp->free = NULL;
	sp->nfree = 0;
	sp->keep = keep;
	sp->cap = cap;
	atomic_init(&sp->out, 0);
}

void slabpool_destroy(slabpool_t *sp)
{
	while (sp->free) {
		slab_t *s = sp->free;
		sp->free = s->next;
		free(s);
	}
	sp->nfree = 0;
	pthread_mutex_destroy(&sp->lock);
}

slab_t *slab_get(slabpool_t *sp)
{
	pthread_mutex_lock(&sp->lock);
	slab_t *s = sp->free;
	if (s) {
		sp->free = s->next;
		sp->nfree--;
	}
	pthread_mutex_unlock(&sp->lock);
	if (!s) {
		s = malloc(sizeof(*s) + sp->cap);
		if (!s)
			return NULL;
		s->home = sp;
		s->cap = sp->cap;
	}
	s->next = NULL;
	atomic_init(&s->refs, 1);
	atomic_fetch_add_explicit(&sp->out, 1, memory_order_relaxed);
	return s;
}

void slab_ref(slab_t *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void slab_put(slab_t *s)
{
	/* acq_rel: every user's reads of the data happen before the slab is
	 * handed out again and overwritten. */
	if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	slabpool_t *sp = s->home;
	atomic_fetch_sub_explicit(&sp->out, 1, memory_order_relaxed);
	pthread_mutex_lock(&sp->lock);
	bool kept = sp->nfree < sp->keep;
	if (kept) {
		s->next = sp->free;
		sp->free = s;
		sp->nfree++;
	}
	pthread_mutex_unlock(&sp->lock);
	if (!kept)
		free(s);
}
