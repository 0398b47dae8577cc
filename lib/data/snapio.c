/* snapio.c - see snapio.h. */
#include "data/snapio.h"

#include "store/blob.h"

#include <errno.h>
#include <stdlib.h>

int chunk_id(const crypt_keys_t *k, const void *data, size_t len, digest_t *out)
{
	if (k)
		return crypt_chunk_id(k, data, len, out);
	digest_of(data, len, out);
	return 0;
}

int chunk_store_data(chunkstore_t *cs, const void *data, size_t len, int level,
		     chunk_ref_t *out, bool *was_new)
{
	return chunk_store_data_key(cs, NULL, data, len, level, out, was_new);
}

int chunk_store_data_key(chunkstore_t *cs, const crypt_keys_t *k, const void *data, size_t len,
			 int level, chunk_ref_t *out, bool *was_new)
{
	int r = chunk_id(k, data, len, &out->digest);
	if (r < 0)
		return r;
	out->plain_len = len;
	bool n;
	r = chunkstore_put_key(cs, k, &out->digest, data, len, level, &out->stored_len, &n);
	if (was_new)
		*was_new = n;
	return r;
}

void cdcw_init(cdcw_t *w, chunkstore_t *cs, const chunker_params_t *p, int level, refset_t *set)
{
	memset(w, 0, sizeof(*w));
	w->cs = cs;
	w->p = *p;
	w->level = level;
	w->set = set;
}

/* Sink mode: the chunk's plain blob goes to the sink, not the store. */
static int cdcw_sink(cdcw_t *w, const uint8_t *data, size_t len, chunk_ref_t *ref)
{
	digest_of(data, len, &ref->digest);
	ref->plain_len = len;
	int r = blob_encode(data, len, w->level, &w->blob);
	ref->stored_len = w->blob.len;
	return r < 0 ? r : w->sink(w->sink_arg, ref, &w->blob);
}

static int cdcw_emit(cdcw_t *w, const uint8_t *data, size_t len)
{
	chunk_ref_t ref;
	bool isnew = false;
	int r = w->sink ? cdcw_sink(w, data, len, &ref)
			: chunk_store_data_key(w->cs, w->key, data, len, w->level, &ref, &isnew);
	if (r < 0)
		return r;
	if (isnew) {
		w->new_chunks++;
		w->new_bytes += ref.stored_len;
	}
	uint8_t packed[CHUNK_REF_WIRE];
	chunk_ref_pack(&ref, packed);
	r = buf_append(&w->refs, packed, sizeof(packed));
	if (r == 0 && w->set)
		r = refset_add(w->set, &ref) < 0 ? -ENOMEM : 0;
	return r;
}

/* Cuts every chunk that is final: the ones that end before max_size
 * bytes of look-ahead run out. */
static int cdcw_drain(cdcw_t *w, bool final)
{
	size_t off = 0;
	int r = 0;
	while (w->pending.len - off >= w->p.max_size || (final && off < w->pending.len)) {
		size_t n = chunker_cut(&w->p, w->pending.data + off, w->pending.len - off);
		r = cdcw_emit(w, w->pending.data + off, n);
		if (r < 0)
			break;
		off += n;
	}
	buf_consume(&w->pending, off);
	return r;
}

int cdcw_write(cdcw_t *w, const void *data, size_t len)
{
	int r = buf_append(&w->pending, data, len);
	w->bytes += len;
	if (r == 0 && w->pending.len >= 2 * (size_t)w->p.max_size)
		r = cdcw_drain(w, false);
	return r;
}

int cdcw_finish(cdcw_t *w)
{
	return cdcw_drain(w, true);
}

void cdcw_free(cdcw_t *w)
{
	buf_free(&w->blob);
	buf_free(&w->pending);
	buf_free(&w->refs);
}

void metard_init(metard_t *m, chunkstore_t *cs, const buf_t *roots)
{
	memset(m, 0, sizeof(*m));
	m->cs = cs;
	m->refs = roots->data;
	m->nrefs = roots->len / CHUNK_REF_WIRE;
}

int metard_next(metard_t *m, const uint8_t **data, size_t *len)
{
	if (m->next >= m->nrefs)
		return 0;
	chunk_ref_t ref;
	chunk_ref_unpack(m->refs + m->next * CHUNK_REF_WIRE, &ref);
	int r = chunkstore_get_key(m->cs, m->key, &ref.digest, &m->chunk);
	if (r < 0) {
		m->failed = ref;
		return r;
	}
	m->next++;
	*data = m->chunk.data;
	*len = m->chunk.len;
	return 1;
}

void metard_free(metard_t *m)
{
	buf_free(&m->chunk);
}

