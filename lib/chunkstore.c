/* chunkstore.c - the content-addressed chunk directory (see chunkstore.h).
 *
 * Concurrency: one mutex guards the pending set (digests of chunks put in
 * the current batch) and the batch counters.  A digest enters the set as
 * WRITING before its temporary file is written, so that two threads putting
 * the same chunk never both write it: the second waits on a condition
 * variable until the first has finished.  The file writes themselves run
 * outside the lock; only the batch flush (syncfs + renames) holds it.
 */
#include "chunkstore.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "blob.h"

#define NSUBDIRS 65536
#define DEFAULT_BATCH_CHUNKS 4096
#define DEFAULT_BATCH_BYTES (256ull << 20)
/* The largest file a valid blob can be; anything bigger is rejected before
 * a buffer is allocated for it. */
#define MAX_BLOB_FILE ((size_t)BLOB_HEADER_LEN + ZSTD_COMPRESSBOUND(CHUNK_MAX_PLAIN))
/* "<64 hex>.tmp.<pid>.<n>" with room for the "xxxx/" prefix. */
#define TMP_NAME_MAX 128
/* Thread-local buffers bigger than this are freed after use, so that one
 * huge chunk does not pin its buffer in every thread for ever. */
#define TLS_KEEP_MAX (8u << 20)

enum slot_state { SLOT_EMPTY = 0, SLOT_WRITING, SLOT_READY, SLOT_DEAD };

struct pending {
	digest_t d;
	uint64_t tmpno;      /* temp file is "<hex>.tmp.<pid>.<tmpno>" */
	uint32_t stored_len; /* blob size, valid when READY */
	uint8_t state;
};

struct chunkstore {
	int dirfd;
	pid_t pid;
	/* Subdirectory fds, -1 until opened.  Published with a CAS so readers
	 * need no lock. */
	_Atomic int *subfd;
	atomic_uint nsubfd;
	unsigned subfd_cap; /* internal opens stop caching beyond this */

	pthread_mutex_t lock;
	pthread_cond_t settled; /* a WRITING entry became READY or went away */
	/* Open-addressing pending set, linear probing.  Deleted entries are
	 * tombstones (DEAD) so probe chains of other entries stay intact. */
	struct pending *slots;
	size_t cap, live, dead;
	uint32_t ready, writing;
	uint64_t ready_bytes;
	uint32_t max_chunks;
	uint64_t max_bytes;
	uint64_t gen;          /* bumped by every batch flush */
	bool renames_unsynced; /* renames done since the last syncfs */
	int sticky_err;        /* a batch flush run inside put() failed */

	atomic_uint_fast64_t new_bytes, new_chunks, syncs;
};

/* Process-wide so two handles on one directory never pick the same name. */
static atomic_uint_fast64_t tmp_counter;

/* ---- per-thread buffers ---- */

struct tls_bufs {
	buf_t enc; /* blob_encode output */
	buf_t raw; /* file contents read by get() */
	bool registered;
};
static __thread struct tls_bufs tls;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static bool tls_key_ok;

/* The key exists only for its destructor: it frees a thread's buffers when
 * the thread exits (the __thread variable itself has no destructor). */
static void tls_destroy(void *p)
{
	struct tls_bufs *t = p;
	buf_free(&t->enc);
	buf_free(&t->raw);
}

static void tls_key_init(void)
{
	tls_key_ok = pthread_key_create(&tls_key, tls_destroy) == 0;
}

static struct tls_bufs *tls_get(void)
{
	if (!tls.registered) {
		pthread_once(&tls_once, tls_key_init);
		if (tls_key_ok)
			pthread_setspecific(tls_key, &tls);
		tls.registered = true;
	}
	return &tls;
}

static void tls_trim(buf_t *b)
{
	if (b->cap > TLS_KEEP_MAX)
		buf_free(b);
	else
		b->len = 0;
}

/* ---- pending set (all under cs->lock) ---- */

static size_t pset_home(const chunkstore_t *cs, const digest_t *d)
{
	/* Bytes 0-1 pick the subdirectory; use others for the hash. */
	return get_u64(d->b + 8) & (cs->cap - 1);
}

