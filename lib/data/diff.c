/* diff.c - what changed between two snapshots of a dataset (zfs diff).
 *
 * The two tree streams are merged in their common path order.  Records are
 * framed but not decoded: two records with the same bytes describe the same
 * object with the same content (content is a list of chunk references), so
 * the common case costs one memcmp and no allocation, and file content is
 * never read.  Records that differ are decoded and the objects compared as
 * zfs does (by inode change time and the other stat fields).  Tree chunks both streams share are read once (a small cache
 * of chunks by digest).  Only records that differ are decoded.
 *
 * Objects are matched the way zfs matches them by object number: by inode
 * number.  A path present on one side only whose inode appears at another
 * path on the other side is a rename; a changed link count is reported
 * once per object as "M ... (+N)"; children of a renamed directory that did
 * not change themselves are not listed (their objects did not change).
 *
 * The later side can also be the dataset's source as it is now: it is
 * walked (same order, same filesystem rule as a backup) into records that
 * carry metadata but no content, and compared by metadata (sizes, times,
 * modes, owners, links): a file whose content changed has a new mtime or
 * ctime.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/dataset.h"
#include "crypt/encroot.h"
#include "data/exclude.h"
#include "data/snapio.h"
#include "store/store.h"

#define CACHE_SLOTS 8

typedef struct chunk_cache {
	digest_t d[CACHE_SLOTS];
	buf_t b[CACHE_SLOTS];
	bool used[CACHE_SLOTS];
	unsigned next;
} chunk_cache_t;

/* A set of inode numbers, each with a small tag. */
typedef struct u64set {
	uint64_t *v;
	uint8_t *tag;  /* per value: 1 for a plain member, or what u64set_put gave */
	size_t n, cap; /* cap is 0 or a power of two; 0 is stored as a flag */
	uint8_t zero_tag;
} u64set_t;

/* One side of the merge: a framed record source. */
typedef struct side {
	chunkstore_t *cs;
	const crypt_keys_t *key; /* the dataset's encryption keys, or NULL */
	chunk_cache_t *cache;
	const uint8_t *refs; /* packed root refs; NULL for a live side */
	size_t nrefs, next;
	buf_t pend;  /* buffered stream bytes */
	size_t pos;  /* first unconsumed byte in pend */
	size_t cur;  /* length of the current entry (record + continuations) */
	bool header_done;
	tree_reader_t *rd;
	chunk_ref_t failed;
	uint64_t *chunks_read, *chunks_shared;
	/* Symlinks, devices, FIFOs and sockets with several names: inode ->
	 * type.  A later name's record says only "hardlink"; its first name
	 * comes before it in the stream and says what the object is. */
	u64set_t kinds;
} side_t;

/* A decoded entry that did not match the same path on the other side. */
typedef struct loose {
	tree_entry_t e;
	uint8_t kind; /* e's type, or for a hardlink its inode's (kind_of) */
	bool used;
} loose_t;

typedef struct change {
	char kind;
	char *path, *new_path;
	uint32_t mode; /* with type bits */
	int64_t ctime_ns;
	int link_delta;
} change_t;


typedef struct dctx {
	cairn_store *st;
	loose_t *la, *lb;
	size_t nla, nlb, capla, caplb;
	change_t *ch;
	size_t nch, capch;
	u64set_t reported; /* inodes with several links already reported as M */
	u64set_t matched;  /* inodes with several links seen at a common path */
} dctx_t;

/* ---- a set of inode numbers ---- */

static size_t u64_slot(const u64set_t *s, uint64_t v)
{
	size_t i = (v * 0x9e3779b97f4a7c15ull) & (s->cap - 1);
	while (s->v[i] && s->v[i] != v)
		i = (i + 1) & (s->cap - 1);
	return i;
}

/* The tag of v, or 0 when v is not in the set. */
static uint8_t u64set_tag(const u64set_t *s, uint64_t v)
{
	if (!v)
		return s->zero_tag;
	size_t i = s->cap ? u64_slot(s, v) : 0;
	return s->cap && s->v[i] == v ? s->tag[i] : 0;
}

static bool u64set_has(const u64set_t *s, uint64_t v)
{
	return u64set_tag(s, v) != 0;
}

