/* snapview.c - see snapview.h. */
#include "data/snapview.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- loading a tree ---- */

static uint32_t path_slot(const snapview_t *v, const char *path)
{
	uint64_t h = fnv1a64(path, strlen(path));
	uint32_t i = h & (v->hcap - 1);
	while (v->hash[i] != SV_NONE && strcmp(v->n[v->hash[i]].e.path, path))
		i = (i + 1) & (v->hcap - 1);
	return i;
}

uint32_t snapview_lookup(const snapview_t *v, const char *path)
{
	return v->hash[path_slot(v, path)];
}

static int build_hash(snapview_t *v)
{
	v->hcap = 64;
	while (v->hcap < 2 * (uint64_t)v->count + 2)
		v->hcap *= 2;
	v->hash = malloc(v->hcap * sizeof(uint32_t));
	if (!v->hash)
		return -ENOMEM;
	memset(v->hash, 0xff, v->hcap * sizeof(uint32_t));
	for (uint32_t i = 0; i < v->count; i++) {
		uint32_t s = path_slot(v, v->n[i].e.path);
		if (v->hash[s] != SV_NONE)
			return CAIRN_ECORRUPT; /* the same path twice */
		v->hash[s] = i;
	}
	return 0;
}

/* Extent offsets and the blocks a file occupies. */
static int index_content(sv_node_t *n)
{
	tree_entry_t *e = &n->e;
	if (e->content == TREE_CONTENT_BUNDLE) {
		n->blocks = (e->size + 511) / 512;
		return 0;
	}
	if (e->content != TREE_CONTENT_EXTENTS || !e->nextent)
		return 0;
	n->ext_off = malloc(e->nextent * sizeof(uint64_t));
	if (!n->ext_off)
		return -ENOMEM;
	uint64_t off = 0, data = 0;
	for (uint32_t i = 0; i < e->nextent; i++) {
		n->ext_off[i] = off;
		off += e->extents[i].length;
		if (e->extents[i].kind == TREE_EXT_CHUNK)
			data += e->extents[i].length;
	}
	n->blocks = (data + 511) / 512;
	return 0;
}

/* Parents, children in stream (sorted) order, hardlink targets. */
static int link_nodes(snapview_t *v)
{
	uint32_t *last = malloc(v->count * sizeof(uint32_t));
	if (!last)
		return -ENOMEM;
	memset(last, 0xff, v->count * sizeof(uint32_t));
	int r = 0;
	for (uint32_t i = 0; r == 0 && i < v->count; i++) {
		sv_node_t *n = &v->n[i];
		n->parent = n->first_child = n->next_sibling = SV_NONE;
		n->target = i;
		const char *slash = strrchr(n->e.path, '/');
		n->name = slash ? slash + 1 : n->e.path;
		if (i == 0) {
			if (*n->e.path || n->e.type != TREE_DIR)
				r = CAIRN_ECORRUPT; /* a filesystem tree starts at its root dir */
			continue;
		}
		char *dir = slash ? strndup(n->e.path, slash - n->e.path) : strdup("");
		if (!dir) {
			r = -ENOMEM;
			break;
		}
		uint32_t p = snapview_lookup(v, dir);
		free(dir);
		if (p == SV_NONE || v->n[p].e.type != TREE_DIR) {
			r = CAIRN_ECORRUPT;
			break;
		}
		n->parent = p;
		if (last[p] == SV_NONE)
			v->n[p].first_child = i;
		else
			v->n[last[p]].next_sibling = i;
		last[p] = i;
		if (n->e.type == TREE_HARDLINK) {
			uint32_t t = snapview_lookup(v, n->e.link);
			/* Any object but a directory (or another link) can be the
			 * first name of an inode. */
			if (t != SV_NONE && v->n[t].e.type != TREE_DIR &&
			    v->n[t].e.type != TREE_HARDLINK)
				n->target = t;
		}
		r = index_content(n);
	}
	free(last);
	return r;
}