static struct pending *pset_find(chunkstore_t *cs, const digest_t *d)
{
	for (size_t i = pset_home(cs, d);; i = (i + 1) & (cs->cap - 1)) {
		struct pending *s = &cs->slots[i];
		if (s->state == SLOT_EMPTY)
			return NULL;
		if (s->state != SLOT_DEAD && !digest_cmp(&s->d, d))
			return s;
	}
}

/* Places d (known to be absent) in the first reusable slot of its chain. */
static struct pending *pset_place(chunkstore_t *cs, const digest_t *d)
{
	for (size_t i = pset_home(cs, d);; i = (i + 1) & (cs->cap - 1)) {
		struct pending *s = &cs->slots[i];
		if (s->state == SLOT_EMPTY || s->state == SLOT_DEAD) {
			if (s->state == SLOT_DEAD)
				cs->dead--;
			s->d = *d;
			cs->live++;
			return s;
		}
	}
}

static int pset_rehash(chunkstore_t *cs)
{
	size_t cap = cs->cap;
	while ((cs->live + 1) * 4 > cap)
		cap *= 2;
	struct pending *old = cs->slots;
	size_t oldcap = cs->cap;
	cs->slots = calloc(cap, sizeof(*cs->slots));
	if (!cs->slots) {
		cs->slots = old;
		return -ENOMEM;
	}
	cs->cap = cap;
	cs->live = cs->dead = 0;
	for (size_t i = 0; i < oldcap; i++) {
		if (old[i].state == SLOT_WRITING || old[i].state == SLOT_READY)
			*pset_place(cs, &old[i].d) = old[i];
	}
	free(old);
	return 0;
}

static int pset_add_writing(chunkstore_t *cs, const digest_t *d)
{
	/* Keep the load (tombstones included) at most one half. */
	if ((cs->live + cs->dead + 1) * 2 > cs->cap) {
		int r = pset_rehash(cs);
		if (r < 0)
			return r;
	}
	struct pending *s = pset_place(cs, d);
	s->state = SLOT_WRITING;
	cs->writing++;
	return 0;
}

static void pset_kill(chunkstore_t *cs, struct pending *s)
{
	s->state = SLOT_DEAD;
	cs->live--;
	cs->dead++;
}

/* ---- paths ---- */

/* Where one chunk lives: a name relative to an fd.  Normally the fd is the
 * cached subdirectory fd and the name the bare hex digest; when no
 * subdirectory fd can be had, it is the store fd and "xxxx/<hex>". */
struct cpath {
	int at;
	const char *name;
	char buf[5 + DIGEST_HEX_LEN + 1];
};

static unsigned subdir_index(const digest_t *d)
{
	return (unsigned)d->b[0] << 8 | d->b[1];
}

static void subdir_name(unsigned idx, char out[5])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 4; i++)
		out[i] = hex[idx >> (12 - 4 * i) & 15];
	out[4] = 0;
}

/* Opens subdirectory idx and publishes its fd; if another thread won the
 * race, ours is closed and theirs returned. */