/* Adds v with tag (not 0), or gives it that tag. */
static int u64set_put(u64set_t *s, uint64_t v, uint8_t tag)
{
	if (!v) {
		s->zero_tag = tag;
		return 0;
	}
	if ((s->n + 1) * 2 > s->cap) {
		u64set_t g = {.cap = s->cap ? s->cap * 2 : 64, .n = s->n, .zero_tag = s->zero_tag};
		g.v = calloc(g.cap, sizeof(uint64_t));
		g.tag = calloc(g.cap, 1);
		if (!g.v || !g.tag) {
			free(g.v);
			free(g.tag);
			return -ENOMEM;
		}
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i]) {
				size_t j = u64_slot(&g, s->v[i]);
				g.v[j] = s->v[i];
				g.tag[j] = s->tag[i];
			}
		free(s->v);
		free(s->tag);
		*s = g;
	}
	size_t i = u64_slot(s, v);
	if (!s->v[i]) {
		s->v[i] = v;
		s->n++;
	}
	s->tag[i] = tag;
	return 0;
}

static int u64set_add(u64set_t *s, uint64_t v)
{
	return u64set_put(s, v, 1);
}

static void u64set_free(u64set_t *s)
{
	free(s->v);
	free(s->tag);
	*s = (u64set_t){0};
}

/* ---- framing ---- */

static int cache_get(side_t *s, const chunk_ref_t *ref, const buf_t **out)
{
	chunk_cache_t *c = s->cache;
	for (unsigned i = 0; i < CACHE_SLOTS; i++)
		if (c->used[i] && !digest_cmp(&c->d[i], &ref->digest)) {
			(*s->chunks_shared)++;
			*out = &c->b[i];
			return 0;
		}
	unsigned i = c->next++ % CACHE_SLOTS;
	c->used[i] = false;
	int r = chunkstore_get_key(s->cs, s->key, &ref->digest, &c->b[i]);
	if (r < 0) {
		s->failed = *ref;
		return r;
	}
	(*s->chunks_read)++;
	c->d[i] = ref->digest;
	c->used[i] = true;
	*out = &c->b[i];
	return 0;
}

/* Makes at least need bytes available after pos: 1, or 0 when the stream
 * ends first, or <0. */
static int side_fill(side_t *s, size_t need)
{
	while (s->pend.len - s->pos < need) {
		if (!s->refs || s->next >= s->nrefs)
			return 0;
		if (s->pos > (1u << 20) && s->pos * 2 > s->pend.len) {
			buf_consume(&s->pend, s->pos);
			s->pos = 0;
		}
		chunk_ref_t ref;
		chunk_ref_unpack(s->refs + s->next * CHUNK_REF_WIRE, &ref);
		const buf_t *b;
		int r = cache_get(s, &ref, &b);
		if (r < 0)
			return r;
		s->next++;
		if (buf_append(&s->pend, b->data, b->len) < 0)
			return -ENOMEM;
	}
	return 1;
}

static int side_header(side_t *s)
{
	int r = side_fill(s, TREE_HEADER_LEN);
	if (r < 0)
		return r;
	const uint8_t *p = s->pend.data + s->pos;
	if (r == 0 || memcmp(p, TREE_MAGIC, 8) || get_u32(p + 8) != TREE_VERSION)
		return CAIRN_ECORRUPT;
	r = tree_reader_feed(s->rd, p, TREE_HEADER_LEN);
	s->pos += TREE_HEADER_LEN;
	s->header_done = true;
	return r;
}

/* Length of the record at offset off from pos, or 0 at a clean end;
 * <0 on a short or oversized record. */
static int record_at(side_t *s, size_t off, size_t *len)
{
	int r = side_fill(s, off + 4);
	if (r <= 0) {
		*len = 0;
		return r < 0 ? r : s->pend.len - s->pos == off ? 0 : CAIRN_ECORRUPT;
	}
	uint32_t body = get_u32(s->pend.data + s->pos + off);
	if (body < 1 || body > TREE_MAX_RECORD)
		return CAIRN_ECORRUPT;
	r = side_fill(s, off + 4 + body);
	if (r <= 0)
		return r < 0 ? r : CAIRN_ECORRUPT;
	*len = 4 + body;
	return 0;
}

/* Records the type of a non-regular object with several names from the
 * current record's frame (no decoding: most records are never decoded).
 * Returns 1, or -ENOMEM. */
