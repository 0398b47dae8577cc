/* store.c - creating, opening and configuring a store; error names. */
#include "store/store.h"

#include "catalog/dataset.h"
#include "catalog/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <dirent.h>
#include <ftw.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STORE_MARKER "cairn-store"

static const cairn_config_info config_table[] = {
	{"chunk_size", "average content chunk size (power of two)", 64 << 10, 8 << 20, 1 << 20,
	 "bytes"},
	{"compression", "default zstd level for new data (0 = off)", 0, 19, 2, "level"},
	{"list_batch_size", "snapshots per listing batch", 1, 4096, 1024, "entries"},
	{"list_batch_time_us", "time budget of one listing batch", 1, 100000, 10000, "us"},
	{"gc_atime_cutoff", "GC keeps unreferenced chunks touched this recently", 0,
	 525600, 1445, "minutes"},
	{"gc_batch", "pending touches GC sorts at once", 1, 16 << 20, 1 << 20, "entries"},
	{"gc_cache_capacity", "digests GC remembers as touched (0 = off)", 0, 64 << 20,
	 1 << 20, "entries"},
	{"sync_batch_chunks", "new chunks written between two syncs", 1, 1 << 20, 4096,
	 "chunks"},
	{"direct_io", "write new chunks of 64 KiB or more with O_DIRECT (0 = off)", 0, 1, 1,
	 "on/off"},
	{"s3_parallel", "parallel S3 connections per batch", 1, 64, 8, "connections"},
	{"s3_retry_seconds", "how long S3 requests are retried before failing", 1, 3600, 60,
	 "seconds"},
	{"s3_cache_mb", "local cache of chunks read from the bucket (0 = off)", 0, 1 << 24, 256,
	 "MiB"},
	{"key_lock_wait_seconds", "how long a command waits for its key while an unload-key or "
	 "destroy holds it", 0, 86400, 30, "seconds"},
	{NULL, NULL, 0, 0, 0, NULL},
};

const cairn_config_info *cairn_config_table(void)
{
	return config_table;
}

static const cairn_config_info *config_find(const char *key)
{
	for (const cairn_config_info *c = config_table; c->key; c++)
		if (!strcmp(c->key, key))
			return c;
	return NULL;
}

const char *cairn_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case CAIRN_ECORRUPT:
		return "data is corrupt";
	case CAIRN_ENOTSTORE:
		return "not a cairn store";
	case CAIRN_EBADNAME:
		return "invalid name";
	case CAIRN_EVERSION:
		return "unsupported format version";
	case CAIRN_ENOATIME:
		return "filesystem does not update access times";
	case CAIRN_ENOSOURCE:
		return "source cannot be read";
	case CAIRN_EBADPROP:
		return "invalid property or value";
	case CAIRN_EPARTIAL:
		return "some files could not be read";
	case CAIRN_EHELD:
		return "snapshot has holds";
	case CAIRN_ECHANGED:
		return "replaced by another file or no longer a regular file (changed during the backup)";
	case CAIRN_EFORBIDDEN:
		return "the bucket answered 403 for the object though this credential reads "
		       "others: missing, or this credential may not read it (without the "
		       "ListBucket right S3 answers 403 for a missing key, so the two look alike)";
	case CAIRN_ETORN:
		return "written while it was read (changed during the backup): its copy may mix old and new bytes";
	case CAIRN_EBADKEY:
		return "incorrect key";
	case CAIRN_ENOKEY:
		return "encryption key not loaded";
	}
	if (err < 0 && err > CAIRN_E_FIRST)
		return strerror(-err);
	return "unknown error";
}

int store_err(cairn_store *st, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st->errdetail, sizeof(st->errdetail), fmt, ap);
	va_end(ap);
	/* A failed request to the chunk backend says more than its errno. */
	char remote[512];
	if (st->cs && chunkstore_remote_error(st->cs, remote, sizeof(remote))) {
		size_t n = strlen(st->errdetail);
		snprintf(st->errdetail + n, sizeof(st->errdetail) - n, " (bucket: %s)", remote);
	}
	return err;
}