static int subdir_open_cached(chunkstore_t *cs, unsigned idx)
{
	char name[5];
	subdir_name(idx, name);
	int fd = openat(cs->dirfd, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int expect = 0;
	if (!atomic_compare_exchange_strong(&cs->subfd[idx], &expect, fd + 1)) {
		close(fd);
		return expect - 1;
	}
	atomic_fetch_add(&cs->nsubfd, 1);
	return fd;
}

/* The subdirectory fd for internal use, or -1 to use a path from the store
 * fd instead: past the cache cap (leave fds to the rest of the process) or
 * when openat fails (EMFILE...).  A real problem such as a missing
 * subdirectory then shows up as the error of the operation itself. */
static int subdir_fd(chunkstore_t *cs, unsigned idx)
{
	int fd = atomic_load_explicit(&cs->subfd[idx], memory_order_acquire) - 1;
	if (fd >= 0)
		return fd;
	if (atomic_load(&cs->nsubfd) >= cs->subfd_cap)
		return -1;
	fd = subdir_open_cached(cs, idx);
	return fd >= 0 ? fd : -1;
}

static void cpath_init(chunkstore_t *cs, const digest_t *d, struct cpath *p)
{
	digest_to_hex(d, p->buf + 5);
	memcpy(p->buf, p->buf + 5, 4);
	p->buf[4] = '/';
	int fd = subdir_fd(cs, subdir_index(d));
	p->at = fd >= 0 ? fd : cs->dirfd;
	p->name = fd >= 0 ? p->buf + 5 : p->buf;
}

static void tmp_name(const struct cpath *p, pid_t pid, uint64_t no, char out[TMP_NAME_MAX])
{
	snprintf(out, TMP_NAME_MAX, "%s.tmp.%d.%" PRIu64, p->name, (int)pid, no);
}

/* ---- create / open / close ---- */

int chunkstore_create(const char *dir)
{
	/* EEXIST is fine everywhere, so an interrupted create can be rerun. */
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	_cleanup_close_ int fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (unsigned i = 0; i < NSUBDIRS; i++) {
		char name[5];
		subdir_name(i, name);
		if (mkdirat(fd, name, 0700) < 0 && errno != EEXIST)
			return -errno;
	}
	/* One syncfs instead of 65537 fsyncs; also covers the new inodes on
	 * filesystems where fsync of the parent would not. */
	return syncfs(fd) < 0 ? -errno : 0;
}

static unsigned subfd_cap_from_rlimit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return NSUBDIRS;
	/* A quarter of the fd budget: backup also opens source files and the
	 * catalog, and must not hit EMFILE because of cached directories. */
	rlim_t cap = rl.rlim_cur / 4;
	return cap < 16 ? 16 : cap > NSUBDIRS ? NSUBDIRS : (unsigned)cap;
}

static int check_layout(int dirfd)
{
	/* ffff is the last subdirectory chunkstore_create makes. */
	struct stat st;
	if (fstatat(dirfd, "ffff", &st, 0) < 0)
		return errno == ENOENT ? CAIRN_ENOTSTORE : -errno;
	return S_ISDIR(st.st_mode) ? 0 : CAIRN_ENOTSTORE;
}

static chunkstore_t *cs_alloc(void)
{
	chunkstore_t *cs = calloc(1, sizeof(*cs));
	if (!cs)
		return NULL;
	/* Entries hold fd + 1, so the zeroed (untouched, lazily mapped) table
	 * means "not open": opening a store for a listing costs nothing here. */
	cs->subfd = calloc(NSUBDIRS, sizeof(*cs->subfd));
	cs->cap = 64;
	cs->slots = calloc(cs->cap, sizeof(*cs->slots));
	if (!cs->subfd || !cs->slots) {
		free(cs->subfd);
		free(cs->slots);
		free(cs);
		return NULL;
	}
	return cs;
}

int chunkstore_open(const char *dir, chunkstore_t **out)
{
	*out = NULL;
	int fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = check_layout(fd);
	chunkstore_t *cs = r < 0 ? NULL : cs_alloc();
	if (!cs) {
		close(fd);
		return r < 0 ? r : -ENOMEM;
	}
	cs->dirfd = fd;
	cs->pid = getpid();
	cs->subfd_cap = subfd_cap_from_rlimit();
	cs->max_chunks = DEFAULT_BATCH_CHUNKS;
	cs->max_bytes = DEFAULT_BATCH_BYTES;
	pthread_mutex_init(&cs->lock, NULL);
	pthread_cond_init(&cs->settled, NULL);
	*out = cs;
	return 0;
}

static void unlink_tmp(chunkstore_t *cs, const struct pending *s)
{
	struct cpath p;
	char tmp[TMP_NAME_MAX];
	cpath_init(cs, &s->d, &p);
	tmp_name(&p, cs->pid, s->tmpno, tmp);
	unlinkat(p.at, tmp, 0);
}

void chunkstore_close(chunkstore_t *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; i < cs->cap; i++) {
		if (cs->slots[i].state == SLOT_READY)
			unlink_tmp(cs, &cs->slots[i]);
	}
	for (unsigned i = 0; atomic_load(&cs->nsubfd) && i < NSUBDIRS; i++) {
		int fd = atomic_load(&cs->subfd[i]) - 1;
		if (fd >= 0)
			close(fd);
	}
	close(cs->dirfd);
	pthread_cond_destroy(&cs->settled);
	pthread_mutex_destroy(&cs->lock);
	free(cs->slots);
	free(cs->subfd);
	free(cs);
}

