/* backend_s3.c - chunk backend on S3 (lib/s3.c does the HTTP).
 *
 * An s3 handle is single-threaded, so the backend keeps a small pool:
 * a call borrows a handle, runs its (internally parallel) batch and gives
 * it back.  Readers on several threads (verify, restore) thus each get a
 * connection set of their own.  Statistics sum over the pool.
 */
#include "store/backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3.h"

#define POOL 4

typedef struct s3be {
	backend_t be;
	char *prefix;
	s3_t *h[POOL];
	bool busy[POOL];
	pthread_mutex_t lock;
	pthread_cond_t freed;
	char err[640];
} s3be_t;

static s3_t *borrow(s3be_t *b, int *slot)
{
	pthread_mutex_lock(&b->lock);
	for (;;) {
		for (int i = 0; i < POOL; i++) {
			if (!b->busy[i]) {
				b->busy[i] = true;
				*slot = i;
				pthread_mutex_unlock(&b->lock);
				return b->h[i];
			}
		}
		pthread_cond_wait(&b->freed, &b->lock);
	}
}

/* Gives the handle back, keeping its error message when r failed. */
static int give_back(s3be_t *b, int slot, int r)
{
	if (r < 0) { /* the handle is still ours */
		backend_note_error(s3_errmsg(b->h[slot]));
		if (s3_no_bucket(b->h[slot]))
			backend_note_no_bucket();
	}
	pthread_mutex_lock(&b->lock);
	if (r < 0)
		snprintf(b->err, sizeof(b->err), "%s", s3_errmsg(b->h[slot]));
	b->busy[slot] = false;
	pthread_cond_signal(&b->freed);
	pthread_mutex_unlock(&b->lock);
	return r;
}

static char *key_of(s3be_t *b, const digest_t *d)
{
	char name[80], *k;
	backend_chunk_name(d, name);
	return asprintf(&k, "%s%s", b->prefix, name) < 0 ? NULL : k;
}

static void free_keys(char **keys, size_t n)
{
	for (size_t i = 0; keys && i < n; i++)
		free(keys[i]);
	free(keys);
}

static char **keys_of(s3be_t *b, size_t n, const digest_t *d, size_t stride)
{
	char **keys = calloc(n, sizeof(*keys));
	for (size_t i = 0; keys && i < n; i++) {
		keys[i] = key_of(b, (const digest_t *)((const char *)d + i * stride));
		if (!keys[i]) {
			free_keys(keys, i);
			return NULL;
		}
	}
	return keys;
}

