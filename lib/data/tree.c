/* tree.c - encoding and incremental decoding of tree streams.
 *
 * The writer and the reader share one validator (entry_valid) so that
 * everything the writer accepts decodes, and everything that decodes
 * re-encodes to the same bytes: the encoding is canonical.
 */
#include "data/tree.h"

#include <errno.h>
#include <stdlib.h>

#define BAD CAIRN_ECORRUPT

/* Body bytes of a non-continuation record with empty strings, no xattrs
 * and no content: type, path_len, mode/uid/gid, three times, size/ino/
 * dev/rdev, nlink, link_len, nxattr, content. */
#define FIXED_BODY (1 + 2 + 12 + 24 + 32 + 4 + 2 + 2 + 1)
/* The fixed-width run between the path and link_len. */
#define CONT_BODY (1 + 1 + 4)
#define EXT_CHUNK_WIRE (1 + CHUNK_REF_WIRE)
#define EXT_HOLE_WIRE (1 + 8)
#define EXT_MIN_WIRE EXT_HOLE_WIRE
#define XATTR_MIN_WIRE (1 + 1 + 4)
#define BUNDLE_WIRE (CHUNK_REF_WIRE + 4)

/* ---------------------------------------------------------------------
 * paths
 * ------------------------------------------------------------------- */

/* A '/' ranks just above the end of the string and below every other
 * byte, which turns a bytewise walk into a component-wise comparison. */
static inline int path_rank(unsigned char c)
{
	return c == '/' ? 1 : c == 0 ? 0 : c + 1;
}

int tree_path_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a;
	const unsigned char *y = (const unsigned char *)b;
	while (*x == *y) {
		if (!*x)
			return 0;
		x++;
		y++;
	}
	return path_rank(*x) - path_rank(*y);
}

static bool component_ok(const char *s, size_t n)
{
	if (n == 0)
		return false; /* leading, trailing or doubled '/' */
	if (s[0] != '.')
		return true;
	return !(n == 1 || (n == 2 && s[1] == '.'));
}

int tree_path_check(const char *p, size_t len)
{
	if (len > TREE_MAX_PATH)
		return BAD;
	if (len == 0)
		return 0;
	if (memchr(p, 0, len))
		return BAD;
	const char *s = p, *end = p + len;
	for (;;) {
		const char *slash = memchr(s, '/', end - s);
		const char *ce = slash ? slash : end;
		if (!component_ok(s, ce - s))
			return BAD;
		if (!slash)
			return 0;
		s = slash + 1;
	}
}

/* ---------------------------------------------------------------------
 * entries
 * ------------------------------------------------------------------- */

void tree_entry_from_stat(tree_entry_t *e, const struct stat *st)
{
	e->mode = st->st_mode & 07777;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	/* atime is not recorded (0): every read of a file would change it and
	 * stop the tree stream from deduplicating.  Restore uses mtime.  Backup
	 * and diff's view of the live tree both come through here, so they
	 * agree on what a file looks like. */
	e->atime_ns = 0;
	e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	e->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
	e->size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
	e->ino = st->st_ino;
	e->dev = st->st_dev;
	e->rdev = st->st_rdev;
	e->nlink = st->st_nlink;
	switch (st->st_mode & S_IFMT) {
	case S_IFREG: e->type = TREE_REG; break;
	case S_IFDIR: e->type = TREE_DIR; break;
	case S_IFLNK: e->type = TREE_SYMLINK; break;
	case S_IFCHR: e->type = TREE_CHR; break;
	case S_IFBLK: e->type = TREE_BLK; break;
	case S_IFIFO: e->type = TREE_FIFO; break;
	default: e->type = TREE_SOCK; break;
	}
}

void tree_entry_clear(tree_entry_t *e)
{
	if (!e)
		return;
	free(e->path);
	free(e->link);
	for (uint32_t i = 0; e->xattrs && i < e->nxattr; i++) {
		free(e->xattrs[i].name);
		free(e->xattrs[i].value);
	}
	free(e->xattrs);
	free(e->extents);
	memset(e, 0, sizeof(*e));
}

