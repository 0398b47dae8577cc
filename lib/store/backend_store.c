/* backend_store.c - a store whose chunks live in a backend: its settings
 * file, attaching the backend on open, the catalog copy in the bucket
 * after each command's commits, and rebuilding a store from a bucket.
 *
 * <store>/backend.conf holds "key = value" lines (never credentials):
 *   chunks = s3://BUCKET/PREFIX | file:///PATH
 *   endpoint = http(s)://host[:port]      (default $CAIRN_S3_ENDPOINT)
 *   region = us-east-1
 *   addressing = path | virtual
 *   tls_verify = yes | no
 *   credentials_file = /path             (AWS style: aws_access_key_id = ...)
 *   store_id = 16 hex digits              (the claim on the prefix, below)
 * Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, else the
 * credentials file.
 */
#include "store/backend.h"
#include "store/chunkcache.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#define CONF_NAME "backend.conf"
#define STALE_NAME "catalog.remote-stale"
#define CATALOG_OBJECT "catalog.db"
#define CLAIM_OBJECT "store-id"
#define UPLOAD_LOCK "catalog.upload.lock"

static __thread char init_err[1024];

const char *cairn_store_init_errdetail(void)
{
	return init_err;
}

void store_init_err_clear(void)
{
	init_err[0] = 0;
}

typedef struct bconf {
	char chunks[512], endpoint[256], region[64], addressing[16], tls_verify[8];
	char credentials_file[512], store_id[24];
	char access_key[256], secret_key[256];
} bconf_t;

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
	return s;
}

/* Reads "key = value" lines; calls set for each.  -errno on open failure,
 * -EINVAL naming the line on a line without '='. */
static int read_kv(const char *path, int (*set)(void *, const char *, const char *), void *arg,
		   char *why, size_t whylen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	char line[1024];
	int r = 0, no = 0;
	while (!r && fgets(line, sizeof(line), f)) {
		no++;
		char *l = trim(line);
		if (!*l || *l == '#' || *l == '[')
			continue;
		char *eq = strchr(l, '=');
		if (!eq) {
			snprintf(why, whylen, "%s:%d: expected 'key = value'", path, no);
			r = -EINVAL;
			break;
		}
		*eq = 0;
		r = set(arg, trim(l), trim(eq + 1));
		if (r < 0)
			snprintf(why, whylen, "%s:%d: bad setting '%s'", path, no, trim(l));
	}
	fclose(f);
	return r;
}

static int conf_set(void *arg, const char *k, const char *v)
{
	bconf_t *c = arg;
	struct {
		const char *key;
		char *dst;
		size_t len;
	} t[] = {{"chunks", c->chunks, sizeof(c->chunks)},
		 {"endpoint", c->endpoint, sizeof(c->endpoint)},
		 {"region", c->region, sizeof(c->region)},
		 {"addressing", c->addressing, sizeof(c->addressing)},
		 {"tls_verify", c->tls_verify, sizeof(c->tls_verify)},
		 {"credentials_file", c->credentials_file, sizeof(c->credentials_file)},
		 {"store_id", c->store_id, sizeof(c->store_id)}};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		if (!strcmp(k, t[i].key)) {
			if (strlen(v) >= t[i].len)
				return -EINVAL;
			strcpy(t[i].dst, v);
			return 0;
		}
	}
	return -EINVAL;
}

static int cred_set(void *arg, const char *k, const char *v)
{
	bconf_t *c = arg;
	char *dst = !strcmp(k, "aws_access_key_id")	? c->access_key
		    : !strcmp(k, "aws_secret_access_key") ? c->secret_key
							  : NULL;
	if (dst && !*dst && strlen(v) < sizeof(c->access_key))
		strcpy(dst, v);
	return 0; /* other keys of an AWS credentials file are not ours */
}

static int validate_conf(const bconf_t *c, char *why, size_t whylen)
{
	if (*c->addressing && strcmp(c->addressing, "path") && strcmp(c->addressing, "virtual")) {
		snprintf(why, whylen, "addressing must be 'path' or 'virtual'");
		return -EINVAL;
	}
	if (*c->tls_verify && strcmp(c->tls_verify, "yes") && strcmp(c->tls_verify, "no")) {
		snprintf(why, whylen, "tls_verify must be 'yes' or 'no'");
		return -EINVAL;
	}
	return 0;
}