int snaptree_open(snaptree_t *t, chunkstore_t *cs, const buf_t *roots)
{
	return snaptree_open_key(t, cs, NULL, roots);
}

int snaptree_open_key(snaptree_t *t, chunkstore_t *cs, const crypt_keys_t *k, const buf_t *roots)
{
	memset(t, 0, sizeof(*t));
	metard_init(&t->m, cs, roots);
	t->m.key = k;
	return tree_reader_new(&t->rd);
}

/* Pulls the next raw record (CONT not merged); 1, 0 at end, <0. */
static int snaptree_raw(snaptree_t *t, tree_entry_t *e)
{
	for (;;) {
		int r = tree_reader_next(t->rd, e);
		if (r != 0)
			return r;
		const uint8_t *data;
		size_t len;
		r = metard_next(&t->m, &data, &len);
		if (r < 0)
			return r;
		if (r == 0)
			return tree_reader_end(t->rd) < 0 ? CAIRN_ECORRUPT : 0;
		r = tree_reader_feed(t->rd, data, len);
		if (r < 0)
			return r;
	}
}

static int extents_append(tree_entry_t *e, const tree_entry_t *cont)
{
	tree_extent_t *x = realloc(e->extents, (e->nextent + cont->nextent) * sizeof(*x));
	if (!x)
		return -ENOMEM;
	memcpy(x + e->nextent, cont->extents, cont->nextent * sizeof(*x));
	e->extents = x;
	e->nextent += cont->nextent;
	return 0;
}

int snaptree_next(snaptree_t *t, tree_entry_t *e)
{
	int r;
	if (t->have_look) {
		*e = t->look;
		memset(&t->look, 0, sizeof(t->look));
		t->have_look = false;
	} else {
		if (t->eof)
			return 0;
		r = snaptree_raw(t, e);
		if (r <= 0) {
			t->eof = true;
			return r;
		}
		if (e->type == TREE_CONT) {
			tree_entry_clear(e);
			return CAIRN_ECORRUPT; /* a continuation with nothing to continue */
		}
	}
	/* Gather the continuation records of a large file. */
	for (;;) {
		tree_entry_t n = {0};
		r = snaptree_raw(t, &n);
		if (r <= 0) {
			t->eof = true;
			if (r < 0)
				tree_entry_clear(e);
			return r < 0 ? r : 1;
		}
		if (n.type != TREE_CONT) {
			t->look = n;
			t->have_look = true;
			return 1;
		}
		r = e->type == TREE_REG ? extents_append(e, &n) : CAIRN_ECORRUPT;
		tree_entry_clear(&n);
		if (r < 0) {
			tree_entry_clear(e);
			return r;
		}
	}
}

void snaptree_close(snaptree_t *t)
{
	tree_reader_free(t->rd);
	tree_entry_clear(&t->look);
	metard_free(&t->m);
	memset(t, 0, sizeof(*t));
}

void idxrd_open(idxrd_t *x, chunkstore_t *cs, const buf_t *roots)
{
	memset(x, 0, sizeof(*x));
	metard_init(&x->m, cs, roots);
}

/* Ensures at least need unread bytes in carry; 1 ok, 0 clean end, <0. */
static int idxrd_fill(idxrd_t *x, size_t need)
{
	while (x->carry.len - x->pos < need) {
		const uint8_t *data;
		size_t len;
		int r = metard_next(&x->m, &data, &len);
		if (r <= 0)
			return r < 0 ? r : (x->carry.len == x->pos ? 0 : CAIRN_ECORRUPT);
		buf_consume(&x->carry, x->pos);
		x->pos = 0;
		r = buf_append(&x->carry, data, len);
		if (r < 0)
			return r;
	}
	return 1;
}

int idxrd_next(idxrd_t *x, chunk_ref_t *ref)
{
	if (x->eof)
		return 0;
	int r;
	if (!x->header_done) {
		r = idxrd_fill(x, INDEX_HEADER_LEN);
		if (r <= 0)
			return r == 0 ? CAIRN_ECORRUPT : r;
		const uint8_t *h = x->carry.data + x->pos;
		if (memcmp(h, INDEX_MAGIC, 8) || get_u32(h + 8) != 1)
			return CAIRN_ECORRUPT;
		x->pos += INDEX_HEADER_LEN;
		x->header_done = true;
	}
	r = idxrd_fill(x, CHUNK_REF_WIRE);
	if (r <= 0) {
		x->eof = r == 0;
		return r;
	}
	chunk_ref_unpack(x->carry.data + x->pos, ref);
	x->pos += CHUNK_REF_WIRE;
	if ((x->have_last && digest_cmp(&x->last, &ref->digest) >= 0) || !ref->plain_len ||
	    ref->plain_len > CHUNK_MAX_PLAIN)
		return CAIRN_ECORRUPT;
	x->last = ref->digest;
	x->have_last = true;
	return 1;
}