static int dup_mem(void **dst, const void *src, size_t len)
{
	*dst = NULL;
	if (!src || !len)
		return 0;
	*dst = malloc(len);
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, len);
	return 0;
}

static int dup_str(char **dst, const char *src)
{
	return dup_mem((void **)dst, src, src ? strlen(src) + 1 : 0);
}

static int copy_xattrs(tree_entry_t *dst, const tree_entry_t *src)
{
	dst->xattrs = NULL;
	if (!src->xattrs || !src->nxattr)
		return 0;
	dst->xattrs = calloc(src->nxattr, sizeof(*dst->xattrs));
	if (!dst->xattrs)
		return -ENOMEM;
	for (uint32_t i = 0; i < src->nxattr; i++) {
		const tree_xattr_t *s = &src->xattrs[i];
		tree_xattr_t *d = &dst->xattrs[i];
		d->len = s->len;
		if (dup_str(&d->name, s->name) < 0 ||
		    dup_mem((void **)&d->value, s->value, s->len) < 0)
			return -ENOMEM;
	}
	return 0;
}

int tree_entry_copy(tree_entry_t *dst, const tree_entry_t *src)
{
	*dst = *src;
	/* Nothing of src's may stay in dst, or a failed copy would free it. */
	dst->path = dst->link = NULL;
	dst->xattrs = NULL;
	dst->extents = NULL;
	int r = dup_str(&dst->path, src->path);
	if (!r)
		r = dup_str(&dst->link, src->link);
	if (!r)
		r = dup_mem((void **)&dst->extents, src->extents,
			    (size_t)src->nextent * sizeof(*src->extents));
	if (!r)
		r = copy_xattrs(dst, src);
	if (r < 0)
		tree_entry_clear(dst);
	return r;
}

static bool ref_equal(const chunk_ref_t *a, const chunk_ref_t *b)
{
	return !digest_cmp(&a->digest, &b->digest) && a->plain_len == b->plain_len &&
	       a->stored_len == b->stored_len;
}

static bool extents_equal(const tree_entry_t *a, const tree_entry_t *b)
{
	if (a->nextent != b->nextent)
		return false;
	for (uint32_t i = 0; i < a->nextent; i++) {
		const tree_extent_t *x = &a->extents[i], *y = &b->extents[i];
		if (x->kind != y->kind)
			return false;
		if (x->kind == TREE_EXT_CHUNK ? !ref_equal(&x->ref, &y->ref)
					      : x->length != y->length)
			return false;
	}
	return true;
}