static int note_kind(side_t *s)
{
	const uint8_t *r = s->pend.data + s->pos;
	uint32_t body = get_u32(r);
	uint8_t type = r[4];
	if (type != TREE_SYMLINK && type != TREE_CHR && type != TREE_BLK && type != TREE_FIFO &&
	    type != TREE_SOCK)
		return 1;
	size_t path_len = body >= 3 ? get_u16(r + 5) : 0;
	if (body < 3 + path_len + TREE_STAT_LEN)
		return 1; /* malformed: decoding reports it */
	const uint8_t *st = r + 7 + path_len;
	if (get_u32(st + TREE_STAT_NLINK) < 2)
		return 1;
	return u64set_put(&s->kinds, get_u64(st + TREE_STAT_INO), type) < 0 ? -ENOMEM : 1;
}

/* Frames the next entry: its record and the continuation records after
 * it.  1 with s->cur set, 0 at the end, <0. */
static int side_next(side_t *s)
{
	s->pos += s->cur;
	s->cur = 0;
	if (!s->header_done) {
		int r = side_header(s);
		if (r < 0)
			return r;
	}
	size_t len;
	int r = record_at(s, 0, &len);
	if (r < 0 || len == 0)
		return r;
	if (s->pend.data[s->pos + 4] == TREE_CONT)
		return CAIRN_ECORRUPT;
	size_t total = len;
	for (;;) {
		r = record_at(s, total, &len);
		if (r < 0)
			return r;
		if (len == 0 || s->pend.data[s->pos + total + 4] != TREE_CONT)
			break;
		total += len;
	}
	s->cur = total;
	return note_kind(s);
}

static const uint8_t *side_rec(const side_t *s)
{
	return s->pend.data + s->pos;
}

/* The path of the current entry, bounded by its record. */
static int side_path(const side_t *s, const uint8_t **p, size_t *n)
{
	const uint8_t *r = side_rec(s);
	uint32_t body = get_u32(r);
	if (body < 3)
		return CAIRN_ECORRUPT;
	*n = get_u16(r + 5);
	if (*n > body - 3)
		return CAIRN_ECORRUPT;
	*p = r + 7;
	return 0;
}

/* Decodes the current entry, continuations merged. */
static int side_decode(side_t *s, tree_entry_t *e)
{
	int r = tree_reader_feed(s->rd, side_rec(s), s->cur);
	if (r < 0)
		return r;
	r = tree_reader_next(s->rd, e);
	if (r != 1)
		return r < 0 ? r : CAIRN_ECORRUPT;
	for (;;) {
		tree_entry_t n = {0};
		r = tree_reader_next(s->rd, &n);
		if (r == 0)
			return 0;
		if (r < 0 || e->type != TREE_REG) {
			tree_entry_clear(&n);
			tree_entry_clear(e);
			return r < 0 ? r : CAIRN_ECORRUPT;
		}
		tree_extent_t *x = realloc(e->extents, (e->nextent + n.nextent) * sizeof(*x));
		if (!x) {
			tree_entry_clear(&n);
			tree_entry_clear(e);
			return -ENOMEM;
		}
		if (n.nextent)
			memcpy(x + e->nextent, n.extents, n.nextent * sizeof(*x));
		e->extents = x;
		e->nextent += n.nextent;
		tree_entry_clear(&n);
	}
}

/* tree_path_cmp for counted strings. */
static int rawpath_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	size_t n = MIN(an, bn);
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i]) {
			int x = a[i] == '/' ? 1 : a[i] + 1;
			int y = b[i] == '/' ? 1 : b[i] + 1;
			return x - y;
		}
	return an < bn ? -1 : an > bn;
}

/* ---- comparing objects ---- */

static uint32_t type_bits(uint8_t type)
{
	switch (type) {
	case TREE_DIR: return S_IFDIR;
	case TREE_SYMLINK: return S_IFLNK;
	case TREE_CHR: return S_IFCHR;
	case TREE_BLK: return S_IFBLK;
	case TREE_FIFO: return S_IFIFO;
	case TREE_SOCK: return S_IFSOCK;
	default: return S_IFREG; /* regular files and their extra links */
	}
}

/* What e is: its type, or for a later name (hardlink) the type of its
 * inode's first name on the same side (a regular file unless noted). */
static uint8_t kind_of(const side_t *s, const tree_entry_t *e)
{
	uint8_t t = e->type == TREE_HARDLINK ? u64set_tag(&s->kinds, e->ino) : e->type;
	return t ? t : TREE_REG;
}