/* ---- batch flush (under cs->lock) ---- */

static int do_syncfs(chunkstore_t *cs)
{
	atomic_fetch_add(&cs->syncs, 1);
	return syncfs(cs->dirfd) < 0 ? -errno : 0;
}

/* Gives a READY entry its final name, or removes its temp file when the
 * data could not be made durable (sync_err) or the rename fails. */
static int publish_one(chunkstore_t *cs, const struct pending *s, int sync_err)
{
	struct cpath p;
	char tmp[TMP_NAME_MAX];
	cpath_init(cs, &s->d, &p);
	tmp_name(&p, cs->pid, s->tmpno, tmp);
	if (!sync_err && renameat(p.at, tmp, p.at, p.name) == 0)
		return 0;
	int r = sync_err ? sync_err : -errno;
	unlinkat(p.at, tmp, 0);
	return r;
}

/* Entries still WRITING belong to puts in progress and stay in the set. */
static void drop_ready(chunkstore_t *cs)
{
	if (!cs->writing) {
		memset(cs->slots, 0, cs->cap * sizeof(*cs->slots));
		cs->live = cs->dead = 0;
	} else {
		for (size_t i = 0; i < cs->cap; i++) {
			if (cs->slots[i].state == SLOT_READY)
				pset_kill(cs, &cs->slots[i]);
		}
	}
	cs->ready = 0;
	cs->ready_bytes = 0;
}

/* Step 2 of the protocol: one syncfs for the data of the whole batch, then
 * the renames.  On failure every chunk of the batch is dropped. */
static int batch_flush_locked(chunkstore_t *cs)
{
	if (!cs->ready)
		return 0;
	int sync_err = do_syncfs(cs);
	int err = sync_err;
	for (size_t i = 0; i < cs->cap; i++) {
		if (cs->slots[i].state != SLOT_READY)
			continue;
		int r = publish_one(cs, &cs->slots[i], sync_err);
		if (r < 0 && !err)
			err = r;
	}
	drop_ready(cs);
	cs->gen++;
	if (!sync_err)
		cs->renames_unsynced = true;
	return err;
}

int chunkstore_flush(chunkstore_t *cs)
{
	pthread_mutex_lock(&cs->lock);
	int err = batch_flush_locked(cs);
	if (cs->renames_unsynced) {
		int r = do_syncfs(cs);
		if (!r)
			cs->renames_unsynced = false;
		else if (!err)
			err = r;
	}
	/* A batch that failed inside some put() was dropped too: whoever
	 * flushes must learn of it before trusting the chunks it put. */
	if (!err)
		err = cs->sticky_err;
	cs->sticky_err = 0;
	pthread_mutex_unlock(&cs->lock);
	return err;
}

/* ---- put ---- */

