/* chunker.h - FastCDC content-defined chunking (normalized gear hash).
 *
 * Boundaries depend only on the bytes near them, so an insertion early in
 * a file moves only the chunks around it.  The gear table is a fixed
 * constant of the format: changing it changes every boundary and breaks
 * dedup against existing stores.
 */
#ifndef CAIRN_CHUNKER_H
#define CAIRN_CHUNKER_H

#include <stddef.h>
#include <stdint.h>

typedef struct chunker_params {
	uint32_t min_size; /* no boundary before this many bytes */
	uint32_t avg_size; /* power of two; the normalization point */
	uint32_t max_size; /* forced boundary here */
	uint64_t mask_s;   /* stricter mask used before avg_size */
	uint64_t mask_l;   /* looser mask used after avg_size */
	/* The gear table: NULL for the fixed table of the format; an
	 * encryption root's own table (derived from its secret chunker seed,
	 * crypt.h) so that chunk boundaries do not fingerprint files.  Not
	 * owned. */
	const uint64_t *gear;
} chunker_params_t;

/* Fills p for an average size (a power of two, 1 KiB .. 8 MiB): min = avg/4,
 * max = avg*4, normalization level 2.  Returns 0 or -EINVAL. */
int chunker_params_init(chunker_params_t *p, uint32_t avg_size);

/* Returns the length of the first chunk of data[0..len): a value in
 * [1, len].  When len <= min_size, or no boundary is found before len and
 * len < max_size, returns len (the caller decides whether more data could
 * still come: see chunker_t below). */
/* Makes p cut with gear table g (256 entries, kept by the caller; NULL
 * restores the fixed table). */
void chunker_params_seed(chunker_params_t *p, const uint64_t *g);

size_t chunker_cut(const chunker_params_t *p, const uint8_t *data, size_t len);

/* Streaming use: feed the stream through a buffer; a chunk is final when
 * chunker_cut() returned less than the bytes available, or the available
 * bytes are >= max_size, or the stream ended. */

#endif