/* Credentials: the environment first, then the credentials file. */
static int load_credentials(bconf_t *c, char *why, size_t whylen)
{
	const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
	if (ak && sk && *ak && *sk) {
		snprintf(c->access_key, sizeof(c->access_key), "%s", ak);
		snprintf(c->secret_key, sizeof(c->secret_key), "%s", sk);
		return 0;
	}
	if (*c->credentials_file)
		return read_kv(c->credentials_file, cred_set, c, why, whylen);
	return 0; /* backend_open names what is missing */
}

static int open_backend(bconf_t *c, bool create, int parallel, int retry, backend_t **out,
			char *why, size_t whylen)
{
	if (!*c->endpoint) {
		const char *e = getenv("CAIRN_S3_ENDPOINT");
		snprintf(c->endpoint, sizeof(c->endpoint), "%s", e ? e : "");
	}
	int r = load_credentials(c, why, whylen);
	if (r < 0)
		return r;
	backend_config bc = {.url = c->chunks,
			     .endpoint = c->endpoint,
			     .region = *c->region ? c->region : NULL,
			     .access_key = c->access_key,
			     .secret_key = c->secret_key,
			     .virtual_host = !strcmp(c->addressing, "virtual"),
			     .insecure = !strcmp(c->tls_verify, "no"),
			     .parallel = parallel,
			     .retry_seconds = retry};
	r = backend_open(&bc, create, out, why, whylen);
	explicit_bzero(c->secret_key, sizeof(c->secret_key));
	return r;
}

/* Puts text in place as backend.conf, whole or not at all, durably. */
static int conf_replace(int dfd, const char *text, size_t n)
{
	int fd = openat(dfd, CONF_NAME ".tmp", O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int r = write_full(fd, text, n);
	if (!r && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (!r && renameat(dfd, CONF_NAME ".tmp", dfd, CONF_NAME) < 0)
		r = -errno;
	if (!r && fsync(dfd) < 0)
		r = -errno;
	return r;
}

static int write_conf(int dfd, const bconf_t *c)
{
	char text[2048];
	int n = snprintf(text, sizeof(text),
			 "# cairn: where this store's chunks live (docs/BACKENDS.md)\n"
			 "chunks = %s\n%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s",
			 c->chunks, *c->endpoint ? "endpoint = " : "", c->endpoint,
			 *c->endpoint ? "\n" : "", *c->region ? "region = " : "", c->region,
			 *c->region ? "\n" : "", *c->addressing ? "addressing = " : "",
			 c->addressing, *c->addressing ? "\n" : "", *c->tls_verify ? "tls_verify = " : "",
			 c->tls_verify, *c->tls_verify ? "\n" : "",
			 *c->credentials_file ? "credentials_file = " : "", c->credentials_file,
			 *c->credentials_file ? "\n" : "", *c->store_id ? "store_id = " : "",
			 c->store_id, *c->store_id ? "\n" : "");
	if (n < 0 || (size_t)n >= sizeof(text))
		return -EINVAL;
	return conf_replace(dfd, text, n);
}

/* Records a new store_id in an existing backend.conf, keeping the rest
 * of it as written (a hand's comments too); an older store_id line, of
 * a claim that is gone, is dropped. */
static int conf_set_store_id(int dfd, const char *id)
{
	int fd = openat(dfd, CONF_NAME, O_RDONLY | O_CLOEXEC);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
	if (!f) {
		int e = -errno;
		if (fd >= 0)
			close(fd);
		return e;
	}
	buf_t out = {0};
	char line[1024];
	int r = 0;
	while (!r && fgets(line, sizeof(line), f)) {
		char *k = line + strspn(line, " \t");
		bool old_id = !strncmp(k, "store_id", 8) && k[8] && strchr(" \t=", k[8]);
		if (!old_id)
			r = buf_append(&out, line, strlen(line));
	}
	fclose(f);
	char add[64];
	int n = snprintf(add, sizeof(add), "%sstore_id = %s\n",
			 out.len && out.data[out.len - 1] != '\n' ? "\n" : "", id);
	if (!r)
		r = buf_append(&out, add, n);
	if (!r)
		r = conf_replace(dfd, (const char *)out.data, out.len);
	buf_free(&out);
	return r;
}

static void fill_conf(bconf_t *c, const cairn_init_opts *o)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->chunks, sizeof(c->chunks), "%s", o->chunks);
	snprintf(c->endpoint, sizeof(c->endpoint), "%s",
		 o->endpoint ? o->endpoint : getenv("CAIRN_S3_ENDPOINT") ? getenv("CAIRN_S3_ENDPOINT") : "");
	snprintf(c->region, sizeof(c->region), "%s", o->region ? o->region : "");
	snprintf(c->addressing, sizeof(c->addressing), "%s",
		 o->virtual_host ? "virtual" : "");
	snprintf(c->credentials_file, sizeof(c->credentials_file), "%s",
		 o->credentials_file ? o->credentials_file : "");
}