int store_enter(cairn_store *st, const char *call, const char *names, const void *const *args,
		size_t n)
{
	if (!st)
		return -EINVAL;
	st->errdetail[0] = 0;
	for (size_t i = 0; i < n; i++, names += strcspn(names, ",")) {
		names += strspn(names, ", ");
		if (!args[i])
			return store_err(st, -EINVAL, "%s: %.*s is NULL", call,
					 (int)strcspn(names, ","), names);
	}
	return 0;
}

int store_check_names(cairn_store *st, const char *call, const char *what,
		      const char *const *v, size_t n)
{
	if (n && !v)
		return store_err(st, -EINVAL, "%s: %s is NULL (with %zu entries)", call, what, n);
	for (size_t i = 0; i < n; i++)
		if (!v[i])
			return store_err(st, -EINVAL, "%s: %s[%zu] is NULL", call, what, i);
	return 0;
}

int store_check_props(cairn_store *st, const char *call, const char *what,
		      const cairn_prop *p, size_t n)
{
	if (n && !p)
		return store_err(st, -EINVAL, "%s: %s is NULL (with %zu entries)", call, what, n);
	for (size_t i = 0; i < n; i++)
		if (!p[i].name || !p[i].value)
			return store_err(st, -EINVAL, "%s: %s[%zu].%s is NULL", call, what, i,
					 p[i].name ? "value" : "name");
	return 0;
}

int store_chunk_err(cairn_store *st, int err, const digest_t *d)
{
	char what[160] = "";
	if (!chunkstore_batch_failure(st->cs, err, what, sizeof(what)) && d) {
		char hex[DIGEST_HEX_LEN + 1];
		digest_to_hex(d, hex);
		snprintf(what, sizeof(what), "writing chunk %s", hex);
	}
	if (!what[0])
		return store_err(st, err, "chunk store: %s", cairn_strerror(err));
	return store_err(st, err, "chunk store: %s: %s", what, cairn_strerror(err));
}

int store_chunk_err_during(cairn_store *st, int err, const char *during)
{
	char what[160];
	if (chunkstore_batch_failure(st->cs, err, what, sizeof(what)))
		return store_err(st, err, "%s: chunk store: %s: %s", during, what,
				 cairn_strerror(err));
	return store_err(st, err, "%s: %s", during, cairn_strerror(err));
}

int store_txn_begin(cairn_store *st, uint64_t *txg)
{
	int r = catalog_begin_write(st->cat, txg);
	if (r < 0)
		return store_err(st, r, "catalog: %s", catalog_errmsg(st->cat));
	return 0;
}

int store_txn_end(cairn_store *st, int r)
{
	if (r < 0) {
		catalog_rollback(st->cat);
		return r;
	}
	r = catalog_commit(st->cat);
	if (r < 0)
		return store_err(st, r, "catalog commit: %s", catalog_errmsg(st->cat));
	return store_remote_publish(st, false);
}

const char *cairn_store_errdetail(const cairn_store *st)
{
	return st ? st->errdetail : "";
}

void cairn_store_set_warn(cairn_store *st, cairn_warn_fn fn, void *arg)
{
	if (STORE_ENTER(st) < 0)
		return;
	st->warn = fn;
	st->warn_arg = arg;
}

/* Parses "123", "64K", "1M", "2G" into *v. */
static int parse_scaled(const char *s, int64_t *v)
{
	/* strtoll would skip leading spaces and take a sign: refuse both. */
	if (*s < '0' || *s > '9')
		return -EINVAL;
	char *end;
	errno = 0;
	/* Digits first: strtoll would also take " +5". */
	if (*s < '0' || *s > '9')
		return -EINVAL;
	long long n = strtoll(s, &end, 10);
	if (errno || end == s || n < 0)
		return -EINVAL;
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end == 'i' && shift)
		end++;
	if ((*end == 'B' || *end == 'b') && shift)
		end++;
	if (*end || n > (INT64_MAX >> shift))
		return -EINVAL;
	*v = (int64_t)n << shift;
	return 0;
}