int snapview_load(chunkstore_t *cs, const crypt_keys_t *key, const buf_t *roots,
		  snapview_t **out, chunk_ref_t *failed)
{
	snapview_t *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->key = key;
	snaptree_t t;
	int r = snaptree_open_key(&t, cs, key, roots);
	uint32_t cap = 0;
	while (r == 0) {
		if (v->count == cap) {
			cap = cap ? cap * 2 : 256;
			sv_node_t *n = realloc(v->n, cap * sizeof(*n));
			if (!n) {
				r = -ENOMEM;
				break;
			}
			v->n = n;
		}
		memset(&v->n[v->count], 0, sizeof(sv_node_t));
		r = snaptree_next(&t, &v->n[v->count].e);
		if (r <= 0)
			break;
		v->count++;
		r = 0;
	}
	if (r < 0 && failed)
		*failed = t.m.failed;
	snaptree_close(&t);
	if (r == 0 && v->count == 0) {
		/* A container (source=none) has an empty tree: show an empty,
		 * read-only root directory. */
		if (!cap && !(v->n = calloc(1, sizeof(*v->n))))
			r = -ENOMEM;
		else if (!(v->n[0].e.path = strdup("")))
			r = -ENOMEM;
		else {
			v->n[0].e.type = TREE_DIR;
			v->n[0].e.mode = 0555;
			v->n[0].e.nlink = 2;
			v->count = 1;
		}
	}
	if (r == 0)
		r = build_hash(v);
	if (r == 0)
		r = link_nodes(v);
	if (r < 0) {
		snapview_free(v);
		return r;
	}
	*out = v;
	return 0;
}

void snapview_free(snapview_t *v)
{
	if (!v)
		return;
	for (uint32_t i = 0; i < v->count; i++) {
		tree_entry_clear(&v->n[i].e);
		free(v->n[i].ext_off);
	}
	free(v->n);
	free(v->hash);
	free(v);
}

/* ---- the chunk cache ---- */

enum { CC_LOADING, CC_READY };

typedef struct ccent {
	digest_t d;
	const crypt_keys_t *key;
	buf_t b;
	int refs, state;
	uint64_t used; /* LRU tick */
} ccent_t;

#define PREFETCH_MAX 8

struct chunkcache {
	chunkstore_t *cs;
	pthread_mutex_t lock;
	pthread_cond_t loaded, work;
	ccent_t **e;
	size_t n, cap;
	size_t bytes, cap_bytes;
	uint64_t tick, decoded, hits;
	chunk_ref_t q[PREFETCH_MAX];
	const crypt_keys_t *qkey[PREFETCH_MAX];
	size_t qn;
	bool stop;
	pthread_t th;
};

static ccent_t *cc_find(chunkcache_t *c, const digest_t *d)
{
	for (size_t i = 0; i < c->n; i++)
		if (!digest_cmp(&c->e[i]->d, d))
			return c->e[i];
	return NULL;
}

static void cc_remove(chunkcache_t *c, ccent_t *x)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->e[i] == x) {
			c->e[i] = c->e[--c->n];
			break;
		}
	if (x->state == CC_READY)
		c->bytes -= x->b.len;
	buf_free(&x->b);
	free(x);
}

/* Drops least recently used idle chunks until want more bytes fit. */
static void cc_evict(chunkcache_t *c, size_t want)
{
	while (c->bytes + want > c->cap_bytes) {
		ccent_t *lru = NULL;
		for (size_t i = 0; i < c->n; i++) {
			ccent_t *x = c->e[i];
			if (x->refs == 0 && x->state == CC_READY && (!lru || x->used < lru->used))
				lru = x;
		}
		if (!lru)
			return; /* everything is in use: go over the bound for now */
		cc_remove(c, lru);
	}
}

