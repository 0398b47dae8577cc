/* plainsend.c - see plainsend.h. */
#include "repl/plainsend.h"

#include <errno.h>
#include <stdlib.h>

#include "store/blob.h"
#include "store/store.h"

/* keyed id -> plain ref; an empty slot has plain.plain_len == 0 (every
 * chunk holds at least one byte). */
typedef struct idpair {
	digest_t keyed;
	chunk_ref_t plain;
} idpair_t;

struct plainsend {
	chunkstore_t *cs;
	const crypt_keys_t *k;
	int level;
	idpair_t *slot;
	size_t cap, n; /* cap: a power of two */
	buf_t plain, blob;
};

int plainsend_new(chunkstore_t *cs, const crypt_keys_t *k, int level, plainsend_t **out)
{
	plainsend_t *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->cs = cs;
	ps->k = k;
	ps->level = level;
	*out = ps;
	return 0;
}

void plainsend_free(plainsend_t *ps)
{
	if (!ps)
		return;
	free(ps->slot);
	buf_free(&ps->plain);
	buf_free(&ps->blob);
	free(ps);
}

/* Keyed ids are HMAC output, uniform: their first bytes are the hash. */
static size_t slot_of(const plainsend_t *ps, const digest_t *d)
{
	return (size_t)get_u64(d->b) & (ps->cap - 1);
}

static idpair_t *find_slot(const plainsend_t *ps, const digest_t *d)
{
	for (size_t i = slot_of(ps, d);; i = (i + 1) & (ps->cap - 1)) {
		idpair_t *s = &ps->slot[i];
		if (!s->plain.plain_len || !digest_cmp(&s->keyed, d))
			return s;
	}
}

static int map_grow(plainsend_t *ps)
{
	size_t ncap = ps->cap ? ps->cap * 2 : 4096;
	idpair_t *old = ps->slot, *nv = calloc(ncap, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	size_t ocap = ps->cap;
	ps->slot = nv;
	ps->cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].plain.plain_len)
			*find_slot(ps, &old[i].keyed) = old[i];
	free(old);
	return 0;
}

int plainsend_lookup(const plainsend_t *ps, const digest_t *d, chunk_ref_t *ref)
{
	if (!ps->cap)
		return 0;
	const idpair_t *s = find_slot(ps, d);
	if (!s->plain.plain_len)
		return 0;
	*ref = s->plain;
	return 1;
}

/* Decrypts keyed chunk d (tag and keyed id checked) and encodes it as the
 * plain blob an unencrypted dataset would store: ps->blob, *ref. */
static int plain_form(plainsend_t *ps, const digest_t *d, chunk_ref_t *ref)
{
	int r = chunkstore_get_key(ps->cs, ps->k, d, &ps->plain);
	if (r < 0)
		return r;
	digest_of(ps->plain.data, ps->plain.len, &ref->digest);
	ref->plain_len = ps->plain.len;
	r = blob_encode(ps->plain.data, ps->plain.len, ps->level, &ps->blob);
	ref->stored_len = ps->blob.len;
	return r;
}

int plainsend_blob(plainsend_t *ps, const digest_t *d, buf_t *blob)
{
	chunk_ref_t ref;
	int r = plain_form(ps, d, &ref);
	if (r == 0) {
		blob->len = 0;
		r = buf_append(blob, ps->blob.data, ps->blob.len);
	}
	return r;
}

/* Renames one chunk reference from its keyed id to its SHA-256. */
static int translate(plainsend_t *ps, chunk_ref_t *ref, chunk_ref_t *failed)
{
	if (plainsend_lookup(ps, &ref->digest, ref))
		return 0;
	if ((ps->n + 1) * 2 > ps->cap && map_grow(ps) < 0)
		return -ENOMEM;
	chunk_ref_t plain;
	int r = plain_form(ps, &ref->digest, &plain);
	if (r < 0) {
		*failed = *ref;
		return r;
	}
	idpair_t *s = find_slot(ps, &ref->digest);
	s->keyed = ref->digest;
	s->plain = plain;
	ps->n++;
	*ref = plain;
	return 0;
}

/* Every chunk reference of one tree record, renamed and added to set. */
static int translate_entry(plainsend_t *ps, tree_entry_t *e, refset_t *set, chunk_ref_t *failed)
{
	int r = 0;
	for (uint32_t i = 0; r == 0 && i < e->nextent; i++) {
		if (e->content != TREE_CONTENT_EXTENTS || e->extents[i].kind != TREE_EXT_CHUNK)
			continue;
		r = translate(ps, &e->extents[i].ref, failed);
		if (r == 0 && refset_add(set, &e->extents[i].ref) < 0)
			r = -ENOMEM;
	}
	if (r == 0 && e->content == TREE_CONTENT_BUNDLE) {
		r = translate(ps, &e->bundle, failed);
		if (r == 0 && refset_add(set, &e->bundle) < 0)
			r = -ENOMEM;
	}
	return r;
}

static int discard(void *arg, const chunk_ref_t *ref, const buf_t *blob)
{
	(void)arg;
	(void)ref;
	(void)blob;
	return 0;
}

/* Reads the encrypted tree stream record by record (continuations kept
 * as they are, so the records come out exactly as written) and writes
 * the renamed records through w. */
static int tree_copy(plainsend_t *ps, const buf_t *keyed_tree, cdcw_t *w, refset_t *set,
		     chunk_ref_t *failed)
{
	metard_t m;
	metard_init(&m, ps->cs, keyed_tree);
	m.key = ps->k;
	tree_reader_t *rd = NULL;
	buf_t out = {0};
	int r = tree_reader_new(&rd);
	if (r == 0)
		r = tree_write_header(&out);
	bool more = true;
	while (r == 0) {
		tree_entry_t e = {0};
		int k = tree_reader_next(rd, &e);
		if (k == 1) {
			r = translate_entry(ps, &e, set, failed);
			if (r == 0)
				r = tree_write_entry(&out, &e);
			tree_entry_clear(&e);
		} else if (k < 0) {
			r = k;
		} else if (!more) {
			r = tree_reader_end(rd);
			break;
		} else {
			const uint8_t *data;
			size_t len;
			k = metard_next(&m, &data, &len);
			if (k < 0) {
				*failed = m.failed;
				r = k;
			} else if (k == 0) {
				more = false;
			} else {
				r = tree_reader_feed(rd, data, len);
			}
		}
		if (r == 0 && (out.len >= (1u << 20) || !more)) {
			r = cdcw_write(w, out.data, out.len);
			out.len = 0;
		}
	}
	if (r == 0)
		r = cdcw_write(w, out.data, out.len);
	tree_reader_free(rd);
	metard_free(&m);
	buf_free(&out);
	return r;
}

int plainsend_snapshot(plainsend_t *ps, const buf_t *keyed_tree, plainsend_fn fn, void *arg,
		       buf_t *tree, buf_t *idx, chunk_ref_t *failed)
{
	refset_t set = {0};
	chunker_params_t p;
	chunker_params_init(&p, META_CHUNK_AVG);
	cdcw_t w;
	cdcw_init(&w, NULL, &p, ps->level, &set);
	w.sink = fn ? fn : discard;
	w.sink_arg = arg;
	int r = tree_copy(ps, keyed_tree, &w, &set, failed);
	if (r == 0)
		r = cdcw_finish(&w);
	if (r == 0) {
		tree->len = 0;
		r = buf_append(tree, w.refs.data, w.refs.len);
	}
	cdcw_free(&w);
	if (r == 0)
		r = index_write_sink(&set, fn ? fn : discard, arg, idx);
	refset_free(&set);
	return r;
}