static int config_validate(const cairn_config_info *ci, const char *text, int64_t *v, char *why,
			   size_t whylen)
{
	if (parse_scaled(text, v) < 0) {
		snprintf(why, whylen, "%s: '%s' is not a number", ci->key, text);
		return CAIRN_EBADPROP;
	}
	if (*v < ci->min || *v > ci->max) {
		snprintf(why, whylen, "%s: %s is out of range (allowed %lld..%lld %s)", ci->key,
			 text, (long long)ci->min, (long long)ci->max, ci->unit);
		return CAIRN_EBADPROP;
	}
	if (!strcmp(ci->key, "chunk_size") && (*v & (*v - 1))) {
		snprintf(why, whylen, "chunk_size: %s is not a power of two", text);
		return CAIRN_EBADPROP;
	}
	return 0;
}

static void env_name(const char *key, char *out, size_t len)
{
	size_t i = snprintf(out, len, "CAIRN_");
	for (; *key && i + 1 < len; key++)
		out[i++] = (*key >= 'a' && *key <= 'z') ? *key - 32 : *key;
	out[i] = 0;
}

/* cairn_config_get without clearing errdetail: store_setting runs in the
 * middle of other calls, whose failure detail it must keep. */
static int config_get(cairn_store *st, const char *key, int64_t *value, bool *from_env)
{
	const cairn_config_info *ci = config_find(key);
	if (!ci)
		return store_err(st, CAIRN_EBADPROP, "%s: unknown setting", key);
	char env[80];
	env_name(key, env, sizeof(env));
	const char *e = getenv(env);
	if (from_env)
		*from_env = false;
	if (e) {
		char why[256];
		int r = config_validate(ci, e, value, why, sizeof(why));
		if (r < 0)
			return store_err(st, r, "%s (from %s)", why, env);
		if (from_env)
			*from_env = true;
		return 0;
	}
	int r = catalog_config_get(st->cat, key, value);
	if (r == -ENOENT) {
		*value = ci->def;
		return 0;
	}
	return r < 0 ? store_err(st, r, "%s: %s", key, catalog_errmsg(st->cat)) : 0;
}

int cairn_config_get(cairn_store *st, const char *key, int64_t *value, bool *from_env)
{
	int r = STORE_ENTER(st, key, value);
	return r < 0 ? r : config_get(st, key, value, from_env);
}

int cairn_config_check_env(cairn_store *st)
{
	int r = STORE_ENTER(st);
	if (r < 0)
		return r;
	for (const cairn_config_info *ci = config_table; ci->key; ci++) {
		char env[80], why[256];
		int64_t v;
		env_name(ci->key, env, sizeof(env));
		const char *e = getenv(env);
		r = e ? config_validate(ci, e, &v, why, sizeof(why)) : 0;
		if (r < 0)
			return store_err(st, r, "%s (from %s)", why, env);
	}
	return 0;
}

int64_t store_setting(cairn_store *st, const char *key)
{
	int64_t v;
	if (config_get(st, key, &v, NULL) < 0) {
		const cairn_config_info *ci = config_find(key);
		return ci ? ci->def : 0;
	}
	return v;
}

int cairn_config_set(cairn_store *st, const char *key, const char *value)
{
	int r = STORE_ENTER(st, key, value);
	if (r < 0)
		return r;
	const cairn_config_info *ci = config_find(key);
	if (!ci)
		return store_err(st, CAIRN_EBADPROP, "%s: unknown setting", key);
	int64_t v;
	r = config_validate(ci, value, &v, st->errdetail, sizeof(st->errdetail));
	if (r < 0)
		return r;
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	r = catalog_config_set(st->cat, key, v);
	if (r < 0)
		store_err(st, r, "%s: %s", key, catalog_errmsg(st->cat));
	return store_txn_end(st, r);
}

