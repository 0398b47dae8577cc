/* fuzz_tree.c - libFuzzer target for the tree stream reader.
 *
 * Input: one control byte, then the stream.  The control byte's low 7 bits
 * pick where the stream is split into two feeds; its high bit feeds the
 * first part one byte at a time, pulling entries after every byte.
 *
 * Properties checked (abort() on violation):
 * - every decoded entry is accepted by the writer, and its record decodes
 *   again, alone in a fresh stream, to an equal entry;
 * - the encoding is canonical: header + re-encoded entries equal the
 *   input's prefix, and the whole input when the reader ended cleanly.
 */
#include <stdlib.h>

#include "data/tree.h"

/* Re-encodes e into a fresh stream, decodes it, and checks the result. */
static void check_entry(const tree_entry_t *e, buf_t *stream)
{
	buf_t one = {0};
	if (tree_write_header(&one) || tree_write_entry(&one, e))
		abort();
	tree_reader_t *r;
	if (tree_reader_new(&r) || tree_reader_feed(r, one.data, one.len))
		abort();
	tree_entry_t again = {0}, copy = {0};
	if (tree_reader_next(r, &again) != 1 || !tree_entry_equal(e, &again))
		abort();
	if (tree_reader_next(r, &copy) != 0 || tree_reader_end(r) != 0)
		abort();
	if (tree_entry_copy(&copy, &again) || !tree_entry_equal(&copy, e))
		abort();
	if (tree_write_entry(stream, &copy))
		abort();
	tree_entry_clear(&again);
	tree_entry_clear(&copy);
	tree_reader_free(r);
	buf_free(&one);
}

/* Pulls entries until the reader wants more bytes; false on an error. */
static bool pull(tree_reader_t *r, buf_t *stream)
{
	for (;;) {
		tree_entry_t e = {0};
		int rc = tree_reader_next(r, &e);
		if (rc < 0) {
			if (rc != CAIRN_ECORRUPT)
				abort();
			return false;
		}
		if (rc == 0)
			return true;
		check_entry(&e, stream);
		tree_entry_clear(&e);
	}
}

static bool feed(tree_reader_t *r, const uint8_t *p, size_t n, bool bytewise, buf_t *stream)
{
	size_t step = bytewise ? 1 : (n ? n : 1);
	for (size_t off = 0; off < n; off += step) {
		if (tree_reader_feed(r, p + off, MIN(step, n - off)))
			abort(); /* only fails after an error, and pull() stops there */
		if (!pull(r, stream))
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t ctl = data[0];
	data++;
	size--;
	size_t split = (size_t)(ctl & 0x7f) * size / 0x7f;

	tree_reader_t *r;
	if (tree_reader_new(&r))
		abort();
	buf_t stream = {0};
	if (tree_write_header(&stream))
		abort();
	bool ok = feed(r, data, split, ctl & 0x80, &stream) &&
		  feed(r, data + split, size - split, false, &stream);
	int end = tree_reader_end(r);
	if (end != 0 && end != CAIRN_ECORRUPT)
		abort();
	/* No entry decoded: the header may not even have been checked. */
	if (stream.len > TREE_HEADER_LEN || (ok && end == 0)) {
		if (stream.len > size || memcmp(stream.data, data, stream.len))
			abort();
	}
	if (ok && end == 0 && stream.len != size)
		abort();
	buf_free(&stream);
	tree_reader_free(r);
	return 0;
}
