/* refset.h - a hash set of chunk references keyed by digest.
 *
 * Holds the distinct chunks one snapshot reaches while it is written, so
 * that referenced bytes count each chunk once and the chunk index can be
 * emitted sorted.  Open addressing on the digest's first 8 bytes (SHA-256
 * output is uniform, so no further hashing is needed).
 */
#ifndef CAIRN_REFSET_H
#define CAIRN_REFSET_H

#include "util.h"

typedef struct refset {
	chunk_ref_t *slots; /* digest all-zero = empty slot */
	size_t cap;         /* power of two */
	size_t n;
	bool has_zero;      /* the all-zero digest, kept aside */
	chunk_ref_t zero;
} refset_t;

/* Returns 1 if r was added, 0 if its digest was present, -ENOMEM. */
int refset_add(refset_t *s, const chunk_ref_t *r);
bool refset_has(const refset_t *s, const digest_t *d);
/* Writes the refs sorted by digest into *out (malloc'd, n entries). */
int refset_sorted(const refset_t *s, chunk_ref_t **out, size_t *n);
void refset_free(refset_t *s);

#endif