int store_check_atime(int dirfd, char *why, size_t whylen)
{
	char name[64];
	snprintf(name, sizeof(name), ".atime-probe.%d", (int)getpid());
	int fd = openat(dirfd, name, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(why, whylen, "cannot create an atime probe file: %s", strerror(errno));
		return -errno;
	}
	close(fd);
	/* An hour ago, then "now": both must stick, as GC marks with
	 * UTIME_NOW and sweeps by comparing atimes. */
	struct timespec old[2] = {{time(NULL) - 3600, 0}, {0, UTIME_OMIT}};
	struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
	struct stat a, b;
	int r = 0;
	const char *fake = getenv("CAIRN_TEST_NO_ATIME");
	if (utimensat(dirfd, name, old, 0) < 0 || fstatat(dirfd, name, &a, 0) < 0 ||
	    utimensat(dirfd, name, now, 0) < 0 || fstatat(dirfd, name, &b, 0) < 0) {
		snprintf(why, whylen, "atime probe failed: %s", strerror(errno));
		r = -errno;
	} else if ((fake && *fake == '1') || a.st_atime > time(NULL) - 3000 ||
		   b.st_atime < time(NULL) - 60) {
		snprintf(why, whylen,
			 "the filesystem does not keep access times set with utimensat(); "
			 "garbage collection would be unsafe here");
		r = CAIRN_ENOATIME;
	}
	unlinkat(dirfd, name, 0);
	return r;
}

bool store_is_made(const char *path)
{
	char m[4096];
	snprintf(m, sizeof(m), "%s/" STORE_MARKER, path);
	return faccessat(AT_FDCWD, m, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static int dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *de;
	int empty = 1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			empty = 0;
			break;
		}
	closedir(d);
	return empty;
}

/* init and import write SETUP_MARK before anything else and remove it
 * after the store marker: a directory holding it and no store marker is
 * an unfinished set-up, and only then are its files (and nothing but the
 * names set-up makes) taken away. */
#define SETUP_MARK "cairn-store.partial"

static bool setup_name(const char *n)
{
	static const char *const names[] = {
		SETUP_MARK,	  ".chunks",	    ".chunks.lock",	  "backend.conf",
		STORE_CLAIM_MARK, "catalog.db",	    "catalog.db-wal",	  "catalog.db-shm",
		"catalog.db-journal", "catalog.db.import"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(n, names[i]))
			return true;
	return !strncmp(n, ".atime-probe.", 13);
}

static int unlink_entry(const char *p, const struct stat *sb, int type, struct FTW *f)
{
	return remove(p) < 0 && errno != ENOENT ? -1 : 0;
}

