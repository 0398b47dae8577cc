/* lru.c - see lru.h.
 *
 * Layout: ents[] holds the digests and the recency list (indices, NIL at
 * the ends); table[] is an open-addressing index over it with linear
 * probing.  A slot is 0 (empty) or (h << 32 | (entry index + 1)), where h
 * is 32 bits of the digest: its low bits give the slot's home position,
 * all of it serves as a tag so that probing rarely reads an entry whose
 * digest does not match.  Deletion shifts later slots of the run back
 * (no tombstones), using the home position kept in the slot itself.
 */
#include "maint/lru.h"

#include <errno.h>
#include <stdlib.h>

#define NIL UINT32_MAX
/* Prefetch distances (in digests) of the slot and of the entry. */
#define PF_SLOT 12
#define PF_ENT 6

typedef struct lru_ent {
	digest_t d;
	uint32_t prev, next;
	uint64_t stamp; /* clock value when last put in front */
} lru_ent_t;

struct lru {
	lru_ent_t *ents;
	uint64_t *table;
	uint32_t cap, n;
	uint32_t head, tail; /* most and least recently used */
	uint64_t mask;       /* table size - 1 */
	uint64_t clock;      /* insertions + promotions */
};

/* SHA-256 output is uniform: any 32 bits will do.  Bytes 0-1 choose the
 * chunk directory, so take bytes from further in. */
static inline uint32_t dhash(const digest_t *d)
{
	uint32_t h;
	memcpy(&h, d->b + 12, 4);
	return h;
}

int lru_new(size_t capacity, lru_t **out)
{
	*out = NULL;
	if (capacity < 1 || capacity > (1u << 30))
		return -EINVAL;
	lru_t *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	size_t tsize = 16;
	while (tsize < 2 * capacity)
		tsize *= 2;
	c->ents = malloc(capacity * sizeof(*c->ents));
	c->table = calloc(tsize, sizeof(*c->table));
	if (!c->ents || !c->table) {
		lru_free(c);
		return -ENOMEM;
	}
	c->cap = capacity;
	c->mask = tsize - 1;
	c->head = c->tail = NIL;
	*out = c;
	return 0;
}

void lru_free(lru_t *c)
{
	if (!c)
		return;
	free(c->ents);
	free(c->table);
	free(c);
}

size_t lru_size(const lru_t *c)
{
	return c->n;
}

size_t lru_capacity(const lru_t *c)
{
	return c->cap;
}

size_t lru_memory(const lru_t *c)
{
	return sizeof(*c) + (size_t)c->cap * sizeof(*c->ents) + (c->mask + 1) * sizeof(*c->table);
}

/* Slot index holding d, or -1. */
static int64_t find_slot(const lru_t *c, const digest_t *d, uint32_t h)
{
	for (uint64_t i = h & c->mask;; i = (i + 1) & c->mask) {
		uint64_t s = c->table[i];
		if (!s)
			return -1;
		if ((uint32_t)(s >> 32) == h &&
		    !digest_cmp(&c->ents[(uint32_t)s - 1].d, d))
			return (int64_t)i;
	}
}

bool lru_contains(const lru_t *c, const digest_t *d)
{
	return find_slot(c, d, dhash(d)) >= 0;
}

static void list_unlink(lru_t *c, uint32_t i)
{
	lru_ent_t *e = &c->ents[i];
	if (e->prev != NIL)
		c->ents[e->prev].next = e->next;
	else
		c->head = e->next;
	if (e->next != NIL)
		c->ents[e->next].prev = e->prev;
	else
		c->tail = e->prev;
}

static void list_push_front(lru_t *c, uint32_t i)
{
	lru_ent_t *e = &c->ents[i];
	e->prev = NIL;
	e->next = c->head;
	if (c->head != NIL)
		c->ents[c->head].prev = i;
	c->head = i;
	if (c->tail == NIL)
		c->tail = i;
	e->stamp = ++c->clock;
}

/* Removes slot i, shifting the rest of its probe run back. */
static void slot_delete(lru_t *c, uint64_t i)
{
	uint64_t j = i;
	for (;;) {
		j = (j + 1) & c->mask;
		uint64_t s = c->table[j];
		if (!s)
			break;
		uint64_t home = (s >> 32) & c->mask;
		if (((j - home) & c->mask) >= ((j - i) & c->mask)) {
			c->table[i] = s;
			i = j;
		}
	}
	c->table[i] = 0;
}

static void slot_insert(lru_t *c, uint32_t h, uint32_t idx)
{
	uint64_t i = h & c->mask;
	while (c->table[i])
		i = (i + 1) & c->mask;
	c->table[i] = (uint64_t)h << 32 | (idx + 1);
}

bool lru_check_insert(lru_t *c, const digest_t *d)
{
	uint32_t h = dhash(d);
	int64_t s = find_slot(c, d, h);
	if (s >= 0) {
		uint32_t i = (uint32_t)c->table[s] - 1;
		if (c->clock - c->ents[i].stamp > c->cap / 2) {
			list_unlink(c, i);
			list_push_front(c, i);
		}
		return true;
	}
	uint32_t idx;
	if (c->n < c->cap) {
		idx = c->n++;
	} else {
		idx = c->tail;
		lru_ent_t *v = &c->ents[idx];
		int64_t vs = find_slot(c, &v->d, dhash(&v->d));
		if (vs >= 0) /* always: every entry has its slot */
			slot_delete(c, (uint64_t)vs);
		list_unlink(c, idx);
	}
	c->ents[idx].d = *d;
	slot_insert(c, h, idx);
	list_push_front(c, idx);
	return false;
}

void lru_check_insert_many(lru_t *c, const digest_t *d, size_t n, bool *hit)
{
	for (size_t k = 0; k < n && k < PF_SLOT; k++)
		__builtin_prefetch(&c->table[dhash(&d[k]) & c->mask]);
	for (size_t k = 0; k < n; k++) {
		if (k + PF_SLOT < n)
			__builtin_prefetch(&c->table[dhash(&d[k + PF_SLOT]) & c->mask]);
		if (k + PF_ENT < n) {
			uint32_t h = dhash(&d[k + PF_ENT]);
			uint64_t s = c->table[h & c->mask];
			if (s && (uint32_t)(s >> 32) == h)
				__builtin_prefetch(&c->ents[(uint32_t)s - 1]);
		}
		hit[k] = lru_check_insert(c, &d[k]);
	}
}

size_t lru_dump(const lru_t *c, digest_t *out)
{
	size_t k = 0;
	for (uint32_t i = c->head; i != NIL; i = c->ents[i].next)
		out[k++] = c->ents[i].d;
	return k;
}