/* A pinned, decoded chunk: the caller calls cc_put() when done. */
static int cc_get(chunkcache_t *c, const crypt_keys_t *key, const chunk_ref_t *ref,
		  ccent_t **out)
{
	pthread_mutex_lock(&c->lock);
	for (;;) {
		ccent_t *x = cc_find(c, &ref->digest);
		if (!x)
			break;
		if (x->state == CC_LOADING) {
			pthread_cond_wait(&c->loaded, &c->lock);
			continue; /* it may have failed and gone: look again */
		}
		x->refs++;
		x->used = ++c->tick;
		c->hits++;
		pthread_mutex_unlock(&c->lock);
		*out = x;
		return 0;
	}
	int r = 0;
	ccent_t *x = calloc(1, sizeof(*x));
	if (x && c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		ccent_t **e = realloc(c->e, cap * sizeof(*e));
		if (e) {
			c->e = e;
			c->cap = cap;
		} else {
			free(x);
			x = NULL;
		}
	}
	if (!x) {
		pthread_mutex_unlock(&c->lock);
		return -ENOMEM;
	}
	x->d = ref->digest;
	x->key = key;
	x->state = CC_LOADING;
	x->refs = 1;
	c->e[c->n++] = x;
	cc_evict(c, ref->plain_len);
	pthread_mutex_unlock(&c->lock);
	/* Decoded outside the lock: other chunks stay readable meanwhile. */
	r = chunkstore_get_key(c->cs, key, &ref->digest, &x->b);
	pthread_mutex_lock(&c->lock);
	if (r < 0) {
		cc_remove(c, x);
	} else {
		x->state = CC_READY;
		x->used = ++c->tick;
		c->bytes += x->b.len;
		c->decoded++;
		*out = x;
	}
	pthread_cond_broadcast(&c->loaded);
	pthread_mutex_unlock(&c->lock);
	return r;
}

static void cc_put(chunkcache_t *c, ccent_t *x)
{
	pthread_mutex_lock(&c->lock);
	x->refs--;
	pthread_mutex_unlock(&c->lock);
}

static void *prefetch_main(void *arg)
{
	chunkcache_t *c = arg;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->qn && !c->stop)
			pthread_cond_wait(&c->work, &c->lock);
		if (c->stop)
			break;
		chunk_ref_t ref = c->q[0];
		const crypt_keys_t *key = c->qkey[0];
		c->qn--;
		memmove(c->q, c->q + 1, c->qn * sizeof(ref));
		memmove(c->qkey, c->qkey + 1, c->qn * sizeof(key));
		pthread_mutex_unlock(&c->lock);
		ccent_t *x;
		if (cc_get(c, key, &ref, &x) == 0)
			cc_put(c, x);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Read-ahead: queue a chunk the reader will want next. */
static void cc_prefetch(chunkcache_t *c, const crypt_keys_t *key, const chunk_ref_t *ref)
{
	pthread_mutex_lock(&c->lock);
	bool queued = false;
	for (size_t i = 0; i < c->qn; i++)
		queued |= !digest_cmp(&c->q[i].digest, &ref->digest);
	if (!queued && c->qn < PREFETCH_MAX && !cc_find(c, &ref->digest)) {
		c->qkey[c->qn] = key;
		c->q[c->qn++] = *ref;
		pthread_cond_signal(&c->work);
	}
	pthread_mutex_unlock(&c->lock);
}

int chunkcache_new(chunkstore_t *cs, size_t cap_bytes, chunkcache_t **out)
{
	chunkcache_t *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cs = cs;
	c->cap_bytes = cap_bytes;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->loaded, NULL);
	pthread_cond_init(&c->work, NULL);
	int r = thread_start(&c->th, prefetch_main, c);
	if (r) {
		free(c);
		return -r;
	}
	*out = c;
	return 0;
}

void chunkcache_free(chunkcache_t *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->th, NULL);
	while (c->n)
		cc_remove(c, c->e[0]);
	free(c->e);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->loaded);
	pthread_cond_destroy(&c->work);
	free(c);
}