int store_setup_clear(const char *path)
{
	char sub[4096];
	snprintf(sub, sizeof(sub), "%s/" SETUP_MARK, path);
	struct stat sb;
	if (store_is_made(path) || lstat(sub, &sb) < 0 || !S_ISREG(sb.st_mode))
		return 0;
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *de;
	int ours = 1;
	while (ours && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			ours = setup_name(de->d_name);
	closedir(d);
	if (ours) {
		int dfd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		int r = dfd < 0 ? -errno : store_remote_unclaim(dfd);
		if (dfd >= 0)
			close(dfd);
		if (r < 0)
			return r;
	}
	for (d = ours ? opendir(path) : NULL; d && (de = readdir(d));) {
		if (!setup_name(de->d_name) || !strcmp(de->d_name, SETUP_MARK))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (nftw(sub, unlink_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
			ours = -errno;
	}
	if (d)
		closedir(d);
	/* The set-up mark goes last: a clear cut short is cleared again. */
	snprintf(sub, sizeof(sub), "%s/" SETUP_MARK, path);
	if (ours == 1 && unlink(sub) < 0)
		ours = -errno;
	return ours;
}

int store_setup_begin(const char *path, bool *made)
{
	*made = mkdir(path, 0700) == 0;
	if (!*made) {
		if (errno != EEXIST)
			return -errno;
		int e = dir_is_empty(path);
		if (e == 0)
			e = store_setup_clear(path);
		if (e < 0)
			return e;
		if (e == 0)
			return -EEXIST;
		chmod(path, 0700);
	}
	char m[4096];
	snprintf(m, sizeof(m), "%s/" SETUP_MARK, path);
	int fd = open(m, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || fsync(fd) < 0) {
		int e = -errno;
		if (fd >= 0)
			close(fd);
		if (*made)
			rmdir(path);
		return e;
	}
	close(fd);
	return 0;
}

int store_setup_finish(const char *path, int dfd, bool made, int r)
{
	if (r == 0) {
		/* The marker is written last: a store is complete once it exists. */
		int fd = openat(dfd, STORE_MARKER, O_CREAT | O_WRONLY | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || write_full(fd, "cairn store format 1\n", 21) < 0 || fsync(fd) < 0)
			r = -errno;
		if (fd >= 0)
			close(fd);
		if (r == 0 && (unlinkat(dfd, SETUP_MARK, 0) < 0 || fsync(dfd) < 0))
			r = -errno;
		/* The claim is the finished store's now (a kill before this
		 * leaves a file nothing reads). */
		if (r == 0)
			unlinkat(dfd, STORE_CLAIM_MARK, 0);
		if (r == 0)
			return 0;
		unlinkat(dfd, STORE_MARKER, 0);
	}
	/* A failed set-up takes back what it made: the directory is as it
	 * was (made: removed), and the same command can run again. */
	if (store_setup_clear(path) == 1 && made)
		rmdir(path);
	return r;
}

int cairn_store_init(const char *path, const cairn_init_opts *opts)
{
	store_init_err_clear();
	if (!path)
		return -EINVAL;
	cairn_init_opts def = {0};
	if (!opts)
		opts = &def;
	if (opts->import)
		return store_import(path, opts);
	uint32_t chunk = opts->chunk_size ? opts->chunk_size : 1 << 20;
	if (chunk < (64u << 10) || chunk > (8u << 20) || (chunk & (chunk - 1)))
		return CAIRN_EBADPROP;
	bool made;
	int r = store_setup_begin(path, &made);
	if (r < 0)
		return r;
	int dfd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dfd < 0)
		return store_setup_finish(path, -1, made, -errno);
	char why[256];
	r = opts->skip_atime_check ? 0 : store_check_atime(dfd, why, sizeof(why));
	if (r == 0 && opts->chunks)
		r = store_remote_init(dfd, opts);
	char sub[4096];
	if (r == 0) {
		snprintf(sub, sizeof(sub), "%s/.chunks", path);
		r = chunkstore_create(sub);
	}
	if (r == 0) {
		snprintf(sub, sizeof(sub), "%s/catalog.db", path);
		r = catalog_create(sub);
	}
	if (r == 0) {
		catalog_t *c;
		r = catalog_open(sub, &c);
		if (r == 0) {
			uint64_t txg;
			r = catalog_begin_write(c, &txg);
			if (r == 0) {
				r = catalog_config_set(c, "chunk_size", chunk);
				r = r ?: catalog_commit(c);
				if (r)
					catalog_rollback(c);
			}
			catalog_close(c);
		}
	}
	r = store_setup_finish(path, dfd, made, r);
	close(dfd);
	return r;
}

int cairn_store_open(const char *path, cairn_store **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!path)
		return -EINVAL;
	cairn_store *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->writer_fd = -1;
	st->dirfd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	int r = st->dirfd < 0 ? -errno : 0;
	if (r == 0 && faccessat(st->dirfd, STORE_MARKER, F_OK, 0) < 0)
		r = CAIRN_ENOTSTORE;
	st->path = strdup(path);
	char sub[4096];
	if (r == 0) {
		snprintf(sub, sizeof(sub), "%s/catalog.db", path);
		r = catalog_open(sub, &st->cat);
	}
	if (r == 0) {
		snprintf(sub, sizeof(sub), "%s/.chunks", path);
		r = chunkstore_open(sub, &st->cs);
	}
	if (r == 0)
		r = store_remote_attach(st);
	if (r < 0) {
		cairn_store_close(st);
		return r;
	}
	chunkstore_set_batch(st->cs, store_setting(st, "sync_batch_chunks"), 256ull << 20);
	chunkstore_set_direct(st->cs, store_setting(st, "direct_io"));
	/* Best effort: a store we cannot write to still opens for reading. */
	hold_reap(st);
	*out = st;
	return 0;
}

void cairn_store_close(cairn_store *st)
{
	if (!st)
		return;
	/* Commits made outside store_txn_end (GC status, verify) too. */
	if (st->cat)
		store_remote_publish(st, false);
	if (st->touch_writer)
		writer_unregister(st); /* the receives that relied on its touches are done */
	chunkstore_close(st->cs);
	catalog_close(st->cat);
	if (st->dirfd >= 0)
		close(st->dirfd);
	free(st->path);
	free(st);
}