/* ---- the claim on a prefix ----
 *
 * Two stores sharing a prefix would each take the other's objects for
 * garbage.  init claims the prefix: a random id in meta/store-id, kept in
 * backend.conf; the bucket sweep deletes nothing unless the two agree. */

/* The most a claim may hold: what id[24] takes (ids are 16 hex digits).
 * Anything longer is no claim of ours, and the read stops there: a broken
 * or hostile server cannot make us hold a meta object's 4 GiB for it. */
#define CLAIM_MAX 23

/* The prefix's claim: 0 (id set), -ENOENT (none), or a backend error (one
 * over CLAIM_MAX bytes too, named in backend_errmsg). */
static int claim_get(backend_t *be, char id[24])
{
	buf_t b = {0};
	int r = backend_get_meta(be, CLAIM_OBJECT, &b, CLAIM_MAX);
	if (r == 0)
		snprintf(id, 24, "%.*s", (int)MIN(b.len, (size_t)23), (const char *)b.data);
	buf_free(&b);
	return r;
}

/* A new random id for this store, to record (backend.conf) before the
 * claim is written, so that a command killed in between knows it. */
static void claim_new_id(bconf_t *c)
{
	snprintf(c->store_id, sizeof(c->store_id), "%016llx", (unsigned long long)random_u64());
}

/* Claims the prefix for c->store_id: a write that only creates
 * (If-None-Match: *), then read back.  The condition makes two claims at
 * the same moment end with one winner; the read back decides where the
 * first try of a retried write had landed (its retry then finds the
 * object), and where a server ignores the condition. */
static int claim_put(backend_t *be, const bconf_t *c, char *why, size_t whylen)
{
	int fd = memfd_create("cairn-claim", MFD_CLOEXEC);
	int r = fd < 0 ? -errno : write_full(fd, c->store_id, strlen(c->store_id));
	/* Tests only: wait (at most 60 s) for a file to exist before the
	 * write, so that two inits can both find the prefix free and then
	 * race to claim it in a set order (t0100, t1470). */
	const char *go = getenv("CAIRN_TEST_CLAIM_WAIT");
	for (int i = 0; go && i < 6000 && access(go, F_OK) < 0; i++)
		usleep(10000);
	if (!r)
		r = backend_put_meta_new(be, CLAIM_OBJECT, fd, strlen(c->store_id));
	/* A server without conditional writes: a plain write, and the read
	 * back alone decides (two claims in the very same moment can then
	 * both pass; docs/BACKENDS.md). */
	if (r == -EOPNOTSUPP)
		r = backend_put_meta(be, CLAIM_OBJECT, fd, strlen(c->store_id));
	if (fd >= 0)
		close(fd);
	char back[24] = "";
	if (!r || r == -EEXIST)
		r = claim_get(be, back);
	if (r == -ENOENT) /* taken, then let go meanwhile: still not ours */
		r = 0;
	if (r < 0) {
		snprintf(why, whylen, "claiming %.400s: %s", c->chunks, backend_errmsg(be));
	} else if (strcmp(back, c->store_id)) {
		snprintf(why, whylen, "%.400s: another store claimed it meanwhile", c->chunks);
		r = -EEXIST;
	}
	return r;
}

