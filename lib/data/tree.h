/* tree.h - the tree stream: a snapshot's directory tree as a byte stream.
 *
 * The stream is a header followed by records, one per filesystem object,
 * in traversal order (see tree_path_cmp).  The stream is stored through
 * FastCDC like file content, so unchanged runs of a tree deduplicate
 * across snapshots.  It is parsed from untrusted bytes (received streams),
 * so the reader bounds every length before it allocates.
 *
 * Wire format (all integers little-endian):
 *   header:  "CAIRNTRE" (8 bytes), u32 version (1)
 *   record:  u32 body_len (<= TREE_MAX_RECORD), then body_len bytes:
 *     u8  type (enum tree_type)
 *     u16 path_len, path bytes (no NUL, no leading '/', no "." or ".."
 *         component, no empty component; "" only for the root entry)
 *     u32 mode, u32 uid, u32 gid
 *     i64 atime_ns, i64 mtime_ns, i64 ctime_ns
 *     u64 size, u64 ino, u64 dev, u64 rdev, u32 nlink
 *     u16 link_len, link bytes   (symlink target / hardlink target path)
 *     u16 nxattr, then per xattr: u8 name_len (>0), name, u32 value_len
 *         (<= TREE_MAX_XATTR_VALUE), value
 *     u8  content (enum tree_content)
 *     content TREE_CONTENT_EXTENTS: u32 nextent, then per extent:
 *         u8 kind; CHUNK: CHUNK_REF_WIRE bytes (chunk_ref_pack);
 *                  HOLE:  u64 length
 *     content TREE_CONTENT_BUNDLE: CHUNK_REF_WIRE bytes, u32 offset
 *         (offset + size <= bundle plain_len)
 *   A TREE_CONT record continues the extent list of the previous REG entry
 *   (files with more than TREE_MAX_EXTENTS extents): its body is
 *     u8 type (TREE_CONT), u8 content (EXTENTS), u32 nextent, extents.
 * The body must be consumed exactly: trailing bytes are corruption.
 */
#ifndef CAIRN_TREE_H
#define CAIRN_TREE_H

#include "util.h"
#include <sys/stat.h>

#define TREE_MAGIC "CAIRNTRE"
#define TREE_HEADER_LEN 12
#define TREE_VERSION 1
#define TREE_MAX_RECORD (4u << 20)
#define TREE_MAX_PATH 4096
#define TREE_MAX_XATTR_VALUE (64u << 10)
#define TREE_MAX_EXTENTS 65536 /* per record; more go in TREE_CONT records */
/* A full record's stat fields (u32 mode .. u32 nlink) after the path: their
 * length, and the offsets of ino and nlink in them (for readers that peek
 * at a record without decoding it). */
#define TREE_STAT_LEN (12 + 24 + 32 + 4)
#define TREE_STAT_INO 44
#define TREE_STAT_NLINK 68

enum tree_type {
	TREE_REG = 1,
	TREE_DIR = 2,
	TREE_SYMLINK = 3,
	TREE_HARDLINK = 4, /* link = path of the first entry of this inode */
	TREE_CHR = 5,
	TREE_BLK = 6,
	TREE_FIFO = 7,
	TREE_SOCK = 8,
	TREE_CONT = 9, /* continuation of the previous entry's extents */
};

enum tree_content {
	TREE_CONTENT_NONE = 0,
	TREE_CONTENT_EXTENTS = 1,
	TREE_CONTENT_BUNDLE = 2,
};

enum tree_extent_kind {
	TREE_EXT_CHUNK = 1,
	TREE_EXT_HOLE = 2,
};

typedef struct tree_extent {
	uint8_t kind;    /* enum tree_extent_kind */
	uint64_t length; /* plain bytes covered; == ref.plain_len for a chunk */
	chunk_ref_t ref; /* TREE_EXT_CHUNK only */
} tree_extent_t;

typedef struct tree_xattr {
	char *name;      /* NUL-terminated */
	uint8_t *value;
	uint32_t len;
} tree_xattr_t;

/* One entry.  All pointers are owned by the entry (tree_entry_clear frees
 * them).  path and link are NUL-terminated. */