static bool same_kind(uint8_t a, uint8_t b)
{
	return type_bits(a) == type_bits(b);
}

/* Whether the ctimes of two records of an object differ only by the
 * nanosecond a backup takes off a racy object's (backup.c, racy) so that
 * the next one reads it again: with the same content and xattrs it is
 * the same object.  A write the racy rule was for (in the tick of the
 * read, times unchanged) shows in the content or xattrs.  A live side has
 * neither (an empty file's content aside), so there a racy file still
 * counts as changed. */
static bool racy_mark_only(const tree_entry_t *a, const tree_entry_t *b)
{
	int64_t d = a->ctime_ns - b->ctime_ns;
	return (d == 1 || d == -1) && a->type == b->type && a->type != TREE_HARDLINK &&
	       tree_same_data(a, b);
}

/* Did the object change (beyond its name)?  As zfs decides: by the inode
 * change time, which every write, chmod, chown, link or xattr change moves
 * (and no user can set back).  The other stat fields are compared too so a
 * tree received from a careless source is not trusted on ctime alone.
 * Content is not compared: an unchanged file can move to another bundle
 * chunk when its neighbours change, with the same bytes. */
static bool object_changed(const tree_entry_t *a, const tree_entry_t *b)
{
	if ((a->ctime_ns != b->ctime_ns && !racy_mark_only(a, b)) || a->mode != b->mode || a->uid != b->uid ||
	    a->gid != b->gid || a->mtime_ns != b->mtime_ns || a->rdev != b->rdev ||
	    a->nlink != b->nlink)
		return true;
	/* A hardlink record's link is a path, not a target: compare only two
	 * symlinks (whose targets cannot change in place anyway). */
	if (a->type == TREE_SYMLINK && b->type == TREE_SYMLINK && strcmp(a->link, b->link))
		return true;
	return a->type == TREE_REG && b->type == TREE_REG && a->size != b->size;
}

static int change_add(dctx_t *c, char kind, const char *path, const char *new_path,
		      const tree_entry_t *e, uint8_t type, int link_delta)
{
	if (c->nch == c->capch) {
		size_t cap = c->capch ? c->capch * 2 : 64;
		change_t *n = realloc(c->ch, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->ch = n;
		c->capch = cap;
	}
	change_t *x = &c->ch[c->nch];
	x->kind = kind;
	x->path = strdup(path);
	x->new_path = new_path ? strdup(new_path) : NULL;
	if (!x->path || (new_path && !x->new_path)) {
		free(x->path);
		free(x->new_path);
		return -ENOMEM;
	}
	x->mode = type_bits(type) | (e->mode & 07777);
	x->ctime_ns = e->ctime_ns;
	x->link_delta = link_delta;
	c->nch++;
	return 0;
}

static int loose_add(loose_t **v, size_t *n, size_t *cap, tree_entry_t *e, uint8_t kind)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		loose_t *p = realloc(*v, nc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = nc;
	}
	(*v)[*n].e = *e;
	(*v)[*n].kind = kind;
	(*v)[*n].used = false;
	(*n)++;
	memset(e, 0, sizeof(*e));
	return 0;
}

/* The same path on both sides with different records. */
static int pair_same_path(dctx_t *c, tree_entry_t *a, uint8_t ka, tree_entry_t *b,
			  uint8_t kb)
{
	if (a->ino != b->ino || !same_kind(ka, kb)) {
		/* Another object now has this name: the old one went (or moved),
		 * a new one came (or moved here). */
		int r = loose_add(&c->la, &c->nla, &c->capla, a, ka);
		return r ? r : loose_add(&c->lb, &c->nlb, &c->caplb, b, kb);
	}
	bool multi = a->nlink > 1 || b->nlink > 1;
	if (multi && u64set_add(&c->matched, a->ino) < 0)
		return -ENOMEM;
	if (!object_changed(a, b))
		return 0;
	if (multi) {
		/* One line per object, as zfs reports an object once. */
		if (u64set_has(&c->reported, a->ino))
			return 0;
		if (u64set_add(&c->reported, a->ino) < 0)
			return -ENOMEM;
	}
	/* A directory's link count follows its subdirectories: not reported. */
	int delta = a->type == TREE_DIR ? 0 : (int)b->nlink - (int)a->nlink;
	return change_add(c, 'M', b->path, NULL, b, kb, delta);
}

