/* refset.c - see refset.h. */
#include "maint/refset.h"

#include <errno.h>
#include <stdlib.h>

static const digest_t zero_digest;

static size_t slot_of(const digest_t *d, size_t mask)
{
	uint64_t h;
	memcpy(&h, d->b, 8);
	return h & mask;
}

static int grow(refset_t *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 1024;
	chunk_ref_t *n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		if (!digest_cmp(&s->slots[i].digest, &zero_digest))
			continue;
		size_t j = slot_of(&s->slots[i].digest, ncap - 1);
		while (digest_cmp(&n[j].digest, &zero_digest))
			j = (j + 1) & (ncap - 1);
		n[j] = s->slots[i];
	}
	free(s->slots);
	s->slots = n;
	s->cap = ncap;
	return 0;
}

int refset_add(refset_t *s, const chunk_ref_t *r)
{
	if (!digest_cmp(&r->digest, &zero_digest)) {
		if (s->has_zero)
			return 0;
		s->has_zero = true;
		s->zero = *r;
		return 1;
	}
	if ((s->n + 1) * 4 > s->cap * 3) {
		int e = grow(s);
		if (e < 0)
			return e;
	}
	size_t j = slot_of(&r->digest, s->cap - 1);
	while (digest_cmp(&s->slots[j].digest, &zero_digest)) {
		if (!digest_cmp(&s->slots[j].digest, &r->digest))
			return 0;
		j = (j + 1) & (s->cap - 1);
	}
	s->slots[j] = *r;
	s->n++;
	return 1;
}

bool refset_has(const refset_t *s, const digest_t *d)
{
	if (!digest_cmp(d, &zero_digest))
		return s->has_zero;
	if (!s->cap)
		return false;
	size_t j = slot_of(d, s->cap - 1);
	while (digest_cmp(&s->slots[j].digest, &zero_digest)) {
		if (!digest_cmp(&s->slots[j].digest, d))
			return true;
		j = (j + 1) & (s->cap - 1);
	}
	return false;
}

static int ref_cmp(const void *a, const void *b)
{
	return digest_cmp(&((const chunk_ref_t *)a)->digest, &((const chunk_ref_t *)b)->digest);
}

int refset_sorted(const refset_t *s, chunk_ref_t **out, size_t *n)
{
	size_t total = s->n + s->has_zero;
	chunk_ref_t *v = malloc((total ? total : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t k = 0;
	if (s->has_zero)
		v[k++] = s->zero;
	for (size_t i = 0; i < s->cap; i++)
		if (digest_cmp(&s->slots[i].digest, &zero_digest))
			v[k++] = s->slots[i];
	qsort(v, k, sizeof(*v), ref_cmp);
	*out = v;
	*n = k;
	return 0;
}

void refset_free(refset_t *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