int store_remote_init(int dfd, const cairn_init_opts *o)
{
	bconf_t c;
	fill_conf(&c, o);
	backend_t *be = NULL;
	int r = open_backend(&c, true, 0, 0, &be, init_err, sizeof(init_err));
	if (r == 0) {
		/* The bucket must not hold another store's catalog: two stores
		 * sharing a prefix would delete each other's chunks. */
		/* (read into a file that is never named: a catalog may be up to
		 * BACKEND_META_MAX bytes, never whole in memory) */
		int tfd = openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		int g = tfd < 0 ? -errno : backend_get_meta_fd(be, CATALOG_OBJECT, tfd);
		if (tfd >= 0)
			close(tfd);
		char other[24] = "";
		if (tfd >= 0 && g == -ENOENT)
			g = claim_get(be, other);
		if (tfd < 0) {
			snprintf(init_err, sizeof(init_err), "a temporary file: %s", strerror(-g));
			r = g;
		} else if (g == 0 && *other) {
			snprintf(init_err, sizeof(init_err),
				 "%.400s already holds a store (claimed by store-id %s, no catalog "
				 "yet: a store made there that never ran a command; if none uses "
				 "it, delete meta/store-id under that prefix)",
				 c.chunks, other);
			r = -EEXIST;
		} else if (g == 0) {
			snprintf(init_err, sizeof(init_err),
				 "%.400s already holds a store (use --import to rebuild it)", c.chunks);
			r = -EEXIST;
		} else if (g != -ENOENT) {
			snprintf(init_err, sizeof(init_err), "%s", backend_errmsg(be));
			r = g;
		}
	}
	/* The id and where it goes are on disk before the claim, with the
	 * mark saying this set-up claims: a failed or killed init takes its
	 * claim back (store_setup_clear, also when the command is run again). */
	if (r == 0) {
		claim_new_id(&c);
		r = write_conf(dfd, &c);
		int fd = r ? -1 : openat(dfd, STORE_CLAIM_MARK, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		if (!r && (fd < 0 || fsync(fd) < 0 || fsync(dfd) < 0))
			r = -errno;
		if (fd >= 0)
			close(fd);
		if (r < 0)
			snprintf(init_err, sizeof(init_err), "recording the claim: %s", strerror(-r));
	}
	if (r == 0)
		r = claim_put(be, &c, init_err, sizeof(init_err));
	backend_close(be);
	return r;
}

int store_remote_unclaim(int dfd)
{
	bconf_t c = {0};
	char path[64], why[512] = "", now[24] = "";
	snprintf(path, sizeof(path), "/proc/self/fd/%d/" CONF_NAME, dfd);
	if (faccessat(dfd, STORE_CLAIM_MARK, F_OK, 0) < 0 ||
	    read_kv(path, conf_set, &c, why, sizeof(why)) < 0 || !*c.store_id)
		return 0; /* the mark comes after the settings: no claim made */
	backend_t *be = NULL;
	int r = open_backend(&c, false, 0, 0, &be, why, sizeof(why));
	int g = r ? r : claim_get(be, now);
	if (g == 0 && !strcmp(now, c.store_id))
		r = backend_delete_meta(be, CLAIM_OBJECT);
	else
		r = g == -ENOENT ? 0 : g;
	if (r < 0 && be)
		snprintf(why, sizeof(why), "%s", backend_errmsg(be));
	backend_close(be);
	if (r < 0) {
		size_t l = strlen(init_err);
		snprintf(init_err + l, sizeof(init_err) - l,
			 "%san unfinished init's claim on this location could not be checked or "
			 "taken back (%.300s); its directory is kept, and the same command run "
			 "again takes the claim back",
			 l ? "; also " : "", why);
	}
	return r;
}

int store_remote_attach(cairn_store *st)
{
	struct stat sb;
	if (fstatat(st->dirfd, CONF_NAME, &sb, 0) < 0)
		return errno == ENOENT ? 0 : store_err(st, -errno, CONF_NAME ": %s", strerror(errno));
	bconf_t c = {0};
	char path[4096], why[512] = "";
	snprintf(path, sizeof(path), "%s/" CONF_NAME, st->path);
	int r = read_kv(path, conf_set, &c, why, sizeof(why));
	if (!r)
		r = validate_conf(&c, why, sizeof(why));
	backend_t *be = NULL;
	if (!r)
		r = open_backend(&c, false, store_setting(st, "s3_parallel"),
				 store_setting(st, "s3_retry_seconds"), &be, why, sizeof(why));
	if (r < 0)
		return store_err(st, r, "chunk backend: %s", why);
	snprintf(path, sizeof(path), "%s/.chunks.lock", st->path);
	r = chunkstore_set_backend(st->cs, be, path);
	if (r < 0) {
		backend_close(be);
		return store_err(st, r, "%s: %s", path, strerror(-r));
	}
	/* Best effort: without its cache the store works, with more requests. */
	chunkcache_t *cache = NULL;
	if (chunkcache_open(st->dirfd, (uint64_t)store_setting(st, "s3_cache_mb") << 20, &cache) == 0)
		chunkstore_set_cache(st->cs, cache);
	st->published_changes = sqlite3_total_changes(catalog_db(st->cat));
	/* A copy that failed to upload last time goes up now (best effort:
	 * a read-only command must still work with the bucket away). */
	if (faccessat(st->dirfd, STALE_NAME, F_OK, 0) == 0)
		store_remote_publish(st, true);
	return 0;
}

int store_remote_check_owner(cairn_store *st)
{
	backend_t *be = st->cs ? chunkstore_backend(st->cs) : NULL;
	if (!be)
		return 0;
	bconf_t c = {0};
	char path[4096], why[512] = "", theirs[24] = "";
	snprintf(path, sizeof(path), "%s/" CONF_NAME, st->path);
	int r = read_kv(path, conf_set, &c, why, sizeof(why));
	if (r < 0)
		return store_err(st, r, "chunk backend: %s", why);
	int g = claim_get(be, theirs);
	if (g == 0 && *c.store_id && !strcmp(theirs, c.store_id))
		return 0;
	if (g == 0)
		return store_err(st, -EPERM,
				 "%s: claimed by another store (store-id %s, this store's %s): "
				 "nothing deleted from it",
				 c.chunks, theirs, *c.store_id ? c.store_id : "none");
	if (g != -ENOENT)
		return store_err(st, g, "%s: reading its claim: %s", c.chunks, backend_errmsg(be));
	/* No claim (a store made before claims, or one removed by hand):
	 * this store claims the prefix now, and keeps the id, recorded first
	 * (killed between the two, the next run finds no claim again). */
	claim_new_id(&c);
	r = conf_set_store_id(st->dirfd, c.store_id);
	if (r == 0)
		r = claim_put(be, &c, why, sizeof(why));
	return r < 0 ? store_err(st, r, "chunk backend: %s", *why ? why : strerror(-r)) : 0;
}

/* Uploads a consistent copy of the catalog (VACUUM INTO a temporary file)
 * as meta/catalog.db.  A failure leaves catalog.remote-stale behind so the
 * next command uploads again. */
int store_remote_publish(cairn_store *st, bool force)
{
	backend_t *be = st->cs ? chunkstore_backend(st->cs) : NULL;
	if (!be)
		return 0;
	sqlite3 *db = catalog_db(st->cat);
	int64_t changes = sqlite3_total_changes(db);
	if (!force && changes == st->published_changes)
		return 0;
	/* Inside an outer transaction (a command committing in steps) the
	 * copy waits: the store's close publishes it. */
	if (!sqlite3_get_autocommit(db))
		return 0;
	/* One upload at a time per store: each copies the catalog as it is
	 * when its turn comes, so the copy that lands last is the newest
	 * (two commands' copies could otherwise land in either order). */
	int lk = openat(st->dirfd, UPLOAD_LOCK, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (lk < 0)
		return store_err(st, -errno, UPLOAD_LOCK ": %s", strerror(errno));
	int r;
	while ((r = flock(lk, LOCK_EX)) < 0 && errno == EINTR)
		;
	if (r < 0) {
		r = store_err(st, -errno, UPLOAD_LOCK ": %s", strerror(errno));
		close(lk);
		return r;
	}
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s/catalog.upload.%d", st->path, (int)getpid());
	unlink(tmp);
	char *sql = sqlite3_mprintf("VACUUM INTO %Q", tmp);
	r = sql ? 0 : -ENOMEM;
	if (!r && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		r = store_err(st, -EIO, "catalog copy for the bucket: %s", sqlite3_errmsg(db));
	sqlite3_free(sql);
	int fd = r ? -1 : open(tmp, O_RDONLY | O_CLOEXEC);
	/* Tests only: a pause between the copy and its upload, so two
	 * commands' uploads can be made to race (t1470). */
	const char *delay = getenv("CAIRN_TEST_PUBLISH_DELAY_MS");
	if (delay)
		usleep((useconds_t)(strtoul(delay, NULL, 10) % 60000) * 1000);
	struct stat sb;
	if (!r && (fd < 0 || fstat(fd, &sb) < 0))
		r = store_err(st, -errno, "%s: %s", tmp, strerror(errno));
	/* A copy that import could not read back is no copy: said, not sent. */
	if (!r && (uint64_t)sb.st_size > BACKEND_META_MAX)
		r = store_err(st, -EFBIG,
			      "committed here, but the catalog (%lld bytes) is over the %llu bytes "
			      "a copy in the bucket may have: not uploaded",
			      (long long)sb.st_size, (unsigned long long)BACKEND_META_MAX);
	if (!r && (r = backend_put_meta(be, CATALOG_OBJECT, fd, sb.st_size)) < 0)
		store_err(st, r,
			  "committed here, but the catalog copy did not reach the bucket (%s); the "
			  "next command uploads it",
			  backend_errmsg(be));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	close(lk); /* the lock goes with it */
	if (!r) {
		st->published_changes = changes;
		unlinkat(st->dirfd, STALE_NAME, 0);
	} else {
		int sfd = openat(st->dirfd, STALE_NAME, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		if (sfd >= 0)
			close(sfd);
	}
	return r;
}

int store_import(const char *path, const cairn_init_opts *o)
{
	init_err[0] = 0;
	if (!o || !o->chunks) {
		snprintf(init_err, sizeof(init_err), "no bucket to import from");
		return -EINVAL;
	}
	bool made;
	int e = store_setup_begin(path, &made);
	if (e < 0)
		return e;
	int dfd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dfd < 0)
		return store_setup_finish(path, -1, made, -errno);
	bconf_t c;
	fill_conf(&c, o);
	backend_t *be = NULL;
	/* The catalog goes straight to a file (under a temporary name): it
	 * may be up to BACKEND_META_MAX bytes, never whole in memory. */
	int r = open_backend(&c, false, 0, 0, &be, init_err, sizeof(init_err));
	int fd = -1;
	if (!r) {
		fd = openat(dfd, "catalog.db.import", O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
		if (fd < 0) {
			r = -errno;
			snprintf(init_err, sizeof(init_err), "%s/catalog.db.import: %s", path,
				 strerror(errno));
		}
	}
	if (!r) {
		r = backend_get_meta_fd(be, CATALOG_OBJECT, fd);
		if (r == -ENOENT)
			snprintf(init_err, sizeof(init_err), "%.400s holds no store (no meta/catalog.db)",
				 c.chunks);
		else if (r < 0)
			snprintf(init_err, sizeof(init_err), "%s", backend_errmsg(be));
	}
	/* The imported store is the one that claimed the prefix (none: an
	 * older store; its first gc claims it). */
	if (!r && claim_get(be, c.store_id) < 0)
		c.store_id[0] = 0;
	backend_close(be);
	/* The catalog first, then the settings. */
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	if (!r && renameat(dfd, "catalog.db.import", dfd, "catalog.db") < 0)
		r = -errno;
	if (r < 0 && fd >= 0)
		unlinkat(dfd, "catalog.db.import", 0);
	if (!r)
		r = write_conf(dfd, &c);
	char sub[4096];
	snprintf(sub, sizeof(sub), "%s/.chunks", path);
	if (!r)
		r = chunkstore_create(sub);
	/* Markers for every object: the known-chunk set, so GC can mark. */
	chunkstore_t *cs = NULL;
	if (!r)
		r = chunkstore_open(sub, &cs);
	if (!r) {
		bconf_t c2 = c;
		r = open_backend(&c2, false, 0, 0, &be, init_err, sizeof(init_err));
		if (!r) {
			snprintf(sub, sizeof(sub), "%s/.chunks.lock", path);
			r = chunkstore_set_backend(cs, be, sub);
			if (r < 0)
				backend_close(be);
		}
	}
	uint64_t n = 0;
	if (!r && (r = chunkstore_import_markers(cs, &n)) < 0)
		snprintf(init_err, sizeof(init_err), "listing the bucket: %s",
			 backend_errmsg(chunkstore_backend(cs)));
	chunkstore_close(cs);
	r = store_setup_finish(path, dfd, made, r);
	close(dfd);
	return r;
}