static int s3be_put_many(backend_t *be, size_t n, const backend_put *items, int *errs)
{
	s3be_t *b = (s3be_t *)be;
	char **keys = keys_of(b, n, &items[0].d, sizeof(*items));
	s3_body *bodies = calloc(n, sizeof(*bodies));
	if (!keys || !bodies) {
		free_keys(keys, n);
		free(bodies);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		bodies[i] = (s3_body){.data = items[i].data, .fd = items[i].fd, .len = items[i].len};
	int slot;
	s3_t *h = borrow(b, &slot);
	int r = give_back(b, slot, s3_put_many(h, n, keys, bodies, errs));
	free_keys(keys, n);
	free(bodies);
	return r;
}

static int s3be_have_many(backend_t *be, size_t n, const digest_t *d, bool *have)
{
	s3be_t *b = (s3be_t *)be;
	char **keys = keys_of(b, n, d, sizeof(*d));
	if (!keys)
		return -ENOMEM;
	int slot;
	s3_t *h = borrow(b, &slot);
	int r = give_back(b, slot, s3_have_many(h, n, keys, have));
	free_keys(keys, n);
	return r;
}

static int s3be_get(backend_t *be, const digest_t *d, buf_t *out)
{
	s3be_t *b = (s3be_t *)be;
	char *k = key_of(b, d);
	if (!k)
		return -ENOMEM;
	int slot;
	s3_t *h = borrow(b, &slot);
	int r = give_back(b, slot, s3_get(h, k, out));
	free(k);
	return r;
}

static int s3be_delete_many(backend_t *be, size_t n, const digest_t *d)
{
	s3be_t *b = (s3be_t *)be;
	char **keys = keys_of(b, n, d, sizeof(*d));
	if (!keys)
		return -ENOMEM;
	int slot;
	s3_t *h = borrow(b, &slot);
	int r = give_back(b, slot, s3_delete_many(h, n, keys));
	free_keys(keys, n);
	return r;
}

static int s3be_list_page(backend_t *be, char **cursor, backend_obj **objs, size_t *n)
{
	s3be_t *b = (s3be_t *)be;
	*objs = NULL;
	*n = 0;
	char *pfx;
	if (asprintf(&pfx, "%schunks/", b->prefix) < 0)
		return -ENOMEM;
	s3_object *o = NULL;
	size_t no = 0;
	int slot;
	s3_t *h = borrow(b, &slot);
	int r = give_back(b, slot, s3_list_page(h, pfx, cursor, &o, &no));
	free(pfx);
	if (r < 0)
		return r;
	backend_obj *v = calloc(no ? no : 1, sizeof(*v));
	if (!v) {
		s3_objects_free(o, no);
		return -ENOMEM;
	}
	size_t plen = strlen(b->prefix), k = 0;
	for (size_t i = 0; i < no; i++) {
		/* Not ours (a stray upload, or a key a broken or hostile server
		 * lists outside the prefix asked for): never touched. */
		if (strncmp(o[i].key, b->prefix, plen) ||
		    backend_parse_chunk_name(o[i].key + plen, &v[k].d) < 0)
			continue;
		v[k].mtime_ns = (int64_t)o[i].mtime * 1000000000;
		v[k].size = o[i].size;
		k++;
	}
	s3_objects_free(o, no);
	*objs = v;
	*n = k;
	return 0;
}

enum meta_op { META_PUT, META_PUT_NEW, META_GET, META_GET_FD, META_DELETE };

/* One request on PREFIX/meta/<name>; a GET reads up to max bytes. */
static int meta_run(backend_t *be, const char *name, enum meta_op op, int fd, size_t len,
		    buf_t *out, uint64_t max)
{
	s3be_t *b = (s3be_t *)be;
	char *k;
	if (asprintf(&k, "%smeta/%s", b->prefix, name) < 0)
		return -ENOMEM;
	s3_body body = {.fd = fd, .len = len};
	int slot;
	s3_t *h = borrow(b, &slot);
	int r = op == META_PUT	     ? s3_put_many(h, 1, &k, &body, NULL)
		: op == META_PUT_NEW ? s3_put_new(h, k, &body)
		: op == META_GET     ? s3_get_max(h, k, out, max)
		: op == META_GET_FD  ? s3_get_fd(h, k, fd, max)
				     : s3_delete_many(h, 1, &k);
	r = give_back(b, slot, r);
	free(k);
	return r;
}

static int s3be_put_meta(backend_t *be, const char *name, int fd, size_t len, bool only_new)
{
	return meta_run(be, name, only_new ? META_PUT_NEW : META_PUT, fd, len, NULL, 0);
}

static int s3be_get_meta(backend_t *be, const char *name, buf_t *out, uint64_t max)
{
	return meta_run(be, name, META_GET, -1, 0, out, max);
}

static int s3be_get_meta_fd(backend_t *be, const char *name, int fd)
{
	return meta_run(be, name, META_GET_FD, fd, 0, NULL, BACKEND_META_MAX);
}

static int s3be_delete_meta(backend_t *be, const char *name)
{
	return meta_run(be, name, META_DELETE, -1, 0, NULL, 0);
}

static void s3be_stats(backend_t *be, backend_stats *out)
{
	s3be_t *b = (s3be_t *)be;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&b->lock);
	for (int i = 0; i < POOL; i++) {
		s3_stats s;
		s3_get_stats(b->h[i], &s);
		out->put += s.put;
		out->get += s.get;
		out->head += s.head;
		out->list += s.list;
		out->delete_req += s.delete_req;
		out->delete_keys += s.delete_keys;
		out->retries += s.retries;
		out->bytes_up += s.bytes_up;
		out->bytes_down += s.bytes_down;
	}
	pthread_mutex_unlock(&b->lock);
}

static const char *s3be_errmsg(backend_t *be)
{
	return ((s3be_t *)be)->err;
}

static void s3be_close(backend_t *be)
{
	s3be_t *b = (s3be_t *)be;
	for (int i = 0; i < POOL; i++)
		s3_close(b->h[i]);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->freed);
	free(b->prefix);
	free(b);
}

static const backend_ops s3_ops = {
	.kind = "s3",
	.put_many = s3be_put_many,
	.have_many = s3be_have_many,
	.get = s3be_get,
	.delete_many = s3be_delete_many,
	.list_page = s3be_list_page,
	.put_meta = s3be_put_meta,
	.get_meta = s3be_get_meta,
	.get_meta_fd = s3be_get_meta_fd,
	.delete_meta = s3be_delete_meta,
	.stats = s3be_stats,
	.errmsg = s3be_errmsg,
	.close = s3be_close,
};

int backend_s3_open(const backend_config *cfg, const char *bucket, const char *prefix,
		    bool create, backend_t **out, char *errbuf, size_t errlen)
{
	s3be_t *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->be.ops = &s3_ops;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->freed, NULL);
	b->prefix = strdup(prefix);
	s3_config c = {.endpoint = cfg->endpoint,
		       .bucket = bucket,
		       .region = cfg->region,
		       .access_key = cfg->access_key,
		       .secret_key = cfg->secret_key,
		       .virtual_host = cfg->virtual_host,
		       .insecure = cfg->insecure,
		       .parallel = cfg->parallel,
		       .retry_seconds = cfg->retry_seconds};
	int r = b->prefix ? 0 : -ENOMEM;
	for (int i = 0; i < POOL && !r; i++)
		r = s3_open(&c, &b->h[i]);
	if (r == -EINVAL && errbuf)
		snprintf(errbuf, errlen, "bad endpoint '%s' (want http(s)://host[:port])",
			 cfg->endpoint);
	if (!r && create) {
		r = s3_create_bucket(b->h[0]);
		if (r < 0 && errbuf)
			snprintf(errbuf, errlen, "%s", s3_errmsg(b->h[0]));
	}
	if (r < 0) {
		s3be_close(&b->be);
		return r;
	}
	*out = &b->be;
	return 0;
}