/* ---- after the merge: renames, removals, additions ---- */

static int loose_ino_cmp(const void *x, const void *y)
{
	const loose_t *a = x, *b = y;
	if (a->e.ino != b->e.ino)
		return a->e.ino < b->e.ino ? -1 : 1;
	return tree_path_cmp(a->e.path, b->e.path);
}

typedef struct rename {
	const char *from, *to;
	const tree_entry_t *later; /* the object under its new name */
	uint8_t kind;
	bool changed;
} rename_t;

static int rename_from_cmp(const void *x, const void *y)
{
	return tree_path_cmp(((const rename_t *)x)->from, ((const rename_t *)y)->from);
}

/* A rename that only follows its directory's rename: zfs does not list it
 * (the object itself did not change). */
static bool follows_parent(const rename_t *v, size_t n, const rename_t *x)
{
	const char *sa = strrchr(x->from, '/'), *sb = strrchr(x->to, '/');
	if (x->changed || !sa || !sb || strcmp(sa, sb))
		return false;
	char *pa = strndup(x->from, sa - x->from);
	if (!pa)
		return false;
	rename_t key = {.from = pa};
	const rename_t *p = bsearch(&key, v, n, sizeof(*v), rename_from_cmp);
	free(pa);
	return p && strlen(p->to) == (size_t)(sb - x->to) && !strncmp(p->to, x->to, sb - x->to);
}

static int resolve_renames(dctx_t *c)
{
	/* Pair loose entries by inode: both lists sorted by (ino, path). */
	if (c->nla > 1)
		qsort(c->la, c->nla, sizeof(*c->la), loose_ino_cmp);
	if (c->nlb > 1)
		qsort(c->lb, c->nlb, sizeof(*c->lb), loose_ino_cmp);
	rename_t *rn = calloc(MIN(c->nla, c->nlb) + 1, sizeof(*rn));
	if (!rn)
		return -ENOMEM;
	size_t nrn = 0, i = 0, j = 0;
	while (i < c->nla && j < c->nlb) {
		loose_t *a = &c->la[i], *b = &c->lb[j];
		if (a->e.ino < b->e.ino) {
			i++;
		} else if (a->e.ino > b->e.ino) {
			j++;
		} else if (!same_kind(a->kind, b->kind)) {
			i++; /* an inode number reused by another kind of object */
		} else {
			a->used = b->used = true;
			rn[nrn].from = a->e.path;
			rn[nrn].to = b->e.path;
			rn[nrn].later = &b->e;
			rn[nrn].kind = b->kind;
			rn[nrn].changed = object_changed(&a->e, &b->e);
			nrn++;
			i++;
			j++;
		}
	}
	if (nrn > 1)
		qsort(rn, nrn, sizeof(*rn), rename_from_cmp);
	int r = 0;
	for (size_t k = 0; r == 0 && k < nrn; k++) {
		if (follows_parent(rn, nrn, &rn[k]))
			continue;
		r = change_add(c, 'R', rn[k].from, rn[k].to, rn[k].later, rn[k].kind, 0);
	}
	free(rn);
	return r;
}

static int report_loose(dctx_t *c)
{
	int r = 0;
	/* A name of an object that lives on under another name is a removed
	 * or added link: the object's "(+N)" line reports it. */
	for (size_t i = 0; r == 0 && i < c->nla; i++)
		if (!c->la[i].used && !u64set_has(&c->matched, c->la[i].e.ino))
			r = change_add(c, '-', c->la[i].e.path, NULL, &c->la[i].e, c->la[i].kind, 0);
	for (size_t i = 0; r == 0 && i < c->nlb; i++)
		if (!c->lb[i].used && !u64set_has(&c->matched, c->lb[i].e.ino))
			r = change_add(c, '+', c->lb[i].e.path, NULL, &c->lb[i].e, c->lb[i].kind, 0);
	return r;
}

static int change_cmp(const void *x, const void *y)
{
	const change_t *a = x, *b = y;
	static const char order[] = "-+MR"; /* a replaced object: old first */
	int d = tree_path_cmp(a->path, b->path);
	return d ? d : (int)(strchr(order, a->kind) - strchr(order, b->kind));
}

/* ---- the merge ---- */