void chunkcache_stats(chunkcache_t *c, uint64_t *decoded, uint64_t *hits)
{
	pthread_mutex_lock(&c->lock);
	*decoded = c->decoded;
	*hits = c->hits;
	pthread_mutex_unlock(&c->lock);
}

/* ---- reading content ---- */

/* Copies len bytes of a chunk from offset at into dst (zeros past its end:
 * a damaged tree cannot make us read beyond the buffer). */
static int copy_chunk(chunkcache_t *c, const crypt_keys_t *key, const chunk_ref_t *ref,
		      uint64_t at, uint8_t *dst, size_t len)
{
	ccent_t *x;
	int r = cc_get(c, key, ref, &x);
	if (r < 0)
		return r;
	size_t have = at < x->b.len ? MIN(len, x->b.len - at) : 0;
	if (have)
		memcpy(dst, x->b.data + at, have);
	memset(dst + have, 0, len - have);
	cc_put(c, x);
	return 0;
}

/* The extent holding offset off (last with start <= off). */
static uint32_t extent_at(const sv_node_t *n, uint64_t off)
{
	uint32_t lo = 0, hi = n->e.nextent;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (n->ext_off[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

ssize_t snapview_read(const snapview_t *v, chunkcache_t *c, uint32_t idx, void *buf,
		      size_t size, uint64_t off)
{
	const sv_node_t *n = &v->n[v->n[idx].target];
	const tree_entry_t *e = &n->e;
	if (off >= e->size)
		return 0;
	size = MIN(size, e->size - off);
	uint8_t *out = buf;
	if (e->content == TREE_CONTENT_BUNDLE) {
		int r = copy_chunk(c, v->key, &e->bundle, e->bundle_off + off, out, size);
		return r < 0 ? r : (ssize_t)size;
	}
	if (e->content != TREE_CONTENT_EXTENTS || !e->nextent) {
		memset(out, 0, size);
		return size;
	}
	size_t done = 0;
	uint32_t i = extent_at(n, off);
	for (; done < size && i < e->nextent; i++) {
		const tree_extent_t *x = &e->extents[i];
		uint64_t pos = off + done;
		if (pos >= n->ext_off[i] + x->length)
			continue;
		uint64_t in = pos - n->ext_off[i];
		size_t len = MIN(size - done, x->length - in);
		if (x->kind == TREE_EXT_HOLE) {
			memset(out + done, 0, len);
		} else {
			int r = copy_chunk(c, v->key, &x->ref, in, out + done, len);
			if (r < 0)
				return r;
		}
		done += len;
	}
	memset(out + done, 0, size - done); /* past the last extent: zeros */
	/* Read-ahead: the next chunk of the file, decoded while this is used. */
	for (; i < e->nextent; i++)
		if (e->extents[i].kind == TREE_EXT_CHUNK) {
			cc_prefetch(c, v->key, &e->extents[i].ref);
			break;
		}
	return size;
}

int64_t snapview_seek(const snapview_t *v, uint32_t idx, uint64_t off, int whence_data)
{
	const sv_node_t *n = &v->n[v->n[idx].target];
	const tree_entry_t *e = &n->e;
	if (off >= e->size)
		return -ENXIO;
	bool want_data = whence_data;
	if (e->content != TREE_CONTENT_EXTENTS || !e->nextent)
		return want_data ? (int64_t)off : (int64_t)e->size;
	for (uint32_t i = extent_at(n, off); i < e->nextent; i++) {
		const tree_extent_t *x = &e->extents[i];
		if (off >= n->ext_off[i] + x->length)
			continue;
		bool data = x->kind == TREE_EXT_CHUNK;
		if (data == want_data)
			return MAX(off, n->ext_off[i]);
	}
	/* Past the extents: the rest is a hole (EOF is one too). */
	uint64_t end = n->ext_off[e->nextent - 1] + e->extents[e->nextent - 1].length;
	if (want_data)
		return -ENXIO;
	return MAX(off, MIN(end, e->size));
}
