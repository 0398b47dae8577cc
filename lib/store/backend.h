/* backend.h - where chunk blobs live durably: one interface, two kinds.
 *
 *   local  "file:///path": objects are files under a directory (a bucket
 *          on a filesystem: used for tests without a server, and as the
 *          reference behaviour of the interface);
 *   s3     "s3://bucket/prefix": objects in an S3-compatible store.
 *
 * A store whose chunks are remote keeps its .chunks directory as the
 * known-chunk set: an empty "marker" file per chunk the bucket holds (or
 * the blob itself when it is cached), so dedup and GC marking stay local
 * and cost no request (see docs/BACKENDS.md and chunkstore.h).
 *
 * Every call is a batch: put many, have many, delete many, list by page.
 * Object names: <prefix>chunks/<xxxx>/<64 hex> for chunks, <prefix>meta/<name>
 * for store metadata (the catalog copy).  Calls return 0 or a negative
 * errno; backend_errmsg() names the object and the server's answer.  A
 * backend is safe to call from several threads at once.
 */
#ifndef CAIRN_BACKEND_H
#define CAIRN_BACKEND_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "util.h"

typedef struct backend backend_t;

typedef struct backend_config {
	const char *url;        /* "s3://bucket[/prefix]" or "file:///abs/path" */
	const char *endpoint;   /* s3: "http(s)://host[:port]" */
	const char *region;     /* s3: NULL means us-east-1 */
	const char *access_key; /* s3 */
	const char *secret_key; /* s3 */
	bool virtual_host;      /* s3: bucket.host addressing */
	bool insecure;          /* s3: skip TLS verification */
	int parallel;           /* s3: connections per batch; 0 = 8 */
	int retry_seconds;      /* s3: retry budget per call; 0 = 60 */
} backend_config;

/* One object to store: its bytes in memory (data) or in a file (fd, read
 * with pread from 0); len bytes either way. */
typedef struct backend_put {
	digest_t d;
	const void *data;
	int fd;
	size_t len;
} backend_put;

/* One stored chunk, as a listing reports it. */
typedef struct backend_obj {
	digest_t d;
	int64_t mtime_ns; /* last modification (S3 LastModified) */
	uint64_t size;
} backend_obj;

/* Request counters (the local backend counts its calls the same way). */
typedef struct backend_stats {
	uint64_t put, get, head, list, delete_req, delete_keys, retries;
	uint64_t bytes_up, bytes_down;
} backend_stats;

/* Parses url and opens the backend; with create, makes the bucket (or
 * directory) if missing.  Returns 0, -EINVAL (bad url or settings: why in
 * errbuf), -EACCES, -ETIMEDOUT, -EIO.  errbuf may be NULL. */
int backend_open(const backend_config *cfg, bool create, backend_t **out, char *errbuf,
		 size_t errlen);
void backend_close(backend_t *be);

/* "s3" or "local". */
const char *backend_kind(const backend_t *be);
/* The last failure's detail (never NULL). */
const char *backend_errmsg(backend_t *be);
/* The calling thread's last failure message.  backend_errmsg is shared
 * by every thread and says what failed last anywhere; backends also
 * record each failure here, in the thread that made the call, so that a
 * thread reporting its own failure names it and not another thread's. */
const char *backend_thread_errmsg(void);
/* For backends: records msg as the calling thread's last failure. */
void backend_note_error(const char *msg);
/* Whether the calling thread's last failure was the bucket not existing
 * (S3 only; its message begins "no such bucket NAME"): the whole store
 * is out of reach, not the object asked for.  backend_note_no_bucket
 * says so, for backends, after backend_note_error. */
bool backend_thread_no_bucket(void);
void backend_note_no_bucket(void);
void backend_get_stats(backend_t *be, backend_stats *out);

/* Stores n chunk blobs (parallel where the backend can).  errs (may be
 * NULL) gets each one's result; returns 0 or the first error. */