static int decode_loose(dctx_t *c, side_t *s, bool later)
{
	tree_entry_t e = {0};
	int r = side_decode(s, &e);
	if (r < 0)
		return r;
	uint8_t kind = kind_of(s, &e);
	return later ? loose_add(&c->lb, &c->nlb, &c->caplb, &e, kind)
		     : loose_add(&c->la, &c->nla, &c->capla, &e, kind);
}

static int merge(dctx_t *c, side_t *a, side_t *b)
{
	int ra = side_next(a), rb = side_next(b);
	while (ra > 0 || rb > 0) {
		if (ra < 0 || rb < 0)
			break;
		int cmp;
		const uint8_t *pa = NULL, *pb = NULL;
		size_t na = 0, nb = 0;
		int r = ra > 0 ? side_path(a, &pa, &na) : 0;
		if (r == 0 && rb > 0)
			r = side_path(b, &pb, &nb);
		if (r < 0)
			return r;
		cmp = ra <= 0 ? 1 : rb <= 0 ? -1 : rawpath_cmp(pa, na, pb, nb);
		if (cmp == 0) {
			if (a->cur != b->cur || memcmp(side_rec(a), side_rec(b), a->cur)) {
				tree_entry_t x = {0}, y = {0};
				r = side_decode(a, &x);
				if (r == 0)
					r = side_decode(b, &y);
				if (r == 0)
					r = pair_same_path(c, &x, kind_of(a, &x), &y,
							   kind_of(b, &y));
				tree_entry_clear(&x);
				tree_entry_clear(&y);
				if (r < 0)
					return r;
			}
			ra = side_next(a);
			rb = side_next(b);
		} else if (cmp < 0) {
			if ((r = decode_loose(c, a, false)) < 0)
				return r;
			ra = side_next(a);
		} else {
			if ((r = decode_loose(c, b, true)) < 0)
				return r;
			rb = side_next(b);
		}
	}
	return ra < 0 ? ra : rb < 0 ? rb : 0;
}

/* ---- the live side: the source walked into records ---- */

typedef struct live {
	buf_t *out;
	const char *root;
	dev_t rootdev;
	struct {
		dev_t dev;
		ino_t ino;
		char *path;
	} *links;
	size_t nlinks, caplinks;
	excl_t *excl; /* the rules a backup would apply */
} live_t;

/* The first path of a multiply linked inode, as a backup records it. */
static const char *live_link(live_t *l, const struct stat *st, const char *path)
{
	for (size_t i = 0; i < l->nlinks; i++) /* few in practice; linear is enough */
		if (l->links[i].ino == st->st_ino && l->links[i].dev == st->st_dev)
			return l->links[i].path;
	if (l->nlinks == l->caplinks) {
		size_t cap = l->caplinks ? l->caplinks * 2 : 16;
		void *p = realloc(l->links, cap * sizeof(*l->links));
		if (!p)
			return NULL;
		l->links = p;
		l->caplinks = cap;
	}
	l->links[l->nlinks].dev = st->st_dev;
	l->links[l->nlinks].ino = st->st_ino;
	l->links[l->nlinks].path = strdup(path);
	l->nlinks++;
	return NULL;
}

static int live_emit(live_t *l, int dfd, const char *name, const char *path,
		     const struct stat *st)
{
	tree_entry_t e = {0};
	tree_entry_from_stat(&e, st);
	e.path = (char *)path;
	char target[PATH_MAX];
	if (e.type == TREE_SYMLINK) {
		ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);
		if (n <= 0)
			return 0; /* vanished: a backup would skip it too */
		target[n] = 0;
		e.link = target;
	}
	if (e.type != TREE_DIR && st->st_nlink > 1) { /* the rule backup.c's visit() follows */
		const char *first = live_link(l, st, path);
		if (first) {
			e.type = TREE_HARDLINK;
			e.link = (char *)first;
			e.size = 0;
		}
	}
	return tree_write_entry(l->out, &e);
}

