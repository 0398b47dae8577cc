/* backend.c - chunk backends: URL parsing, object names, dispatch. */
#include "store/backend.h"
#include "store/s3.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void backend_chunk_name(const digest_t *d, char out[80])
{
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(d, hex);
	snprintf(out, 80, "chunks/%.4s/%s", hex, hex);
}

int backend_parse_chunk_name(const char *name, digest_t *d)
{
	/* "chunks/" 7 + "xxxx/" 5 + 64 hex */
	if (strlen(name) != 7 + 5 + DIGEST_HEX_LEN || strncmp(name, "chunks/", 7) ||
	    name[11] != '/' || memcmp(name + 7, name + 12, 4))
		return -EINVAL;
	return digest_from_hex(name + 12, d);
}

/* A prefix of S3's safe characters whose components are neither empty
 * nor "." nor "..": an HTTP client would resolve those (the objects would
 * land elsewhere than the listing looks, or outside the bucket). */
static bool prefix_ok(const char *p, size_t len)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789!-_.*'()/";
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && p[i] != '/') {
			if (!strchr(safe, p[i]))
				return false;
			continue;
		}
		size_t n = i - start;
		if (len && (n == 0 || (n == 1 && p[start] == '.') ||
			    (n == 2 && p[start] == '.' && p[start + 1] == '.')))
			return false;
		start = i + 1;
	}
	return true;
}

static void errput(char *errbuf, size_t errlen, const char *msg)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", msg);
}

/* S3 bucket names: 3-63 of [a-z0-9.-], starting and ending alphanumeric. */
static bool bucket_name_ok(const char *b, size_t n)
{
	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = b[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
			return false;
	}
	return b[0] != '.' && b[0] != '-' && b[n - 1] != '.' && b[n - 1] != '-';
}

int backend_open(const backend_config *cfg, bool create, backend_t **out, char *errbuf,
		 size_t errlen)
{
	*out = NULL;
	const char *url = cfg->url ? cfg->url : "";
	if (!strncmp(url, "file://", 7)) {
		if (url[7] != '/') {
			errput(errbuf, errlen, "a file:// location needs an absolute path");
			return -EINVAL;
		}
		return backend_local_open(url + 7, create, out, errbuf, errlen);
	}
	if (strncmp(url, "s3://", 5)) {
		errput(errbuf, errlen, "chunk location must be s3://BUCKET[/PREFIX] or file:///PATH");
		return -EINVAL;
	}
	const char *b = url + 5, *slash = strchr(b, '/');
	size_t blen = slash ? (size_t)(slash - b) : strlen(b);
	if (!bucket_name_ok(b, blen)) {
		errput(errbuf, errlen, "bad bucket name (3-63 of a-z, 0-9, '.', '-')");
		return -EINVAL;
	}
	/* The prefix always ends in '/' so that names never run together. */
	char bucket[64], prefix[512];
	snprintf(bucket, sizeof(bucket), "%.*s", (int)blen, b);
	const char *p = slash ? slash + 1 : "";
	size_t plen = strlen(p);
	while (plen && p[plen - 1] == '/')
		plen--;
	if (plen > 400 || !prefix_ok(p, plen)) {
		errput(errbuf, errlen,
		       "bad prefix (over 400 bytes, an empty, '.' or '..' component, or a "
		       "character other than A-Z a-z 0-9 ! - _ . * ' ( ) /)");
		return -EINVAL;
	}
	snprintf(prefix, sizeof(prefix), "%.*s%s", (int)plen, p, plen ? "/" : "");
	if (!cfg->endpoint || !*cfg->endpoint) {
		errput(errbuf, errlen, "no endpoint (--endpoint or CAIRN_S3_ENDPOINT)");
		return -EINVAL;
	}
	if (!cfg->access_key || !cfg->secret_key || !*cfg->access_key || !*cfg->secret_key) {
		errput(errbuf, errlen,
		       "no credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a "
		       "credentials file)");
		return -EINVAL;
	}
	return backend_s3_open(cfg, bucket, prefix, create, out, errbuf, errlen);
}

void backend_close(backend_t *be)
{
	if (be)
		be->ops->close(be);
}

const char *backend_kind(const backend_t *be)
{
	return be->ops->kind;
}

const char *backend_errmsg(backend_t *be)
{
	return be->ops->errmsg(be);
}

static __thread char thread_err[512];
/* The calling thread's last failure was a missing bucket. */
static __thread bool thread_no_bucket;

const char *backend_thread_errmsg(void)
{
	return thread_err;
}

void backend_note_error(const char *msg)
{
	snprintf(thread_err, sizeof(thread_err), "%s", msg);
	thread_no_bucket = false;
}

void backend_note_no_bucket(void)
{
	thread_no_bucket = true;
}

bool backend_thread_no_bucket(void)
{
	return thread_no_bucket;
}

void backend_get_stats(backend_t *be, backend_stats *out)
{
	be->ops->stats(be, out);
}

int backend_put_many(backend_t *be, size_t n, const backend_put *items, int *errs)
{
	return n ? be->ops->put_many(be, n, items, errs) : 0;
}

int backend_have_many(backend_t *be, size_t n, const digest_t *d, bool *have)
{
	return n ? be->ops->have_many(be, n, d, have) : 0;
}

int backend_get(backend_t *be, const digest_t *d, buf_t *out)
{
	return be->ops->get(be, d, out);
}

int backend_delete_many(backend_t *be, size_t n, const digest_t *d)
{
	return n ? be->ops->delete_many(be, n, d) : 0;
}

int backend_list_page(backend_t *be, char **cursor, backend_obj **objs, size_t *n)
{
	return be->ops->list_page(be, cursor, objs, n);
}

static bool meta_name_ok(const char *name)
{
	if (!*name || strlen(name) > 64)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' ||
		      *p == '_' || *p == '-'))
			return false;
	return true;
}

int backend_put_meta(backend_t *be, const char *name, int fd, size_t len)
{
	return meta_name_ok(name) ? be->ops->put_meta(be, name, fd, len, false) : -EINVAL;
}

int backend_put_meta_new(backend_t *be, const char *name, int fd, size_t len)
{
	return meta_name_ok(name) ? be->ops->put_meta(be, name, fd, len, true) : -EINVAL;
}

int backend_get_meta(backend_t *be, const char *name, buf_t *out, uint64_t max)
{
	return meta_name_ok(name) ? be->ops->get_meta(be, name, out, MIN(max, BACKEND_META_MAX))
				  : -EINVAL;
}

int backend_get_meta_fd(backend_t *be, const char *name, int fd)
{
	return meta_name_ok(name) ? be->ops->get_meta_fd(be, name, fd) : -EINVAL;
}

int backend_delete_meta(backend_t *be, const char *name)
{
	return meta_name_ok(name) ? be->ops->delete_meta(be, name) : -EINVAL;
}

void backend_set_stop(const volatile sig_atomic_t *flag)
{
	s3_set_stop(flag); /* the only backend that waits */
}
