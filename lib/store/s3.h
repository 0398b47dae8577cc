/* s3.h - a small S3 client on libcurl: batched object calls with retries.
 *
 * Every request is signed by libcurl itself (CURLOPT_AWS_SIGV4); bodies
 * carry their SHA-256 in x-amz-content-sha256.  Many requests run at once
 * over up to `parallel` connections (curl multi).  A request that fails
 * with a connection error, HTTP 500/502/503/504, 429 or SlowDown (or a
 * listing or DeleteObjects answered 200 with an <Error> document whose code
 * is SlowDown, InternalError, ServiceUnavailable or RequestTimeout) is
 * retried with exponential backoff until the retry budget (seconds) is spent: that
 * long without a success of any of the call's requests (an answer that is
 * the request's result counts: 404 for a missing key, 412 for a taken
 * one); then the call fails and s3_errmsg() says what the last answer was.
 *
 * Errors: 0 or a negative errno.  -ENOENT (404 / NoSuchKey), -EACCES
 * (403), -ETIMEDOUT (retry budget spent), -EIO (any other failure), -EINVAL
 * (bad settings), -ENOMEM.  The handle is not thread safe: one caller at a
 * time (chunkstore serialises its calls).
 */
#ifndef CAIRN_S3_H
#define CAIRN_S3_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "util.h"

typedef struct s3 s3_t;

typedef struct s3_config {
	const char *endpoint;   /* "http://host:port" or "https://host" */
	const char *bucket;
	const char *region;     /* NULL: "us-east-1" */
	const char *access_key; /* required */
	const char *secret_key; /* required */
	bool virtual_host;      /* bucket.host/key instead of host/bucket/key */
	bool insecure;          /* do not verify TLS certificates */
	int parallel;           /* connections; 0: 8 */
	int retry_seconds;      /* retry budget: a call's time without a success; 0: 60 */
} s3_config;

/* Request counters, by kind. */
typedef struct s3_stats {
	uint64_t put, get, head, list, delete_req, delete_keys, other, retries;
	uint64_t bytes_up, bytes_down;
} s3_stats;

/* An object body to upload: from memory (data) or from a file (fd, read
 * with pread from offset 0). */
typedef struct s3_body {
	const void *data;
	int fd;
	size_t len;
} s3_body;

/* One entry of a listing page. */
typedef struct s3_object {
	char *key;
	time_t mtime; /* LastModified */
	uint64_t size;
} s3_object;

/* Opens a client; strings are copied.  Returns 0, -EINVAL, -ENOMEM. */
int s3_open(const s3_config *cfg, s3_t **out);
void s3_close(s3_t *s);

/* The reason for the last failure (never NULL; "" when none). */
const char *s3_errmsg(const s3_t *s);
void s3_get_stats(const s3_t *s, s3_stats *out);

/* Creates the bucket; an existing bucket owned by us is fine. */
int s3_create_bucket(s3_t *s);

/* Uploads n objects in parallel.  Returns 0 when all landed, else the
 * first error; errs (may be NULL) gets each object's result. */
int s3_put_many(s3_t *s, size_t n, char *const *keys, const s3_body *bodies, int *errs);

/* Uploads one object only if the key is free (If-None-Match: *); -EEXIST
 * when the server says it exists (HTTP 412), -EOPNOTSUPP when it does not
 * do conditional writes (HTTP 501).  A server that ignores the condition
 * replaces the object, so read it back to know who won. */
int s3_put_new(s3_t *s, const char *key, const s3_body *body);

/* Downloads one object into out (replaced).  -ENOENT when missing; -EIO
 * when the answer is over 64 MiB (no chunk or listing is bigger). */
int s3_get(s3_t *s, const char *key, buf_t *out);
/* The same with a bound of max bytes instead (an object known to grow). */
int s3_get_max(s3_t *s, const char *key, buf_t *out, uint64_t max);
/* The same into fd (truncated, written from offset 0; a retry starts it
 * again), never whole in memory: an object up to max bytes. */
int s3_get_fd(s3_t *s, const char *key, int fd, uint64_t max);

/* Fetches n objects in parallel into outs[i]; errs[i] per object. */
int s3_get_many(s3_t *s, size_t n, char *const *keys, buf_t *outs, int *errs);

/* Asks whether n objects exist (parallel HEAD): have[i] set.  Returns 0
 * or the first error that is not "missing".  A HEAD's 404 cannot tell a
 * missing key from a missing bucket, so after any, the bucket is asked
 * too: a missing one is -EIO (s3_no_bucket), not n missing objects. */
int s3_have_many(s3_t *s, size_t n, char *const *keys, bool *have);
/* Whether the last call failed because the bucket does not exist (a 404
 * NoSuchBucket, or s3_have_many's check); s3_errmsg then begins "no such
 * bucket NAME". */
bool s3_no_bucket(const s3_t *s);

/* Deletes n objects with DeleteObjects, 1000 keys a request.  A key that
 * does not exist counts as deleted.  Returns 0 or the first error. */
int s3_delete_many(s3_t *s, size_t n, char *const *keys);

/* Lists one page (at most 1000 keys) of objects whose key starts with
 * prefix.  *token: NULL for the first page; replaced by the next page's
 * cursor (the server's continuation token and the last key listed), or
 * NULL after the last page (free with free()).  *objs is a new array of
 * *nobjs entries; free with s3_objects_free.  Keys must come in ascending
 * order, each after the last key of the page before: a listing that goes
 * back (continuation tokens in a cycle) is -EIO, never endless; so are
 * empty truncated pages whose tokens cycle. */
int s3_list_page(s3_t *s, const char *prefix, char **token, s3_object **objs, size_t *nobjs);
void s3_objects_free(s3_object *objs, size_t n);

/* A flag (one for the process, NULL: none) that, once set (by a signal
 * handler), makes every request still waiting or retrying end with
 * -EINTR instead of spending its retry budget. */
void s3_set_stop(const volatile sig_atomic_t *flag);

#endif