typedef struct tree_entry {
	uint8_t type;
	char *path;
	uint32_t mode, uid, gid;
	int64_t atime_ns, mtime_ns, ctime_ns;
	uint64_t size, ino, dev, rdev;
	uint32_t nlink;
	char *link;
	uint16_t nxattr;
	tree_xattr_t *xattrs;
	uint8_t content;
	uint32_t nextent;
	tree_extent_t *extents;
	chunk_ref_t bundle;     /* TREE_CONTENT_BUNDLE */
	uint32_t bundle_off;    /* the file is bundle[off .. off+size) */
} tree_entry_t;

/* Decoded entries: path is never NULL ("" for the root) except in a
 * TREE_CONT entry, where it is NULL; link, xattrs, extents and xattr
 * values are NULL when empty.  The writer reads a NULL path or link as "".
 * Beyond the format, both writer and reader require: link non-empty for
 * TREE_SYMLINK, a valid non-empty path (tree_path_check) for
 * TREE_HARDLINK, and empty for every other type; content other than NONE
 * only on TREE_REG (EXTENTS on TREE_CONT); chunk extents with
 * length == ref.plain_len in 1..CHUNK_MAX_PLAIN, holes with length > 0,
 * one record's extents summing to <= size; a bundle plain_len in
 * 1..CHUNK_MAX_PLAIN. */

/* Frees what e owns and zeroes it; NULL is allowed. */
void tree_entry_clear(tree_entry_t *e);

/* Fills E's metadata and type from ST (no name, target, xattrs or chunks);
 * atime is left 0, as backups record it. */
void tree_entry_from_stat(tree_entry_t *e, const struct stat *st);

/* Deep copy; returns 0 or -ENOMEM. */
int tree_entry_copy(tree_entry_t *dst, const tree_entry_t *src);

/* True when a and b encode to the same record (fields the record does not
 * carry, like a hole's ref or a NONE entry's extents, are ignored). */
bool tree_entry_equal(const tree_entry_t *a, const tree_entry_t *b);
/* Whether a and b hold the same size, xattrs and content (the same chunk
 * references: the same bytes, though the same bytes can also sit in
 * another bundle). */
bool tree_same_data(const tree_entry_t *a, const tree_entry_t *b);

/* Appends the stream header to out. */
int tree_write_header(buf_t *out);

/* Appends one record for e to out.  Returns 0, -ENOMEM, or -EINVAL when e
 * breaks a limit above (path too long, too many extents in one record...). */
int tree_write_entry(buf_t *out, const tree_entry_t *e);

/* Incremental reader: feed bytes in any pieces, pull entries. */
typedef struct tree_reader tree_reader_t;
int tree_reader_new(tree_reader_t **out);
void tree_reader_free(tree_reader_t *r);
int tree_reader_feed(tree_reader_t *r, const void *data, size_t len);
/* Returns 1 and fills e (which the caller clears) when a whole record is
 * available; 0 when more bytes are needed; CAIRN_ECORRUPT on a malformed
 * header or record (the reader is then unusable).  e is written only when
 * 1 is returned.  -ENOMEM leaves the record buffered for a retry.  An
 * unknown header version is also CAIRN_ECORRUPT.  feed() on an unusable
 * reader returns CAIRN_ECORRUPT. */
int tree_reader_next(tree_reader_t *r, tree_entry_t *e);
/* At end of stream: 0 if no partial record is left, else CAIRN_ECORRUPT.
 * A stream without a complete header is corrupt; so are whole records fed
 * but never pulled with tree_reader_next(). */
int tree_reader_end(tree_reader_t *r);

/* Orders paths as a depth-first walk that visits each directory's entries
 * sorted bytewise: component by component, so "a/b" < "a.b" (a '/' ends a
 * component and sorts before every byte).  <0, 0, >0 like strcmp. */
int tree_path_cmp(const char *a, const char *b);

/* Checks a relative path from untrusted input: no leading or trailing '/',
 * no empty, "." or ".." component, no NUL, at most TREE_MAX_PATH bytes.
 * "" is valid (the root).  Returns 0 or CAIRN_ECORRUPT. */
int tree_path_check(const char *p, size_t len);

#endif