int backend_put_many(backend_t *be, size_t n, const backend_put *items, int *errs);
/* Which of n chunks exist (have[i]).  Returns 0 or an error. */
int backend_have_many(backend_t *be, size_t n, const digest_t *d, bool *have);
/* Reads one blob into out (replaced).  -ENOENT when missing. */
int backend_get(backend_t *be, const digest_t *d, buf_t *out);
/* Deletes n chunks (S3: DeleteObjects, 1000 a request); missing ones count
 * as deleted. */
int backend_delete_many(backend_t *be, size_t n, const digest_t *d);
/* One page of the chunk listing (at most 1000).  *cursor: NULL to start;
 * replaced by the next page's cursor, NULL after the last page (free()).
 * *objs: new array, free(); objects whose names are not chunk names are
 * skipped. */
int backend_list_page(backend_t *be, char **cursor, backend_obj **objs, size_t *n);

/* While flag (NULL: none) is set, requests that wait or retry end with
 * -EINTR (a signal stopping the command; one flag for the process). */
void backend_set_stop(const volatile sig_atomic_t *flag);

/* Store metadata objects (name: [a-z0-9._-]+): whole-object put, get and
 * delete (a missing one is deleted already).  A meta object may be up to
 * BACKEND_META_MAX bytes (the catalog copy grows with the snapshots), far
 * over the bound of chunk objects and listings: whatever put_meta stores,
 * get_meta reads back. */
#define BACKEND_META_MAX ((uint64_t)4 << 30)
int backend_put_meta(backend_t *be, const char *name, int fd, size_t len);
/* The same, only where the object does not exist yet (S3: a conditional
 * PUT, If-None-Match: *): -EEXIST when it does.  A retried request whose
 * first try landed also sees -EEXIST: read the object back to tell.
 * -EOPNOTSUPP: the backend cannot write conditionally. */
int backend_put_meta_new(backend_t *be, const char *name, int fd, size_t len);
/* Reads meta/name whole into out: an object over max bytes (at most
 * BACKEND_META_MAX) is an error (-EIO on S3, -EFBIG locally) that
 * backend_errmsg names it in, read no further than max. */
int backend_get_meta(backend_t *be, const char *name, buf_t *out, uint64_t max);
/* The same into fd (truncated first), never whole in memory: the way to
 * read an object that may be up to BACKEND_META_MAX bytes. */
int backend_get_meta_fd(backend_t *be, const char *name, int fd);
int backend_delete_meta(backend_t *be, const char *name);

/* Internal: the operations table each kind provides. */
typedef struct backend_ops {
	const char *kind;
	int (*put_many)(backend_t *, size_t, const backend_put *, int *);
	int (*have_many)(backend_t *, size_t, const digest_t *, bool *);
	int (*get)(backend_t *, const digest_t *, buf_t *);
	int (*delete_many)(backend_t *, size_t, const digest_t *);
	int (*list_page)(backend_t *, char **, backend_obj **, size_t *);
	int (*put_meta)(backend_t *, const char *, int, size_t, bool only_new);
	int (*get_meta)(backend_t *, const char *, buf_t *, uint64_t max);
	int (*get_meta_fd)(backend_t *, const char *, int);
	int (*delete_meta)(backend_t *, const char *);
	void (*stats)(backend_t *, backend_stats *);
	const char *(*errmsg)(backend_t *);
	void (*close)(backend_t *);
} backend_ops;

struct backend {
	const backend_ops *ops;
};

int backend_local_open(const char *path, bool create, backend_t **out, char *errbuf,
		       size_t errlen);
int backend_s3_open(const backend_config *cfg, const char *bucket, const char *prefix,
		    bool create, backend_t **out, char *errbuf, size_t errlen);

/* "chunks/xxxx/<hex>" for d (no prefix); out has room for 76 bytes. */
void backend_chunk_name(const digest_t *d, char out[80]);
/* Parses "chunks/xxxx/<hex>" (after the prefix); 0 or -EINVAL. */
int backend_parse_chunk_name(const char *name, digest_t *d);

#endif