static bool str_equal(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

static bool xattrs_equal(const tree_entry_t *a, const tree_entry_t *b)
{
	if (a->nxattr != b->nxattr)
		return false;
	for (uint32_t i = 0; i < a->nxattr; i++) {
		const tree_xattr_t *x = &a->xattrs[i], *y = &b->xattrs[i];
		if (!str_equal(x->name, y->name) || x->len != y->len ||
		    (x->len && memcmp(x->value, y->value, x->len)))
			return false;
	}
	return true;
}

static bool content_equal(const tree_entry_t *a, const tree_entry_t *b)
{
	if (a->content != b->content)
		return false;
	if (a->content == TREE_CONTENT_EXTENTS)
		return extents_equal(a, b);
	if (a->content == TREE_CONTENT_BUNDLE)
		return ref_equal(&a->bundle, &b->bundle) && a->bundle_off == b->bundle_off;
	return true;
}

bool tree_same_data(const tree_entry_t *a, const tree_entry_t *b)
{
	return a->size == b->size && xattrs_equal(a, b) && content_equal(a, b);
}

bool tree_entry_equal(const tree_entry_t *a, const tree_entry_t *b)
{
	if (a->type != b->type)
		return false;
	if (a->type == TREE_CONT)
		return content_equal(a, b);
	return str_equal(a->path, b->path) && a->mode == b->mode && a->uid == b->uid &&
	       a->gid == b->gid && a->atime_ns == b->atime_ns &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns &&
	       a->size == b->size && a->ino == b->ino && a->dev == b->dev &&
	       a->rdev == b->rdev && a->nlink == b->nlink && str_equal(a->link, b->link) &&
	       xattrs_equal(a, b) && content_equal(a, b);
}

/* ---------------------------------------------------------------------
 * validation shared by writer and reader
 * ------------------------------------------------------------------- */

static bool extent_valid(const tree_extent_t *x)
{
	if (x->kind == TREE_EXT_CHUNK)
		return x->ref.plain_len >= 1 && x->ref.plain_len <= CHUNK_MAX_PLAIN &&
		       x->length == x->ref.plain_len;
	if (x->kind == TREE_EXT_HOLE)
		return x->length > 0;
	return false;
}

/* *sum gets the bytes the extents cover; false on a bad extent or when the
 * sum does not fit (no file is that large). */
static bool extents_valid(const tree_entry_t *e, uint64_t *sum)
{
	if (e->nextent > TREE_MAX_EXTENTS || (e->nextent && !e->extents))
		return false;
	uint64_t total = 0;
	for (uint32_t i = 0; i < e->nextent; i++) {
		const tree_extent_t *x = &e->extents[i];
		if (!extent_valid(x) || x->length > UINT64_MAX - total)
			return false;
		total += x->length;
	}
	*sum = total;
	return true;
}

static bool content_valid(const tree_entry_t *e)
{
	uint64_t sum;
	switch (e->content) {
	case TREE_CONTENT_NONE:
		return true;
	case TREE_CONTENT_EXTENTS:
		/* A continued file's extents only add up to size over all of its
		 * records, so one record may cover less. */
		return e->type == TREE_REG && extents_valid(e, &sum) && sum <= e->size;
	case TREE_CONTENT_BUNDLE: {
		uint32_t plen = e->bundle.plain_len;
		return e->type == TREE_REG && plen >= 1 && plen <= CHUNK_MAX_PLAIN &&
		       e->size <= plen && e->bundle_off <= plen - e->size;
	}
	default:
		return false;
	}
}

static bool link_valid(const tree_entry_t *e, size_t link_len)
{
	if (link_len > UINT16_MAX)
		return false;
	if (e->type == TREE_SYMLINK)
		return link_len > 0;
	/* Restore joins a hardlink target to its destination directory, so it
	 * must be as tame as any entry path. */
	if (e->type == TREE_HARDLINK)
		return link_len > 0 && !tree_path_check(e->link, link_len);
	return link_len == 0;
}

static bool xattrs_valid(const tree_entry_t *e)
{
	if (e->nxattr && !e->xattrs)
		return false;
	for (uint32_t i = 0; i < e->nxattr; i++) {
		const tree_xattr_t *x = &e->xattrs[i];
		size_t n = x->name ? strlen(x->name) : 0;
		if (n == 0 || n > UINT8_MAX || x->len > TREE_MAX_XATTR_VALUE ||
		    (x->len && !x->value))
			return false;
	}
	return true;
}

/* path_len and link_len are the string lengths (the reader has already
 * refused NUL bytes inside them, so they equal strlen). */
static bool entry_valid(const tree_entry_t *e, size_t path_len, size_t link_len)
{
	if (e->type == TREE_CONT) {
		uint64_t sum;
		return e->content == TREE_CONTENT_EXTENTS && extents_valid(e, &sum);
	}
	if (e->type < TREE_REG || e->type > TREE_SOCK)
		return false;
	if (tree_path_check(e->path ? e->path : "", path_len))
		return false;
	if (path_len == 0 && e->type != TREE_DIR && e->type != TREE_REG)
		return false;
	return link_valid(e, link_len) && xattrs_valid(e) && content_valid(e);
}

/* ---------------------------------------------------------------------
 * writer
 * ------------------------------------------------------------------- */

int tree_write_header(buf_t *out)
{
	uint8_t h[TREE_HEADER_LEN];
	memcpy(h, TREE_MAGIC, 8);
	put_u32(h + 8, TREE_VERSION);
	return buf_append(out, h, sizeof(h));
}

static size_t extents_wire(const tree_entry_t *e)
{
	size_t n = 4;
	for (uint32_t i = 0; i < e->nextent; i++)
		n += e->extents[i].kind == TREE_EXT_CHUNK ? EXT_CHUNK_WIRE : EXT_HOLE_WIRE;
	return n;
}

/* Body length of a valid entry; may exceed TREE_MAX_RECORD. */
static size_t body_wire(const tree_entry_t *e, size_t path_len, size_t link_len)
{
	if (e->type == TREE_CONT)
		return 2 + extents_wire(e);
	size_t n = FIXED_BODY + path_len + link_len;
	for (uint32_t i = 0; i < e->nxattr; i++)
		n += 1 + strlen(e->xattrs[i].name) + 4 + e->xattrs[i].len;
	if (e->content == TREE_CONTENT_EXTENTS)
		n += extents_wire(e);
	else if (e->content == TREE_CONTENT_BUNDLE)
		n += BUNDLE_WIRE;
	return n;
}

static inline uint8_t *w8(uint8_t *p, uint8_t v)
{
	*p = v;
	return p + 1;
}
static inline uint8_t *w16(uint8_t *p, uint16_t v)
{
	put_u16(p, v);
	return p + 2;
}
static inline uint8_t *w32(uint8_t *p, uint32_t v)
{
	put_u32(p, v);
	return p + 4;
}
static inline uint8_t *w64(uint8_t *p, uint64_t v)
{
	put_u64(p, v);
	return p + 8;
}
static inline uint8_t *wmem(uint8_t *p, const void *s, size_t n)
{
	if (n)
		memcpy(p, s, n);
	return p + n;
}

static uint8_t *write_extents(uint8_t *p, const tree_entry_t *e)
{
	p = w32(p, e->nextent);
	for (uint32_t i = 0; i < e->nextent; i++) {
		const tree_extent_t *x = &e->extents[i];
		p = w8(p, x->kind);
		if (x->kind == TREE_EXT_CHUNK) {
			chunk_ref_pack(&x->ref, p);
			p += CHUNK_REF_WIRE;
		} else {
			p = w64(p, x->length);
		}
	}
	return p;
}

static uint8_t *write_xattrs(uint8_t *p, const tree_entry_t *e)
{
	p = w16(p, e->nxattr);
	for (uint32_t i = 0; i < e->nxattr; i++) {
		const tree_xattr_t *x = &e->xattrs[i];
		size_t n = strlen(x->name);
		p = w8(p, n);
		p = wmem(p, x->name, n);
		p = w32(p, x->len);
		p = wmem(p, x->value, x->len);
	}
	return p;
}

static uint8_t *write_body(uint8_t *p, const tree_entry_t *e, size_t path_len,
			   size_t link_len)
{
	p = w8(p, e->type);
	if (e->type == TREE_CONT) {
		p = w8(p, e->content);
		return write_extents(p, e);
	}
	p = w16(p, path_len);
	p = wmem(p, e->path, path_len);
	p = w32(p, e->mode);
	p = w32(p, e->uid);
	p = w32(p, e->gid);
	p = w64(p, e->atime_ns);
	p = w64(p, e->mtime_ns);
	p = w64(p, e->ctime_ns);
	p = w64(p, e->size);
	p = w64(p, e->ino);
	p = w64(p, e->dev);
	p = w64(p, e->rdev);
	p = w32(p, e->nlink);
	p = w16(p, link_len);
	p = wmem(p, e->link, link_len);
	p = write_xattrs(p, e);
	p = w8(p, e->content);
	if (e->content == TREE_CONTENT_EXTENTS)
		return write_extents(p, e);
	if (e->content == TREE_CONTENT_BUNDLE) {
		chunk_ref_pack(&e->bundle, p);
		p += CHUNK_REF_WIRE;
		p = w32(p, e->bundle_off);
	}
	return p;
}

int tree_write_entry(buf_t *out, const tree_entry_t *e)
{
	bool cont = e->type == TREE_CONT;
	size_t path_len = !cont && e->path ? strnlen(e->path, TREE_MAX_PATH + 1) : 0;
	size_t link_len = !cont && e->link ? strnlen(e->link, UINT16_MAX + 1) : 0;
	if (!entry_valid(e, path_len, link_len))
		return -EINVAL;
	size_t body = body_wire(e, path_len, link_len);
	if (body > TREE_MAX_RECORD)
		return -EINVAL;
	int r = buf_reserve(out, 4 + body);
	if (r < 0)
		return r;
	uint8_t *p = out->data + out->len;
	p = w32(p, body);
	write_body(p, e, path_len, link_len);
	out->len += 4 + body;
	return 0;
}

/* ---------------------------------------------------------------------
 * reader
 * ------------------------------------------------------------------- */

struct tree_reader {
	uint8_t *buf;
	size_t off; /* start of the first unparsed byte */
	size_t len; /* end of the buffered bytes */
	size_t cap;
	bool header_ok;
	int err; /* sticky: once corrupt, always corrupt */
};

int tree_reader_new(tree_reader_t **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void tree_reader_free(tree_reader_t *r)
{
	if (!r)
		return;
	free(r->buf);
	free(r);
}

/* Makes room for n more bytes.  Unparsed bytes move to the front only when
 * they are no more than the consumed bytes they replace, so every byte is
 * moved O(1) times on average however the input is split. */
static int reader_room(tree_reader_t *r, size_t n)
{
	size_t pending = r->len - r->off;
	if (r->cap - r->len >= n)
		return 0;
	if (r->off && r->off >= pending && r->cap - pending >= n) {
		memmove(r->buf, r->buf + r->off, pending);
		r->off = 0;
		r->len = pending;
		return 0;
	}
	if (n > SIZE_MAX / 2 - pending)
		return -ENOMEM;
	size_t cap = r->cap ? r->cap : 4096;
	while (cap < pending + n)
		cap *= 2;
	if (r->off) {
		/* Growing anyway: drop the consumed prefix in the same copy. */
		uint8_t *nb = malloc(cap);
		if (!nb)
			return -ENOMEM;
		memcpy(nb, r->buf + r->off, pending);
		free(r->buf);
		r->buf = nb;
	} else {
		uint8_t *nb = realloc(r->buf, cap);
		if (!nb)
			return -ENOMEM;
		r->buf = nb;
	}
	r->cap = cap;
	r->off = 0;
	r->len = pending;
	return 0;
}

int tree_reader_feed(tree_reader_t *r, const void *data, size_t len)
{
	if (r->err)
		return r->err;
	if (!len)
		return 0;
	if (r->off == r->len)
		r->off = r->len = 0;
	int rc = reader_room(r, len);
	if (rc < 0)
		return rc;
	memcpy(r->buf + r->len, data, len);
	r->len += len;
	return 0;
}

static int reader_fail(tree_reader_t *r)
{
	r->err = BAD;
	free(r->buf);
	r->buf = NULL;
	r->off = r->len = r->cap = 0;
	return BAD;
}

/* Bounds-checked view of one record body. */
typedef struct cursor {
	const uint8_t *p;
	const uint8_t *end;
} cursor_t;

static inline size_t cur_left(const cursor_t *c)
{
	return c->end - c->p;
}

static inline const uint8_t *cur_take(cursor_t *c, size_t n)
{
	if (cur_left(c) < n)
		return NULL;
	const uint8_t *p = c->p;
	c->p += n;
	return p;
}

static inline int cur_u8(cursor_t *c, uint8_t *v)
{
	const uint8_t *p = cur_take(c, 1);
	if (!p)
		return BAD;
	*v = *p;
	return 0;
}

static inline int cur_u16(cursor_t *c, uint16_t *v)
{
	const uint8_t *p = cur_take(c, 2);
	if (!p)
		return BAD;
	*v = get_u16(p);
	return 0;
}

static inline int cur_u32(cursor_t *c, uint32_t *v)
{
	const uint8_t *p = cur_take(c, 4);
	if (!p)
		return BAD;
	*v = get_u32(p);
	return 0;
}

/* A NUL-terminated copy of the next len bytes, NULL when len is 0. */
static int cur_str(cursor_t *c, size_t len, char **out)
{
	const uint8_t *p = cur_take(c, len);
	if (!p || memchr(p, 0, len))
		return BAD;
	if (!len)
		return 0;
	char *s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, p, len);
	s[len] = 0;
	*out = s;
	return 0;
}

static int parse_extents(cursor_t *c, tree_entry_t *e)
{
	uint32_t n;
	int r = cur_u32(c, &n);
	if (r)
		return r;
	if (n > TREE_MAX_EXTENTS || (size_t)n * EXT_MIN_WIRE > cur_left(c))
		return BAD;
	if (!n)
		return 0;
	e->extents = malloc((size_t)n * sizeof(*e->extents));
	if (!e->extents)
		return -ENOMEM;
	e->nextent = n;
	for (uint32_t i = 0; i < n; i++) {
		tree_extent_t *x = &e->extents[i];
		const uint8_t *p;
		memset(x, 0, sizeof(*x));
		if ((r = cur_u8(c, &x->kind)))
			return r;
		if (x->kind == TREE_EXT_CHUNK) {
			if (!(p = cur_take(c, CHUNK_REF_WIRE)))
				return BAD;
			chunk_ref_unpack(p, &x->ref);
			x->length = x->ref.plain_len;
		} else if (x->kind == TREE_EXT_HOLE) {
			if (!(p = cur_take(c, 8)))
				return BAD;
			x->length = get_u64(p);
		} else {
			return BAD;
		}
	}
	return 0;
}

static int parse_content(cursor_t *c, tree_entry_t *e)
{
	int r = cur_u8(c, &e->content);
	if (r)
		return r;
	if (e->content == TREE_CONTENT_EXTENTS)
		return parse_extents(c, e);
	if (e->content == TREE_CONTENT_BUNDLE) {
		const uint8_t *p = cur_take(c, BUNDLE_WIRE);
		if (!p)
			return BAD;
		chunk_ref_unpack(p, &e->bundle);
		e->bundle_off = get_u32(p + CHUNK_REF_WIRE);
	}
	return 0; /* other values fail validation later */
}

static int parse_xattr(cursor_t *c, tree_xattr_t *x)
{
	uint8_t nlen;
	int r = cur_u8(c, &nlen);
	if (r)
		return r;
	if (!nlen)
		return BAD;
	if ((r = cur_str(c, nlen, &x->name)) || (r = cur_u32(c, &x->len)))
		return r;
	if (x->len > TREE_MAX_XATTR_VALUE || x->len > cur_left(c))
		return BAD;
	if (!x->len)
		return 0;
	if (!(x->value = malloc(x->len)))
		return -ENOMEM;
	memcpy(x->value, cur_take(c, x->len), x->len);
	return 0;
}

static int parse_xattrs(cursor_t *c, tree_entry_t *e)
{
	uint16_t n;
	int r = cur_u16(c, &n);
	if (r)
		return r;
	if ((size_t)n * XATTR_MIN_WIRE > cur_left(c))
		return BAD;
	if (!n)
		return 0;
	e->xattrs = calloc(n, sizeof(*e->xattrs));
	if (!e->xattrs)
		return -ENOMEM;
	e->nxattr = n;
	for (uint32_t i = 0; i < n; i++)
		if ((r = parse_xattr(c, &e->xattrs[i])))
			return r;
	return 0;
}

static void parse_stat(const uint8_t *p, tree_entry_t *e)
{
	e->mode = get_u32(p);
	e->uid = get_u32(p + 4);
	e->gid = get_u32(p + 8);
	e->atime_ns = (int64_t)get_u64(p + 12);
	e->mtime_ns = (int64_t)get_u64(p + 20);
	e->ctime_ns = (int64_t)get_u64(p + 28);
	e->size = get_u64(p + 36);
	e->ino = get_u64(p + TREE_STAT_INO);
	e->dev = get_u64(p + 52);
	e->rdev = get_u64(p + 60);
	e->nlink = get_u32(p + TREE_STAT_NLINK);
}

/* Parses everything after the type byte of a full record; *path_len and
 * *link_len get the string lengths for validation. */
static int parse_full(cursor_t *c, tree_entry_t *e, size_t *path_len, size_t *link_len)
{
	uint16_t n;
	const uint8_t *p;
	int r;
	if ((r = cur_u16(c, &n)))
		return r;
	if (n > TREE_MAX_PATH)
		return BAD;
	if ((r = cur_str(c, n, &e->path)))
		return r;
	if (!n && !(e->path = calloc(1, 1))) /* the root: "" not NULL */
		return -ENOMEM;
	*path_len = n;
	if (!(p = cur_take(c, TREE_STAT_LEN)))
		return BAD;
	parse_stat(p, e);
	if ((r = cur_u16(c, &n)) || (r = cur_str(c, n, &e->link)))
		return r;
	*link_len = n;
	if ((r = parse_xattrs(c, e)))
		return r;
	return parse_content(c, e);
}

static int parse_body(const uint8_t *body, size_t len, tree_entry_t *e)
{
	cursor_t c = {body, body + len};
	size_t path_len = 0, link_len = 0;
	int r = cur_u8(&c, &e->type);
	if (r)
		return r;
	if (e->type == TREE_CONT) {
		if ((r = cur_u8(&c, &e->content)))
			return r;
		if (e->content != TREE_CONTENT_EXTENTS)
			return BAD;
		r = parse_extents(&c, e);
	} else if (e->type >= TREE_REG && e->type <= TREE_SOCK) {
		r = parse_full(&c, e, &path_len, &link_len);
	} else {
		return BAD;
	}
	if (r)
		return r;
	if (cur_left(&c) || !entry_valid(e, path_len, link_len))
		return BAD;
	return 0;
}

static int check_header(tree_reader_t *r)
{
	size_t avail = r->len - r->off;
	const uint8_t *h = r->buf + r->off;
	/* Reject a wrong magic as soon as it shows, not after 12 bytes. */
	if (memcmp(h, TREE_MAGIC, MIN(avail, 8)))
		return BAD;
	if (avail < TREE_HEADER_LEN)
		return 0;
	if (get_u32(h + 8) != TREE_VERSION)
		return BAD;
	r->off += TREE_HEADER_LEN;
	r->header_ok = true;
	return 1;
}

int tree_reader_next(tree_reader_t *r, tree_entry_t *e)
{
	if (r->err)
		return r->err;
	if (!r->header_ok) {
		int h = r->len > r->off ? check_header(r) : 0;
		if (h <= 0)
			return h < 0 ? reader_fail(r) : 0;
	}
	size_t avail = r->len - r->off;
	if (avail < 4)
		return 0;
	uint32_t body_len = get_u32(r->buf + r->off);
	if (body_len > TREE_MAX_RECORD)
		return reader_fail(r);
	if (avail - 4 < body_len)
		return 0;
	tree_entry_t tmp = {0};
	int rc = parse_body(r->buf + r->off + 4, body_len, &tmp);
	if (rc) {
		tree_entry_clear(&tmp);
		/* Out of memory leaves the record buffered for a retry. */
		return rc == -ENOMEM ? rc : reader_fail(r);
	}
	r->off += 4 + (size_t)body_len;
	*e = tmp;
	return 1;
}

int tree_reader_end(tree_reader_t *r)
{
	if (r->err)
		return r->err;
	if (!r->header_ok && (r->len - r->off < TREE_HEADER_LEN || check_header(r) <= 0))
		return BAD;
	return r->off == r->len ? 0 : BAD;
}
