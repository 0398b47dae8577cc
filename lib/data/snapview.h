/* snapview.h - a snapshot's tree held in memory for browsing (cairn mount),
 * and a bounded, shared cache of decoded chunks for reading file content.
 *
 * Nothing here depends on FUSE: the mount command (cli/fusefs.c) maps its
 * operations onto these calls.  A view is immutable once loaded, so any
 * number of threads may use it; the chunk cache has its own lock and
 * decodes each chunk once even when several readers want it at the same
 * time, and a read-ahead thread decodes the next chunk of a file while the
 * reader consumes the current one.
 */
#ifndef CAIRN_SNAPVIEW_H
#define CAIRN_SNAPVIEW_H

#include "data/snapio.h"

#define SV_NONE UINT32_MAX

typedef struct sv_node {
	tree_entry_t e;        /* as recorded; e.path is the full path */
	const char *name;      /* last component of e.path ("" for the root) */
	uint32_t parent, first_child, next_sibling;
	uint32_t target;       /* TREE_HARDLINK: the node of its inode's first name; else itself */
	uint64_t *ext_off;     /* start offset of each extent (NULL when none) */
	uint64_t blocks;       /* 512-byte blocks holding data (holes excluded) */
} sv_node_t;

typedef struct snapview {
	sv_node_t *n;
	uint32_t count;
	uint32_t *hash; /* path -> node index, open addressing; SV_NONE = empty */
	uint32_t hcap;
	const crypt_keys_t *key; /* the dataset's keys (not owned), or NULL */
} snapview_t;

/* Reads a tree stream (roots) into a view; key (kept by the caller for the
 * view's life) decrypts an encrypted dataset's chunks.  Returns 0,
 * -ENOMEM, or the chunk read error (CAIRN_ECORRUPT, -ENOENT,
 * CAIRN_ENOKEY) with *failed set. */
int snapview_load(chunkstore_t *cs, const crypt_keys_t *key, const buf_t *roots,
		  snapview_t **out, chunk_ref_t *failed);
void snapview_free(snapview_t *v);

/* The node of a path relative to the snapshot root ("" = the root), or
 * SV_NONE. */
uint32_t snapview_lookup(const snapview_t *v, const char *path);

typedef struct chunkcache chunkcache_t;

/* A cache of at most cap_bytes of decoded chunks (plus the ones in use). */
int chunkcache_new(chunkstore_t *cs, size_t cap_bytes, chunkcache_t **out);
void chunkcache_free(chunkcache_t *c);

/* Reads up to size bytes of node idx's content at off into buf (holes read
 * as zeros).  Returns the byte count (0 at or past the end) or <0. */
ssize_t snapview_read(const snapview_t *v, chunkcache_t *c, uint32_t idx, void *buf,
		      size_t size, uint64_t off);

/* SEEK_DATA / SEEK_HOLE over node idx's extents: the offset, or -ENXIO. */
int64_t snapview_seek(const snapview_t *v, uint32_t idx, uint64_t off, int whence);

/* Chunk cache counters, for tests and -v. */
void chunkcache_stats(chunkcache_t *c, uint64_t *decoded, uint64_t *hits);

#endif