/* Touches an existing chunk and returns its size; -ENOENT if missing. */
static int touch_stat(const struct cpath *p, uint32_t *stored_len)
{
	static const struct timespec ts[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
	struct stat st;
	if (utimensat(p->at, p->name, ts, 0) < 0 || fstatat(p->at, p->name, &st, 0) < 0)
		return -errno;
	*stored_len = st.st_size > UINT32_MAX ? UINT32_MAX : (uint32_t)st.st_size;
	return 0;
}

/* Waits while another thread is writing d; returns its READY entry or NULL. */
static struct pending *wait_settled_locked(chunkstore_t *cs, const digest_t *d)
{
	struct pending *s;
	while ((s = pset_find(cs, d)) && s->state == SLOT_WRITING)
		pthread_cond_wait(&cs->settled, &cs->lock);
	return s;
}

/* Decides who writes d.  Returns 1 if the chunk exists (pending or on disk;
 * *stored_len set), 0 if the caller now owns a WRITING entry for it, or a
 * negative errno.  The flush generation closes the window in which a batch
 * renames d between our look at the set and our look at the disk. */
static int claim(chunkstore_t *cs, const digest_t *d, const struct cpath *p, uint32_t *stored_len)
{
	for (;;) {
		pthread_mutex_lock(&cs->lock);
		struct pending *s = wait_settled_locked(cs, d);
		uint64_t gen = cs->gen;
		if (s)
			*stored_len = s->stored_len;
		pthread_mutex_unlock(&cs->lock);
		if (s)
			return 1;

		int r = touch_stat(p, stored_len);
		if (r != -ENOENT)
			return r == 0 ? 1 : r;

		pthread_mutex_lock(&cs->lock);
		bool retry = cs->gen != gen || pset_find(cs, d);
		if (!retry)
			r = pset_add_writing(cs, d);
		pthread_mutex_unlock(&cs->lock);
		if (!retry)
			return r;
	}
}

static int write_tmp(chunkstore_t *cs, const struct cpath *p, const buf_t *blob, uint64_t *tmpno)
{
	char tmp[TMP_NAME_MAX];
	int fd;
	/* EEXIST can only be a stale file of a dead process that had our pid. */
	for (int tries = 0;; tries++) {
		*tmpno = atomic_fetch_add(&tmp_counter, 1);
		tmp_name(p, cs->pid, *tmpno, tmp);
		fd = openat(p->at, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries >= 8)
			return -errno;
	}
	int r = write_full(fd, blob->data, blob->len);
	if (close(fd) < 0 && !r)
		r = -errno;
	if (r < 0)
		unlinkat(p->at, tmp, 0);
	return r;
}

/* Settles our WRITING entry: READY on success, removed on failure; then
 * flushes the batch if it is full. */
static int finish(chunkstore_t *cs, const digest_t *d, int r, uint64_t tmpno, uint32_t blen)
{
	pthread_mutex_lock(&cs->lock);
	struct pending *s = pset_find(cs, d);
	cs->writing--;
	if (r < 0) {
		pset_kill(cs, s);
	} else {
		s->state = SLOT_READY;
		s->tmpno = tmpno;
		s->stored_len = blen;
		cs->ready++;
		cs->ready_bytes += blen;
		atomic_fetch_add(&cs->new_chunks, 1);
		atomic_fetch_add(&cs->new_bytes, blen);
		if (cs->ready >= cs->max_chunks || cs->ready_bytes >= cs->max_bytes) {
			r = batch_flush_locked(cs);
			if (r < 0)
				cs->sticky_err = r;
		}
	}
	pthread_cond_broadcast(&cs->settled);
	pthread_mutex_unlock(&cs->lock);
	return r;
}

int chunkstore_put(chunkstore_t *cs, const digest_t *d, const void *data, size_t len,
		   int level, uint32_t *stored_len, bool *was_new)
{
	return chunkstore_put_key(cs, NULL, d, data, len, level, stored_len, was_new);
}

int chunkstore_put_key(chunkstore_t *cs, const crypt_keys_t *k, const digest_t *d,
		       const void *data, size_t len, int level, uint32_t *stored_len,
		       bool *was_new)
{
	*stored_len = 0;
	*was_new = false;
	if (len > CHUNK_MAX_PLAIN)
		return -EINVAL;
	struct cpath p;
	cpath_init(cs, d, &p);
	int r = claim(cs, d, &p, stored_len);
	if (r)
		return r > 0 ? 0 : r;

	buf_t *b = &tls_get()->enc;
	uint64_t tmpno = 0;
	r = k ? blob_encode_sealed(k, data, len, level, b) : blob_encode(data, len, level, b);
	if (!r)
		r = write_tmp(cs, &p, b, &tmpno);
	uint32_t blen = b->len;
	tls_trim(b);
	r = finish(cs, d, r, tmpno, blen);
	if (!r) {
		*stored_len = blen;
		*was_new = true;
	}
	return r;
}

int chunkstore_put_blob(chunkstore_t *cs, const digest_t *d, const void *blob, size_t len,
			uint32_t *stored_len, bool *was_new)
{
	*stored_len = 0;
	*was_new = false;
	struct cpath p;
	cpath_init(cs, d, &p);
	int r = claim(cs, d, &p, stored_len);
	if (r)
		return r > 0 ? 0 : r;
	/* The caller verified the blob; write its bytes as they are. */
	buf_t b = {.data = (uint8_t *)blob, .len = len, .cap = len};
	uint64_t tmpno = 0;
	r = write_tmp(cs, &p, &b, &tmpno);
	r = finish(cs, d, r, tmpno, len);
	if (!r) {
		*stored_len = len;
		*was_new = true;
	}
	return r;
}

/* ---- get ---- */

static int read_file_at(int at, const char *name, buf_t *out)
{
	/* A FIFO or symlink planted as a chunk must not hang or redirect us:
	 * no following, no blocking; fstat below refuses anything irregular. */
	_cleanup_close_ int fd = openat(at, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return errno == ELOOP ? CAIRN_ECORRUPT : -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_BLOB_FILE)
		return CAIRN_ECORRUPT;
	out->len = 0;
	int r = buf_reserve(out, st.st_size ? st.st_size : 1);
	if (r < 0)
		return r;
	ssize_t n = read_full(fd, out->data, st.st_size);
	if (n < 0)
		return n;
	if (n != st.st_size)
		return CAIRN_ECORRUPT;
	out->len = n;
	return 0;
}

/* Reads the raw blob of d: the temp file if d is pending in this batch,
 * else the final file. */
static int read_blob(chunkstore_t *cs, const digest_t *d, buf_t *out)
{
	struct cpath p;
	cpath_init(cs, d, &p);
	pthread_mutex_lock(&cs->lock);
	struct pending *s = pset_find(cs, d);
	bool pending = s && s->state == SLOT_READY;
	uint64_t tmpno = pending ? s->tmpno : 0;
	pthread_mutex_unlock(&cs->lock);
	if (pending) {
		char tmp[TMP_NAME_MAX];
		tmp_name(&p, cs->pid, tmpno, tmp);
		int r = read_file_at(p.at, tmp, out);
		/* ENOENT: a flush renamed it since we looked. */
		if (r != -ENOENT)
			return r;
	}
	return read_file_at(p.at, p.name, out);
}

int chunkstore_get(chunkstore_t *cs, const digest_t *d, buf_t *out)
{
	return chunkstore_get_key(cs, NULL, d, out);
}

int chunkstore_get_key(chunkstore_t *cs, const crypt_keys_t *k, const digest_t *d, buf_t *out)
{
	buf_t *raw = &tls_get()->raw;
	int r = read_blob(cs, d, raw);
	if (!r)
		r = blob_decode_key(k, raw->data, raw->len, d, out);
	tls_trim(raw);
	return r;
}

int chunkstore_get_raw(chunkstore_t *cs, const digest_t *d, buf_t *out)
{
	return read_blob(cs, d, out);
}

/* ---- small accessors ---- */

int chunkstore_touch(chunkstore_t *cs, const digest_t *d)
{
	struct cpath p;
	uint32_t unused;
	cpath_init(cs, d, &p);
	int r = touch_stat(&p, &unused);
	if (r != -ENOENT)
		return r;
	/* A pending chunk's temp file was just written: it is as fresh as a
	 * touched one. */
	pthread_mutex_lock(&cs->lock);
	struct pending *s = pset_find(cs, d);
	bool pending = s && s->state == SLOT_READY;
	pthread_mutex_unlock(&cs->lock);
	return pending ? 0 : -ENOENT;
}

int chunkstore_dirfd(chunkstore_t *cs, unsigned idx)
{
	if (idx >= NSUBDIRS)
		return -EINVAL;
	int fd = atomic_load_explicit(&cs->subfd[idx], memory_order_acquire) - 1;
	return fd >= 0 ? fd : subdir_open_cached(cs, idx);
}

uint64_t chunkstore_new_bytes(const chunkstore_t *cs)
{
	return atomic_load(&cs->new_bytes);
}

uint64_t chunkstore_new_chunks(const chunkstore_t *cs)
{
	return atomic_load(&cs->new_chunks);
}

uint64_t chunkstore_sync_count(const chunkstore_t *cs)
{
	return atomic_load(&cs->syncs);
}

void chunkstore_set_batch(chunkstore_t *cs, uint32_t max_chunks, uint64_t max_bytes)
{
	pthread_mutex_lock(&cs->lock);
	cs->max_chunks = max_chunks ? max_chunks : DEFAULT_BATCH_CHUNKS;
	cs->max_bytes = max_bytes ? max_bytes : DEFAULT_BATCH_BYTES;
	pthread_mutex_unlock(&cs->lock);
}