static int live_walk(live_t *l, int dfd, const char *dirpath)
{
	dirlist_t dl = {0};
	int r = dirlist_read(&dl, dfd);
	if (r < 0) {
		dirlist_free(&dl);
		return r == -ENOMEM ? r : 0; /* unreadable: a backup skips it as well */
	}
	char **names = dl.names;
	size_t n = dl.n;
	unsigned bad_line;
	char why[512];
	bool entered = (r = exclude_enter(l->excl, dfd, dirpath, &dl, &bad_line, why,
					  sizeof(why))) == 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		char path[TREE_MAX_PATH + 1];
		int len = snprintf(path, sizeof(path), "%s%s%s", dirpath, *dirpath ? "/" : "",
				   names[i]);
		struct stat st;
		if (len >= (int)sizeof(path) || fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    exclude_match(l->excl, path, names[i], S_ISDIR(st.st_mode)))
			continue;
		r = live_emit(l, dfd, names[i], path, &st);
		if (r == 0 && S_ISDIR(st.st_mode) && st.st_dev == l->rootdev) {
			int sub = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				r = live_walk(l, sub, path);
				close(sub);
			}
		}
	}
	if (entered)
		exclude_leave(l->excl);
	dirlist_free(&dl);
	return r;
}

static int live_records(cairn_store *st, const ds_row_t *ds, buf_t *out)
{
	char *src = NULL;
	int r = dataset_prop(st, ds, "source", &src, NULL);
	if (r < 0)
		return r;
	if (!strcmp(src, "none")) {
		free(src);
		return store_err(st, CAIRN_ENOSOURCE,
				 "%s: has no source (source=none): nothing to compare with", ds->name);
	}
	int fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		r = store_err(st, CAIRN_ENOSOURCE, "%s: source %s: %s", ds->name, src,
			      strerror(errno));
		if (fd >= 0)
			close(fd);
		free(src);
		return r;
	}
	live_t l = {.out = out, .root = src, .rootdev = sb.st_dev};
	tree_entry_t root = {0};
	tree_entry_from_stat(&root, &sb);
	root.path = "";
	r = exclude_open(st, ds, &l.excl);
	if (r == 0)
		r = tree_write_header(out);
	if (r == 0)
		r = tree_write_entry(out, &root);
	if (r == 0)
		r = live_walk(&l, fd, "");
	close(fd);
	for (size_t i = 0; i < l.nlinks; i++)
		free(l.links[i].path);
	free(l.links);
	exclude_free(l.excl);
	free(src);
	return r;
}

/* ---- entry point ---- */

typedef struct endpoint {
	ds_row_t ds;
	snap_row_t snap;
	buf_t tree, idx;
	bool is_snap;
} endpoint_t;

static int endpoint_open(cairn_store *st, const char *name, endpoint_t *ep)
{
	int r;
	if (strchr(name, '@')) {
		const char *sname;
		ep->is_snap = true;
		r = snapshot_split(st, name, &ep->ds, &sname);
		if (r == 0) {
			r = catalog_snap_lookup(st->cat, ep->ds.id, sname, &ep->snap);
			if (r == -ENOENT)
				return store_err(st, r, "%s: snapshot does not exist", name);
		}
		if (r == 0)
			r = catalog_snap_roots(st->cat, ep->snap.id, &ep->tree, &ep->idx);
	} else {
		r = dataset_lookup(st, name, &ep->ds);
	}
	if (r == 0 && ep->ds.type != CAIRN_TYPE_FILESYSTEM)
		r = store_err(st, -EINVAL, "%s: not a filesystem dataset (volumes have no files to compare)",
			      name);
	return r;
}

static void endpoint_close(endpoint_t *ep)
{
	ds_row_clear(&ep->ds);
	snap_row_clear(&ep->snap);
	buf_free(&ep->tree);
	buf_free(&ep->idx);
}

static int open_both(cairn_store *st, const char *from, const char *to, endpoint_t *a,
		     endpoint_t *b)
{
	if (!strchr(from, '@'))
		return store_err(st, CAIRN_EBADNAME,
				 "%s: the first argument must be a snapshot (DATASET@NAME)", from);
	int r = catalog_begin_read(st->cat);
	if (r < 0)
		return store_err(st, r, "catalog: %s", catalog_errmsg(st->cat));
	r = endpoint_open(st, from, a);
	if (r == 0)
		r = endpoint_open(st, to, b);
	catalog_end_read(st->cat);
	if (r < 0)
		return r;
	if (a->ds.id != b->ds.id)
		return store_err(st, -EXDEV, "%s: not a snapshot of %s (diff compares one dataset)",
				 from, b->ds.name);
	if (b->is_snap && a->snap.createtxg > b->snap.createtxg)
		return store_err(st, -EINVAL, "%s: not an earlier snapshot than %s", from, to);
	return 0;
}

