/* plainsend.h - a decrypted view of an encrypted dataset's snapshots, for
 * plain (not raw) send streams.
 *
 * In an encryption root every chunk is an encrypted blob named by its
 * keyed id HMAC(id key, plain), and the tree stream is encrypted too.  A
 * plain stream must look exactly like one from an unencrypted dataset
 * holding the same chunks: plain blobs named by SHA-256, a plain tree
 * stream whose extents name those SHA-256 ids, and an index listing them.
 * This layer produces that form on the fly, without writing anything to
 * the store (nothing decrypted ever lands there):
 *   - plainsend_snapshot() reads the snapshot's encrypted tree stream
 *     through the key, renames every chunk reference from its keyed id to
 *     its SHA-256 (decrypting each distinct data chunk once per stream and
 *     remembering the pair), and re-cuts the tree and index streams as an
 *     unencrypted dataset would (plain gear table, same levels).  Their
 *     chunks go to a sink, or nowhere when only the roots are wanted;
 *   - plainsend_lookup()/plainsend_blob() give the plain id and the plain
 *     blob of a data chunk named by its keyed id.
 * Memory: the keyed-to-plain map (72 bytes per distinct data chunk of the
 * stream) and one snapshot's set of refs, as a backup holds; never chunk
 * contents beyond the one in hand.
 */
#ifndef CAIRN_PLAINSEND_H
#define CAIRN_PLAINSEND_H

#include "data/snapio.h"

typedef struct plainsend plainsend_t;

/* Chunk sink: ref names a plain blob (blob.h version 1) of blob->len bytes. */
typedef int (*plainsend_fn)(void *arg, const chunk_ref_t *ref, const buf_t *blob);

/* A translator for datasets encrypted with k (not owned; must outlive
 * it).  level is the zstd level of the data and tree chunks (the dataset's
 * compression).  Returns 0 or -ENOMEM. */
int plainsend_new(chunkstore_t *cs, const crypt_keys_t *k, int level, plainsend_t **out);
void plainsend_free(plainsend_t *ps);

/* Translates the snapshot whose encrypted tree stream has root list
 * keyed_tree: *tree and *idx get the root lists of its plain tree and
 * index streams.  With fn set, every chunk of those two streams is handed
 * to fn (tree chunks first, in stream order, then index chunks); with fn
 * NULL they are only computed.  Returns 0, an error of fn, or the chunk
 * read error (-ENOENT, CAIRN_ECORRUPT, -ENOMEM) with *failed naming the
 * keyed chunk. */
int plainsend_snapshot(plainsend_t *ps, const buf_t *keyed_tree, plainsend_fn fn, void *arg,
		       buf_t *tree, buf_t *idx, chunk_ref_t *failed);

/* The plain ref of the data chunk with keyed id d: 1 and *ref filled when
 * a translated snapshot referenced it, 0 when not (a chunk of an
 * encrypted tree stream, which a plain stream never carries). */
int plainsend_lookup(const plainsend_t *ps, const digest_t *d, chunk_ref_t *ref);

/* The plain blob of the data chunk with keyed id d, into blob.  Returns
 * 0, -ENOENT, CAIRN_ECORRUPT (failed tag or id), -ENOMEM. */
int plainsend_blob(plainsend_t *ps, const digest_t *d, buf_t *blob);

#endif
