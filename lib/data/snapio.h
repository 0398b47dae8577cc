/* snapio.h - reading and writing the chunked streams a snapshot is made of.
 *
 * A snapshot has two streams, each stored as FastCDC chunks whose packed
 * chunk_refs (its "roots") are kept in the catalog:
 *   tree   the tree stream (tree.h);
 *   index  every distinct chunk the snapshot reaches (content and tree
 *          chunks), sorted by digest: "CAIRNIDX" u32 version, then
 *          CHUNK_REF_WIRE-byte records in strictly increasing digest order.
 * The index lets GC, verify, send and the space statistics work from one
 * sequential read instead of parsing trees; sorted indexes merge in one
 * pass to give written/used.
 */
#ifndef CAIRN_SNAPIO_H
#define CAIRN_SNAPIO_H

#include "data/chunker.h"
#include "store/chunkstore.h"
#include "maint/refset.h"
#include "data/tree.h"

#define INDEX_MAGIC "CAIRNIDX"
#define INDEX_HEADER_LEN 12

/* Digests data, stores it, fills *out. */
int chunk_store_data(chunkstore_t *cs, const void *data, size_t len, int level,
		     chunk_ref_t *out, bool *was_new);
/* The same under an encryption root's keys k (keyed id, encrypted blob);
 * k NULL is chunk_store_data. */
int chunk_store_data_key(chunkstore_t *cs, const crypt_keys_t *k, const void *data, size_t len,
			 int level, chunk_ref_t *out, bool *was_new);
/* The id a chunk of data gets: HMAC(id key) with k, else SHA-256. */
int chunk_id(const crypt_keys_t *k, const void *data, size_t len, digest_t *out);

/* A FastCDC writer: bytes in, chunks stored, packed refs collected. */
typedef struct cdcw {
	chunkstore_t *cs;
	chunker_params_t p;
	int level;
	refset_t *set; /* when set, every chunk is also added here */
	const crypt_keys_t *key; /* encryption root's keys, or NULL (set after init) */
	/* When set (after init), chunks are not stored: each is encoded as a
	 * plain blob (blob.h) and handed to sink with its SHA-256 ref, as a
	 * decrypted send stream needs (key must be NULL then). */
	int (*sink)(void *arg, const chunk_ref_t *ref, const buf_t *blob);
	void *sink_arg;
	buf_t blob;
	buf_t pending;
	buf_t refs; /* packed chunk_refs of the stream, in order */
	uint64_t bytes, new_chunks, new_bytes;
} cdcw_t;

void cdcw_init(cdcw_t *w, chunkstore_t *cs, const chunker_params_t *p, int level, refset_t *set);
int cdcw_write(cdcw_t *w, const void *data, size_t len);
/* Stores the remaining bytes as the last chunk. */
int cdcw_finish(cdcw_t *w);
void cdcw_free(cdcw_t *w);

/* Reads the chunks of a root list in order. */
typedef struct metard {
	chunkstore_t *cs;
	const uint8_t *refs;
	size_t nrefs, next;
	buf_t chunk;
	chunk_ref_t failed; /* the chunk that could not be read */
	const crypt_keys_t *key; /* to decrypt with, or NULL (set after init) */
} metard_t;
void metard_init(metard_t *m, chunkstore_t *cs, const buf_t *roots);
/* 1 with *data and *len valid until the next call, 0 at the end, <0 error. */
int metard_next(metard_t *m, const uint8_t **data, size_t *len);
void metard_free(metard_t *m);

/* Entries of a tree stream, TREE_CONT records merged into their entry. */
typedef struct snaptree {
	metard_t m;
	tree_reader_t *rd;
	tree_entry_t look;
	bool have_look, eof;
} snaptree_t;
int snaptree_open(snaptree_t *t, chunkstore_t *cs, const buf_t *roots);
/* snaptree_open for an encrypted dataset's tree stream (k may be NULL). */
int snaptree_open_key(snaptree_t *t, chunkstore_t *cs, const crypt_keys_t *k, const buf_t *roots);
/* 1 and *e filled (caller clears), 0 at the end, <0 error. */
int snaptree_next(snaptree_t *t, tree_entry_t *e);
void snaptree_close(snaptree_t *t);

/* Refs of an index stream, in digest order. */
typedef struct idxrd {
	metard_t m;
	buf_t carry;
	size_t pos;
	bool header_done, eof;
	bool have_last;
	digest_t last;
} idxrd_t;
void idxrd_open(idxrd_t *x, chunkstore_t *cs, const buf_t *roots);
int idxrd_next(idxrd_t *x, chunk_ref_t *r);
void idxrd_close(idxrd_t *x);
/* After an error from idxrd_next: true, with the chunk in *failed, when
 * the error was reading one of the stream's chunks (damaged: CAIRN_ECORRUPT,
 * missing: -ENOENT, or the backend's error), false when it was the stream's
 * own format or memory. */
bool idxrd_failed(const idxrd_t *x, chunk_ref_t *failed);

/* Writes the sorted refs of set as an index stream; *roots gets its packed
 * root refs. */
int index_write(chunkstore_t *cs, const refset_t *set, buf_t *roots, uint64_t *referenced,
		uint64_t *logical);
/* The same stream handed chunk by chunk to sink (cdcw_t.sink) instead of
 * stored: the index of a decrypted send. */
int index_write_sink(const refset_t *set, int (*sink)(void *, const chunk_ref_t *, const buf_t *),
		     void *arg, buf_t *roots);

/* A chunk an index merge could not read, and which input's it is. */
typedef struct idxfail {
	chunk_ref_t ref; /* plain_len 0: no chunk read failed */
	int input;       /* 0 self, 1 a, 2 b */
} idxfail_t;

/* Space accounting by merging sorted indexes.  Any of the inputs may be
 * NULL (no such neighbour).  Returns the stored bytes of chunks in `self`
 * that are in neither a nor b.  failed (may be NULL) is zeroed, and on an
 * error set as by idxrd_failed for the reader that failed. */
int index_unique_bytes(chunkstore_t *cs, const buf_t *self, const buf_t *a, const buf_t *b,
		       uint64_t *bytes, idxfail_t *failed);

#endif