static void side_init(side_t *s, chunkstore_t *cs, chunk_cache_t *cache, const buf_t *roots,
		      cairn_diff_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->cs = cs;
	s->cache = cache;
	s->refs = roots->data;
	s->nrefs = roots->len / CHUNK_REF_WIRE;
	s->chunks_read = &o->chunks_read;
	s->chunks_shared = &o->chunks_shared;
}

static int stream_error(cairn_store *st, const side_t *s, const char *name, int r)
{
	if (r == -ENOMEM)
		return r;
	char hex[DIGEST_HEX_LEN + 1];
	if (r == CAIRN_ECORRUPT && !s->failed.plain_len)
		return store_err(st, r, "%s: tree stream is damaged", name);
	digest_to_hex(&s->failed.digest, hex);
	return store_err(st, r, "%s: tree stream chunk %s: %s", name, hex,
			 r == -ENOENT ? "missing from the chunk store" : cairn_strerror(r));
}

static int run(dctx_t *c, endpoint_t *a, endpoint_t *b, const char *from, const char *to,
	       cairn_diff_opts *o)
{
	chunk_cache_t cache = {0};
	side_t sa, sb;
	buf_t live = {0};
	crypt_keys_t *key = NULL;
	/* An encrypted dataset needs its key loaded (errdetail names the root). */
	int r = encroot_keys(c->st, &a->ds, &key);
	if (r < 0)
		return r;
	side_init(&sa, c->st->cs, &cache, &a->tree, o);
	side_init(&sb, c->st->cs, &cache, &b->tree, o);
	sa.key = sb.key = key;
	if (!b->is_snap) {
		r = live_records(c->st, &b->ds, &live);
		sb.refs = NULL;
		sb.pend = live; /* freed with the side */
	}
	if (r == 0 && (r = tree_reader_new(&sa.rd)) == 0)
		r = tree_reader_new(&sb.rd);
	if (r == 0) {
		r = merge(c, &sa, &sb);
		if (r < 0 && !*c->st->errdetail) {
			const side_t *bad = sa.failed.plain_len ? &sa : &sb;
			stream_error(c->st, bad, bad == &sa ? from : to, r);
		}
	}
	if (r == 0)
		r = resolve_renames(c);
	if (r == 0)
		r = report_loose(c);
	tree_reader_free(sa.rd);
	tree_reader_free(sb.rd);
	u64set_free(&sa.kinds);
	u64set_free(&sb.kinds);
	buf_free(&sa.pend);
	buf_free(&sb.pend);
	for (unsigned i = 0; i < CACHE_SLOTS; i++)
		buf_free(&cache.b[i]);
	crypt_keys_free(key);
	return r;
}

static int deliver(dctx_t *c, cairn_diff_opts *o)
{
	if (c->nch > 1) /* qsort must not see a NULL array, even empty */
		qsort(c->ch, c->nch, sizeof(*c->ch), change_cmp);
	for (size_t i = 0; i < c->nch; i++) {
		const change_t *x = &c->ch[i];
		cairn_diff_change d = {.kind = x->kind, .path = x->path, .new_path = x->new_path,
				       .mode = x->mode, .ctime_ns = x->ctime_ns,
				       .link_delta = x->link_delta};
		o->changes++;
		int r = o->change ? o->change(&d, o->arg) : 0;
		if (r)
			return r;
	}
	return 0;
}

int cairn_diff(cairn_store *st, const char *from, const char *to, cairn_diff_opts *o)
{
	int r = STORE_ENTER(st, from, to);
	if (r < 0)
		return r;
	cairn_diff_opts none = {0};
	if (!o)
		o = &none;
	endpoint_t a = {0}, b = {0};
	dctx_t c = {.st = st};
	r = open_both(st, from, to, &a, &b);
	if (r == 0)
		r = run(&c, &a, &b, from, to, o);
	if (r == 0)
		r = deliver(&c, o);
	for (size_t i = 0; i < c.nla; i++)
		tree_entry_clear(&c.la[i].e);
	for (size_t i = 0; i < c.nlb; i++)
		tree_entry_clear(&c.lb[i].e);
	for (size_t i = 0; i < c.nch; i++) {
		free(c.ch[i].path);
		free(c.ch[i].new_path);
	}
	free(c.la);
	free(c.lb);
	free(c.ch);
	u64set_free(&c.reported);
	u64set_free(&c.matched);
	endpoint_close(&a);
	endpoint_close(&b);
	return r;
}