bool idxrd_failed(const idxrd_t *x, chunk_ref_t *failed)
{
	if (!x->m.failed.plain_len)
		return false;
	*failed = x->m.failed;
	return true;
}

void idxrd_close(idxrd_t *x)
{
	metard_free(&x->m);
	buf_free(&x->carry);
}

static int index_write_cdcw(cdcw_t *w, const refset_t *set, buf_t *roots, uint64_t *referenced,
			    uint64_t *logical);

int index_write(chunkstore_t *cs, const refset_t *set, buf_t *roots, uint64_t *referenced,
		uint64_t *logical)
{
	chunker_params_t p;
	chunker_params_init(&p, 64 << 10);
	cdcw_t w;
	cdcw_init(&w, cs, &p, 3, NULL);
	return index_write_cdcw(&w, set, roots, referenced, logical);
}

int index_write_sink(const refset_t *set, int (*sink)(void *, const chunk_ref_t *, const buf_t *),
		     void *arg, buf_t *roots)
{
	chunker_params_t p;
	chunker_params_init(&p, 64 << 10);
	cdcw_t w;
	cdcw_init(&w, NULL, &p, 3, NULL);
	w.sink = sink;
	w.sink_arg = arg;
	uint64_t referenced, logical;
	return index_write_cdcw(&w, set, roots, &referenced, &logical);
}

/* Writes the sorted refs of set through w (which it frees). */
static int index_write_cdcw(cdcw_t *w, const refset_t *set, buf_t *roots, uint64_t *referenced,
			    uint64_t *logical)
{
	chunk_ref_t *v;
	size_t n;
	int r = refset_sorted(set, &v, &n);
	if (r < 0) {
		cdcw_free(w);
		return r;
	}
	uint8_t hdr[INDEX_HEADER_LEN];
	memcpy(hdr, INDEX_MAGIC, 8);
	put_u32(hdr + 8, 1);
	r = cdcw_write(w, hdr, sizeof(hdr));
	*referenced = *logical = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		uint8_t packed[CHUNK_REF_WIRE];
		chunk_ref_pack(&v[i], packed);
		r = cdcw_write(w, packed, sizeof(packed));
		*referenced += v[i].stored_len;
		*logical += v[i].plain_len;
	}
	if (r == 0)
		r = cdcw_finish(w);
	if (r == 0) {
		roots->len = 0;
		r = buf_append(roots, w->refs.data, w->refs.len);
	}
	cdcw_free(w);
	free(v);
	return r;
}

/* One input of the merge: a reader and its current ref. */
typedef struct mergein {
	idxrd_t rd;
	chunk_ref_t cur;
	int state; /* 1 = cur valid, 0 = ended */
} mergein_t;

static int mergein_adv(mergein_t *m)
{
	m->state = idxrd_next(&m->rd, &m->cur);
	return m->state < 0 ? m->state : 0;
}

/* Advances m until its digest is >= d; returns 1 if equal. */
static int mergein_seek(mergein_t *m, const digest_t *d, int *err)
{
	while (m->state == 1 && digest_cmp(&m->cur.digest, d) < 0)
		if ((*err = mergein_adv(m)) < 0)
			return 0;
	return m->state == 1 && !digest_cmp(&m->cur.digest, d);
}

int index_unique_bytes(chunkstore_t *cs, const buf_t *self, const buf_t *a, const buf_t *b,
		       uint64_t *bytes, idxfail_t *failed)
{
	mergein_t s = {0}, x = {0}, y = {0};
	idxrd_open(&s.rd, cs, self);
	if (a)
		idxrd_open(&x.rd, cs, a);
	if (b)
		idxrd_open(&y.rd, cs, b);
	int err = mergein_adv(&s);
	if (!err && a)
		err = mergein_adv(&x);
	if (!err && b)
		err = mergein_adv(&y);
	*bytes = 0;
	while (!err && s.state == 1) {
		bool shared = (a && mergein_seek(&x, &s.cur.digest, &err)) ||
			      (!err && b && mergein_seek(&y, &s.cur.digest, &err));
		if (!shared)
			*bytes += s.cur.stored_len;
		if (!err)
			err = mergein_adv(&s);
	}
	if (failed) {
		memset(failed, 0, sizeof(*failed));
		const idxrd_t *in[3] = {&s.rd, &x.rd, &y.rd};
		for (int k = 0; err && k < 3; k++)
			if (idxrd_failed(in[k], &failed->ref)) {
				failed->input = k;
				break;
			}
	}
	idxrd_close(&s.rd);
	idxrd_close(&x.rd);
	idxrd_close(&y.rd);
	return err;
}
