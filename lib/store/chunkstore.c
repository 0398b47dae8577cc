/* chunkstore.c - the content-addressed chunk directory (see chunkstore.h).
 *
 * Concurrency: one mutex guards the pending set (digests of chunks put in
 * the current batch) and the batch counters.  A digest enters the set as
 * WRITING before its temporary file is written, so that two threads putting
 * the same chunk never both write it: the second waits on a condition
 * variable until the first has finished.  The file writes run outside the
 * lock, and so does a batch flush's syncfs and renames: the flushing thread
 * seals the batch's entries under the lock (they still count as present),
 * publishes them unlocked, and takes them out of the set under the lock
 * again.  A full batch is flushed by the store's own flusher thread, so
 * the writer whose put filled it goes on too.  One flush runs at a time;
 * the other threads keep writing the next batch meanwhile, instead of
 * queueing behind the syncfs.
 */
#include "store/chunkstore.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "store/backend.h"
#include "store/blob.h"
#include "store/chunkcache.h"

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

/* A new chunk of at least DIRECT_MIN bytes that a backup stores is written
 * with O_DIRECT, all but its last partial block.  Nothing reads a chunk soon
 * after a backup writes it, and through the page cache each byte is first
 * copied into a newly allocated page: where free memory is cold (a VM
 * whose free pages go back to its host) that copy costs about nine times
 * a warm one and was the backup's largest cost after zstd and SHA-256.
 * Below DIRECT_MIN the extra system call is not worth it. */
#define DIRECT_MIN (64u << 10)
#define DIRECT_ALIGN 4096u

enum slot_state { SLOT_EMPTY = 0, SLOT_WRITING, SLOT_READY, SLOT_DEAD };

struct pending {
	digest_t d;
	uint64_t tmpno;      /* temp file is "<hex>.tmp.<pid>.<tmpno>" */
	uint32_t stored_len; /* blob size, valid when READY */
	uint8_t state;
	bool sealed; /* READY and in the batch a flush is publishing */
};

struct chunkstore {
	int dirfd;
	chunkstore_t *fallback; /* read (never written or touched) on a miss */
	pid_t pid;
	/* Subdirectory fds, -1 until opened.  Published with a CAS so readers
	 * need no lock. */
	_Atomic int *subfd;
	atomic_uint nsubfd;
	unsigned subfd_cap; /* internal opens stop caching beyond this */

	pthread_mutex_t lock;
	pthread_cond_t settled; /* a WRITING entry became READY or went away,
				 * or a flush sealed its batch or ended */
	/* Open-addressing pending set, linear probing.  Deleted entries are
	 * tombstones (DEAD) so probe chains of other entries stay intact. */
	struct pending *slots;
	size_t cap, live, dead;
	uint32_t ready, writing; /* ready: READY and not sealed */
	uint64_t ready_bytes;
	bool flushing;     /* a thread is publishing a sealed batch */
	bool flush_wanted; /* a batch is full: the flusher should run */
	bool flusher_stop;
	bool flusher_up; /* flusher started (else full batches flush inline) */
	pthread_t flusher;
	pthread_cond_t wake; /* the flusher's: a flush is wanted, or stop */
	uint32_t max_chunks;
	uint64_t max_bytes;
	_Atomic uint64_t gen;  /* bumped (under lock) by every batch flush */
	bool renames_unsynced; /* renames done since the last syncfs */
	int sticky_err;        /* a flush nobody waited for failed */
	int failure_err;       /* the errno that failure[] describes */
	char failure[128];     /* what the failed flush was doing (see chunkstore_batch_failure) */

	atomic_uint_fast64_t new_bytes, new_chunks, syncs, puts_during_flush;
	uint32_t peak_ready; /* most unsealed READY entries at once (tests) */

	/* Remote chunks (NULL: the blobs live here).  Then the local files
	 * are markers (see chunkstore.h) and intent_fd is the lock file that
	 * orders writers' intents against the remote sweep. */
	backend_t *be;
	chunkstore_rsweep last_sweep;
	atomic_bool remote_failed; /* a backend call failed since last asked */
	/* A raw stream has put a sealed blob here (SEALED_MARK exists): only
	 * then can a sealed blob sit under a plain chunk's id, and only then
	 * do plain puts and receives read a blob's header (sealed_on_disk).
	 * Looked for again at most once a second, for other processes. */
	atomic_bool sealed_seen;
	atomic_int_fast64_t sealed_looked_ns;
	int intent_fd;
	pthread_mutex_t intent_lock;
	unsigned intent_holders;
	chunkcache_t *cache; /* recently read remote blobs (NULL: none) */
	atomic_bool no_direct; /* direct_io=0, or the file system refused O_DIRECT */
};

/* Process-wide so two handles on one directory never pick the same name. */
static atomic_uint_fast64_t tmp_counter;

/* The store whose chunk cache this thread's reads bypass (verify's
 * threads: chunkstore_cache_bypass), or NULL.  Per thread, not per store:
 * a restore reading the same store in another thread keeps its cache. */
static __thread const chunkstore_t *tls_bypass;

/* The store whose backend failed this thread's last chunk read (a
 * chunkstore_get*), or NULL: that read succeeded, or failed here (a local
 * file, a pending temporary file).  Lets a caller tell the bucket's 403
 * from a local file's EACCES, which carry the same errno. */
static __thread const chunkstore_t *tls_read_remote_fail;

/* The store whose backend answered this thread's last chunk read with the
 * blob (not a local file, nor the chunk cache), or NULL. */
static __thread const chunkstore_t *tls_read_remote_ok;

/* ---- per-thread buffers ---- */

/* This thread's last backend failure, and in which store: what
 * chunkstore_remote_error gives the thread that failed, whatever other
 * threads failed since. */
static __thread struct {
	const chunkstore_t *cs;
	char msg[512];
} tls_remote;

/* Records a failed backend call (not a missing object) for the store and
 * for this thread. */
static void remote_failed(chunkstore_t *cs)
{
	atomic_store(&cs->remote_failed, true);
	tls_remote.cs = cs;
	snprintf(tls_remote.msg, sizeof(tls_remote.msg), "%s", backend_thread_errmsg());
}

struct tls_bufs {
	buf_t enc; /* blob_encode output */
	buf_t raw; /* file contents read by get() */
	uint8_t *aligned; /* O_DIRECT copy of a blob (DIRECT_ALIGN-aligned) */
	size_t aligned_cap;
	bool registered;
};
static __thread struct tls_bufs tls;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static bool tls_key_ok;

/* Frees this thread's aligned copy if it holds more than keep bytes. */
static void aligned_trim(struct tls_bufs *t, size_t keep)
{
	if (t->aligned_cap > keep) {
		free(t->aligned);
		t->aligned = NULL;
		t->aligned_cap = 0;
	}
}

/* The key exists only for its destructor: it frees a thread's buffers when
 * the thread exits (the __thread variable itself has no destructor). */
static void tls_destroy(void *p)
{
	struct tls_bufs *t = p;
	buf_free(&t->enc);
	buf_free(&t->raw);
	aligned_trim(t, 0);
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
	s->sealed = false;
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
	digest_t d;
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

/* d's name relative to its subdirectory's descriptor subfd, or relative
 * to the store's root ("abcd/<hex>") when subfd is -1. */
static void cpath_at(chunkstore_t *cs, const digest_t *d, int subfd, struct cpath *p)
{
	p->d = *d;
	digest_to_hex(d, p->buf + 5);
	memcpy(p->buf, p->buf + 5, 4);
	p->buf[4] = '/';
	p->at = subfd >= 0 ? subfd : cs->dirfd;
	p->name = subfd >= 0 ? p->buf + 5 : p->buf;
}

static void cpath_init(chunkstore_t *cs, const digest_t *d, struct cpath *p)
{
	cpath_at(cs, d, subdir_fd(cs, subdir_index(d)), p);
}

/* cpath_init for a single system call on the chunk: a subdirectory not
 * yet open is reached through the store's root (one more path component)
 * instead of being opened and cached, which would cost more than the call.
 * An unchanged backup touches thousands of chunks spread over as many
 * subdirectories, and does nothing else with them. */
static void cpath_init_once(chunkstore_t *cs, const digest_t *d, struct cpath *p)
{
	int fd = atomic_load_explicit(&cs->subfd[subdir_index(d)], memory_order_acquire) - 1;
	cpath_at(cs, d, fd, p);
}

static void tmp_name(const struct cpath *p, pid_t pid, uint64_t no, char out[TMP_NAME_MAX])
{
	snprintf(out, TMP_NAME_MAX, "%s.tmp.%d.%" PRIu64, p->name, (int)pid, no);
}

/* ---- create / open / close ---- */

int chunkstore_create(const char *dir)
{
	/* EEXIST is fine, so an interrupted create can be rerun.  The 65536
	 * subdirectories are made on first use (subdir_make): an empty store
	 * stays small. */
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	_cleanup_close_ int fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return syncfs(fd) < 0 ? -errno : 0;
}

/* Makes subdirectory idx if it is missing.  Several writers may race
 * here: EEXIST means another one won, which is just as good.  GC never
 * removes subdirectories, so one that exists stays. */
static int subdir_make(chunkstore_t *cs, unsigned idx)
{
	char name[5];
	subdir_name(idx, name);
	if (mkdirat(cs->dirfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static unsigned subfd_cap_from_rlimit(void)
{
	/* A quarter of the fd budget: backup also opens source files and the
	 * catalog, and must not hit EMFILE because of cached directories. */
	return fd_limit_share(4, 16, NSUBDIRS);
}

static int check_layout(int dirfd)
{
	/* Subdirectories appear on first use (old stores have all of them);
	 * the store marker next to the catalog says whether this is a store. */
	struct stat st;
	if (fstat(dirfd, &st) < 0)
		return -errno;
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
	cs->intent_fd = -1;
	pthread_mutex_init(&cs->intent_lock, NULL);
	pthread_mutex_init(&cs->lock, NULL);
	pthread_cond_init(&cs->settled, NULL);
	pthread_cond_init(&cs->wake, NULL);
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

/* CAIRN_BACKEND_STATS=FILE: one line of request counts per store handle,
 * appended to FILE when the store closes (tests and benchmarks count
 * requests with it; the library itself never prints). */
static void stats_line(chunkstore_t *cs)
{
	const char *path = getenv("CAIRN_BACKEND_STATS");
	if (!cs->be || !path || !*path)
		return;
	backend_stats b;
	backend_get_stats(cs->be, &b);
	chunkcache_stats c;
	chunkcache_get_stats(cs->cache, &c);
	const chunkstore_rsweep *w = &cs->last_sweep;
	char line[512];
	int n = snprintf(line, sizeof(line),
			 "put=%" PRIu64 " get=%" PRIu64 " head=%" PRIu64 " list=%" PRIu64
			 " delete_req=%" PRIu64 " delete_keys=%" PRIu64 " retries=%" PRIu64
			 " bytes_up=%" PRIu64 " bytes_down=%" PRIu64 " sweep_listed=%" PRIu64
			 " sweep_removed=%" PRIu64 " sweep_kept_recent=%" PRIu64
			 " sweep_kept_marker=%" PRIu64 " sweep_kept_intent=%" PRIu64
			 " cache_hits=%" PRIu64 " cache_misses=%" PRIu64 " cache_evictions=%" PRIu64
			 "\n",
			 b.put, b.get, b.head, b.list, b.delete_req, b.delete_keys, b.retries,
			 b.bytes_up, b.bytes_down, w->listed, w->removed, w->kept_recent,
			 w->kept_marker, w->kept_intent, c.hits, c.misses, c.evictions);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write_full(fd, line, MIN((size_t)n, sizeof(line) - 1)) < 0) {
			/* best effort: a statistics file is not worth failing for */
		}
		close(fd);
	}
}

static void flusher_end(chunkstore_t *cs);

void chunkstore_close(chunkstore_t *cs)
{
	if (!cs)
		return;
	flusher_end(cs);
	/* A later store may get the same address: none of this thread's
	 * state about cs may pass to it.  (Another thread's is its own to
	 * clear: its next read resets the flag, and verify's readers clear
	 * their bypass before they end.) */
	if (tls_remote.cs == cs)
		tls_remote.cs = NULL;
	if (tls_read_remote_fail == cs)
		tls_read_remote_fail = NULL;
	if (tls_bypass == cs)
		tls_bypass = NULL;
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
	if (cs->intent_fd >= 0)
		close(cs->intent_fd);
	stats_line(cs);
	chunkcache_close(cs->cache);
	backend_close(cs->be);
	pthread_mutex_destroy(&cs->intent_lock);
	pthread_cond_destroy(&cs->settled);
	pthread_cond_destroy(&cs->wake);
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

/* An uploaded blob's local file becomes a marker: the same size, all hole
 * (no data blocks), so it costs an inode and keeps the blob size for
 * dedup statistics (touch_stat) while the bytes live remotely.  The marker
 * is a new file renamed into place, and the data file is unlinked after:
 * truncating the data file in place would let a reader of the pending
 * chunk (read_blob) see half a blob.  The data file keeps the object's
 * intent alive (see the intent functions) until the marker is in place. */
static int publish_marker(chunkstore_t *cs, const struct cpath *p, uint32_t len)
{
	char mtmp[TMP_NAME_MAX];
	int fd;
	/* EEXIST: a stale file of a dead process that had our pid. */
	for (int tries = 0;; tries++) {
		tmp_name(p, cs->pid, atomic_fetch_add(&tmp_counter, 1), mtmp);
		fd = openat(p->at, mtmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries >= 8)
			return -errno;
	}
	int r = ftruncate(fd, len) < 0 ? -errno : 0;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && renameat(p->at, mtmp, p->at, p->name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(p->at, mtmp, 0);
	return r;
}

/* Uploads the sealed batch's temporary files, a group at a time (a group
 * bounds the open files; the backend uploads a group in parallel). */
#define UPLOAD_GROUP 256
static int upload_batch(chunkstore_t *cs, const struct pending *batch, size_t nbatch)
{
	backend_put *items = calloc(UPLOAD_GROUP, sizeof(*items));
	if (!items)
		return -ENOMEM;
	int err = 0;
	size_t n = 0;
	for (size_t i = 0; i <= nbatch && !err; i++) {
		bool last = i == nbatch;
		if (!last) {
			const struct pending *sl = &batch[i];
			struct cpath p;
			char tmp[TMP_NAME_MAX];
			cpath_init(cs, &sl->d, &p);
			tmp_name(&p, cs->pid, sl->tmpno, tmp);
			int fd = openat(p.at, tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (fd < 0) {
				err = -errno;
				break;
			}
			items[n++] = (backend_put){.d = sl->d, .fd = fd, .len = sl->stored_len};
		}
		if (n && (n == UPLOAD_GROUP || last)) {
			err = backend_put_many(cs->be, n, items, NULL);
			if (err < 0)
				remote_failed(cs);
			for (size_t k = 0; k < n; k++)
				close(items[k].fd);
			n = 0;
		}
	}
	for (size_t k = 0; k < n; k++)
		close(items[k].fd);
	free(items);
	return err;
}

/* Gives a READY entry its final name, or removes its temp file when the
 * data could not be made durable (sync_err) or the rename fails. */
static int publish_one(chunkstore_t *cs, const struct pending *s, int sync_err)
{
	struct cpath p;
	char tmp[TMP_NAME_MAX];
	cpath_init(cs, &s->d, &p);
	tmp_name(&p, cs->pid, s->tmpno, tmp);
	int r = sync_err;
	if (!r && cs->be)
		r = publish_marker(cs, &p, s->stored_len);
	else if (!r && renameat(p.at, tmp, p.at, p.name) < 0)
		r = -errno;
	/* Remote: the data file is done with either way. */
	if (r < 0 || cs->be)
		unlinkat(p.at, tmp, 0);
	return r;
}

/* Seals every unsealed READY entry and copies it into *out (caller frees).
 * Sealed entries stay in the set, so claim() still finds them. */
static int batch_seal_locked(chunkstore_t *cs, struct pending **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!cs->ready)
		return 0;
	struct pending *batch = malloc(cs->ready * sizeof(*batch));
	if (!batch)
		return -ENOMEM;
	for (size_t i = 0; i < cs->cap; i++) {
		struct pending *s = &cs->slots[i];
		if (s->state == SLOT_READY && !s->sealed) {
			s->sealed = true;
			batch[(*n)++] = *s;
		}
	}
	cs->ready = 0;
	cs->ready_bytes = 0;
	*out = batch;
	return 0;
}

/* Step 2 of the protocol, without the lock: one syncfs for the data of
 * the whole batch (or, remote, its uploads), then the renames.  On failure
 * every chunk of the batch is dropped. */
static int batch_publish(chunkstore_t *cs, const struct pending *batch, size_t n, int *sync_err,
			 char *why, size_t whylen)
{
	*sync_err = cs->be ? upload_batch(cs, batch, n) : do_syncfs(cs);
	int err = *sync_err;
	if (err)
		snprintf(why, whylen, "%s a batch of %zu chunks", cs->be ? "uploading" : "syncing",
			 n);
	for (size_t i = 0; i < n; i++) {
		int r = publish_one(cs, &batch[i], *sync_err);
		if (r < 0 && !err) {
			char hex[DIGEST_HEX_LEN + 1];
			digest_to_hex(&batch[i].d, hex);
			snprintf(why, whylen, "publishing chunk %s", hex);
			err = r;
		}
	}
	return err;
}

/* Takes a published batch out of the set.  The generation bump tells a
 * claim() that looked at the disk before a rename to look again. */
static void batch_retire_locked(chunkstore_t *cs, const struct pending *batch, size_t n,
				int sync_err)
{
	for (size_t i = 0; i < n; i++)
		pset_kill(cs, pset_find(cs, &batch[i].d));
	cs->gen++;
	if (!sync_err && !cs->be)
		cs->renames_unsynced = true;
}

/* Keeps the first failure since the last chunkstore_flush reported one:
 * its errno stops every writer (see claim and finish) and is what that
 * flush returns, and its description goes with it. */
static void failed_locked(chunkstore_t *cs, int err, const char *why)
{
	if (cs->sticky_err)
		return;
	cs->sticky_err = err;
	cs->failure_err = err;
	snprintf(cs->failure, sizeof(cs->failure), "%s", why);
}

/* Flushes the READY entries; called and returns with cs->lock held, which
 * it drops while publishing.  The caller made sure no flush is running.
 * A failure is also kept as the sticky error: it stops every writer (see
 * claim and finish) until chunkstore_flush reports it. */
static int batch_flush_locked(chunkstore_t *cs)
{
	struct pending *batch;
	size_t n;
	char why[sizeof(cs->failure)] = "sealing a batch of chunks";
	int err = batch_seal_locked(cs, &batch, &n);
	if (!err && n) {
		cs->flushing = true;
		pthread_cond_broadcast(&cs->settled); /* writers held back may go on */
		pthread_mutex_unlock(&cs->lock);
		int sync_err;
		err = batch_publish(cs, batch, n, &sync_err, why, sizeof(why));
		pthread_mutex_lock(&cs->lock);
		batch_retire_locked(cs, batch, n, sync_err);
		cs->flushing = false;
		pthread_cond_signal(&cs->wake); /* a flush wanted meanwhile can start */
		free(batch);
	}
	if (err < 0)
		failed_locked(cs, err, why);
	if (err < 0 || n)
		pthread_cond_broadcast(&cs->settled);
	return err;
}

/* The flusher thread: flushes each batch a put() found full. */
static void *flusher_main(void *arg)
{
	chunkstore_t *cs = arg;
	pthread_mutex_lock(&cs->lock);
	for (;;) {
		while (!cs->flusher_stop && (!cs->flush_wanted || cs->flushing))
			pthread_cond_wait(&cs->wake, &cs->lock);
		if (cs->flusher_stop)
			break;
		cs->flush_wanted = false;
		/* Waiters on flush_wanted must hear of it even when there
		 * turns out to be nothing to seal. */
		pthread_cond_broadcast(&cs->settled);
		batch_flush_locked(cs);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

static bool batch_full(const chunkstore_t *cs)
{
	return cs->ready >= cs->max_chunks || cs->ready_bytes >= cs->max_bytes;
}

/* A put() filled the batch: wake the flusher (started on first use, since
 * most store handles never fill one).  Without a thread, flush here. */
static void batch_full_locked(chunkstore_t *cs)
{
	if (cs->flushing || cs->flush_wanted)
		return; /* the flusher takes it when it is done */
	if (!cs->flusher_up)
		cs->flusher_up = thread_start(&cs->flusher, flusher_main, cs) == 0;
	if (cs->flusher_up) {
		cs->flush_wanted = true;
		pthread_cond_signal(&cs->wake);
		return;
	}
	batch_flush_locked(cs);
}

static void flusher_end(chunkstore_t *cs)
{
	if (!cs->flusher_up)
		return;
	pthread_mutex_lock(&cs->lock);
	cs->flusher_stop = true;
	pthread_cond_signal(&cs->wake);
	pthread_mutex_unlock(&cs->lock);
	pthread_join(cs->flusher, NULL);
	cs->flusher_up = false;
}

uint64_t chunkstore_puts_during_flush(const chunkstore_t *cs)
{
	return atomic_load(&cs->puts_during_flush);
}

uint32_t chunkstore_peak_ready(chunkstore_t *cs)
{
	pthread_mutex_lock(&cs->lock);
	uint32_t n = cs->peak_ready;
	pthread_mutex_unlock(&cs->lock);
	return n;
}

void chunkstore_reset_error(chunkstore_t *cs)
{
	pthread_mutex_lock(&cs->lock);
	cs->sticky_err = 0;
	cs->failure[0] = 0;
	pthread_mutex_unlock(&cs->lock);
}

bool chunkstore_batch_failure(chunkstore_t *cs, int err, char *buf, size_t len)
{
	pthread_mutex_lock(&cs->lock);
	bool failed = cs->failure[0] && cs->failure_err == err;
	if (failed) {
		snprintf(buf, len, "%s", cs->failure);
		cs->failure[0] = 0;
	}
	pthread_mutex_unlock(&cs->lock);
	return failed;
}

void chunkstore_wait_flushes(chunkstore_t *cs)
{
	pthread_mutex_lock(&cs->lock);
	while (cs->flush_wanted || cs->flushing)
		pthread_cond_wait(&cs->settled, &cs->lock);
	pthread_mutex_unlock(&cs->lock);
}

int chunkstore_flush(chunkstore_t *cs)
{
	pthread_mutex_lock(&cs->lock);
	while (cs->flushing)
		pthread_cond_wait(&cs->settled, &cs->lock);
	cs->flush_wanted = false; /* this flush takes the full batch too */
	pthread_cond_broadcast(&cs->settled);
	batch_flush_locked(cs);
	if (cs->be)
		cs->renames_unsynced = false; /* markers: no durability needed */
	if (cs->renames_unsynced) {
		int r = do_syncfs(cs);
		if (!r)
			cs->renames_unsynced = false;
		else
			failed_locked(cs, r, "syncing the names of new chunks");
	}
	/* The first failure since the last report, this flush's own or a
	 * batch's on the flusher thread: that batch was dropped too, and
	 * whoever flushes must learn of it before trusting the chunks it put. */
	int err = cs->sticky_err;
	cs->sticky_err = 0;
	if (!err)
		cs->failure[0] = 0;
	pthread_mutex_unlock(&cs->lock);
	return err;
}

/* ---- put ---- */

/* Sets the chunk's atime to now (what a running GC checks), nothing else. */
static int touch_atime(const struct cpath *p)
{
	static const struct timespec ts[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
	return utimensat(p->at, p->name, ts, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* Touches an existing chunk and gives its size: 0, or -ENOENT if it is
 * missing.  The touch decides whether the chunk is there, as GC's sweep
 * expects (gc.c: it renames a chunk aside, looks at its atime again, and
 * puts back one touched meanwhile), so it comes first.  The look after it
 * checks what is there: only a regular file that is not empty counts, as
 * no blob or marker is empty; anything else is damage, and the chunk is
 * written again (its rename replaces a file or link, and fails naming the
 * chunk if a directory is in the way) rather than deduplicated against
 * something that cannot be read back.  1: the touch found the chunk but
 * the look did not - a sweep renamed it aside after our touch and will
 * put it back - so it is there, its size unknown (*stored_len 0). */
static int touch_stat(const struct cpath *p, uint32_t *stored_len)
{
	int r = touch_atime(p);
	if (r < 0)
		return r;
	struct stat st;
	*stored_len = 0;
	if (fstatat(p->at, p->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 1 : -errno;
	if (!S_ISREG(st.st_mode) || st.st_size == 0)
		return -ENOENT;
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

#define SEALED_MARK ".sealed-received"

/* Has a raw stream ever put a sealed blob into this store? */
static bool sealed_possible(chunkstore_t *cs)
{
	if (atomic_load(&cs->sealed_seen))
		return true;
	int64_t now = mono_ns(), last = atomic_load(&cs->sealed_looked_ns);
	/* Looked within the last second: what that look found.  The time is
	 * stored only once the look is done and its finding stored, so a
	 * thread never takes another's look in progress for "no mark" (it
	 * did, under load: a plain backup then deduplicated onto a planted
	 * sealed blob, t1341 under ASan). */
	if (last && now - last < 1000000000)
		return atomic_load(&cs->sealed_seen);
	if (faccessat(cs->dirfd, SEALED_MARK, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		atomic_store(&cs->sealed_seen, true);
	atomic_store(&cs->sealed_looked_ns, now);
	return atomic_load(&cs->sealed_seen);
}

/* Before the first sealed blob of a raw stream is written: the mark is
 * in place (and made durable by the batch's sync, before any blob of
 * the batch is published). */
static int mark_sealed(chunkstore_t *cs)
{
	if (cs->be || atomic_load(&cs->sealed_seen))
		return 0;
	int fd = openat(cs->dirfd, SEALED_MARK, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	atomic_store(&cs->sealed_seen, true);
	return 0;
}

/* True when the blob at p is sealed (encrypted).  Local blobs only: a
 * remote store's marker holds no header. */
static bool sealed_on_disk(chunkstore_t *cs, const struct cpath *p)
{
	if (cs->be || !sealed_possible(cs))
		return false;
	uint8_t head[BLOB_HEADER_LEN];
	int fd = openat(p->at, p->name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return false;
	ssize_t n = pread(fd, head, sizeof(head), 0);
	close(fd);
	return n > 0 && blob_is_encrypted(head, (size_t)n);
}

/* Decides who writes d.  Returns 1 if the chunk exists (pending or on disk;
 * *stored_len set), 0 if the caller now owns a WRITING entry for it, or a
 * negative errno.  The flush generation closes the window in which a batch
 * renames d between our look at the set and our look at the disk.
 * plain: d is a plain chunk's SHA-256, which a sealed blob can only hold
 * if a raw stream filed it there (its id cannot be checked without the
 * key): such a blob is replaced, never deduplicated against. */
static int claim(chunkstore_t *cs, const digest_t *d, const struct cpath *p, uint32_t *stored_len,
		 bool plain)
{
	for (;;) {
		pthread_mutex_lock(&cs->lock);
		/* A batch flush failed: its chunks are gone, so stop the
		 * writer now rather than at the next chunkstore_flush (which
		 * still reports it, and clears it). */
		if (cs->sticky_err) {
			int e = cs->sticky_err;
			pthread_mutex_unlock(&cs->lock);
			return e;
		}
		struct pending *s = wait_settled_locked(cs, d);
		uint64_t gen = cs->gen;
		if (s)
			*stored_len = s->stored_len;
		pthread_mutex_unlock(&cs->lock);
		if (s)
			return 1;

		int r = touch_stat(p, stored_len);
		/* A chunk in a sweep's window (1) is written again: its size is
		 * unknown, and GC drops its own copy when ours is in place. */
		if (r == 1 || (r == 0 && plain && sealed_on_disk(cs, p)))
			r = -ENOENT;
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

/* ---- remote chunks: intents ----
 *
 * With a remote backend, a writer's temporary file is its intent to upload
 * that chunk, and the remote sweep keeps every object that has a local
 * marker or a temporary file.  The sweep checks and deletes under an
 * exclusive flock of the intent file; writers create their temporary
 * files under a shared one.  So a temporary created before the sweep's
 * check is seen by it, and one created after it uploads after the delete
 * (see docs/BACKENDS.md).  flock belongs to the open file, which all our
 * threads share: a count keeps the shared lock while any thread needs it. */
static int intent_begin(chunkstore_t *cs)
{
	if (!cs->be)
		return 0;
	pthread_mutex_lock(&cs->intent_lock);
	int r = 0;
	if (cs->intent_holders == 0) {
		while ((r = flock(cs->intent_fd, LOCK_SH)) < 0 && errno == EINTR)
			;
		r = r < 0 ? -errno : 0;
	}
	if (!r)
		cs->intent_holders++;
	pthread_mutex_unlock(&cs->intent_lock);
	return r;
}

static void intent_end(chunkstore_t *cs)
{
	if (!cs->be)
		return;
	pthread_mutex_lock(&cs->intent_lock);
	if (--cs->intent_holders == 0)
		flock(cs->intent_fd, LOCK_UN);
	pthread_mutex_unlock(&cs->intent_lock);
}

/* The first len bytes of data, at an address O_DIRECT takes: data itself
 * if aligned, else this thread's aligned copy.  NULL: out of memory. */
static const uint8_t *direct_source(const uint8_t *data, size_t len)
{
	if ((uintptr_t)data % DIRECT_ALIGN == 0)
		return data;
	struct tls_bufs *t = tls_get();
	if (t->aligned_cap < len) {
		aligned_trim(t, 0);
		if (posix_memalign((void **)&t->aligned, DIRECT_ALIGN, len))
			return t->aligned = NULL;
		t->aligned_cap = len;
	}
	memcpy(t->aligned, data, len);
	return t->aligned;
}

/* Writes the blob into fd, opened with O_DIRECT when direct: the whole
 * blocks directly, the tail through the page cache.  A file system that
 * takes O_DIRECT at open but not these writes (EINVAL: it wants other
 * alignment) gets the whole blob through the page cache, and no further
 * O_DIRECT from this handle. */
static int write_blob(chunkstore_t *cs, int fd, bool direct, const buf_t *blob)
{
	size_t head = direct ? blob->len / DIRECT_ALIGN * DIRECT_ALIGN : 0;
	if (head) {
		const uint8_t *src = direct_source(blob->data, head);
		int r = src ? pwrite_full(fd, src, head, 0) : -ENOMEM;
		aligned_trim(tls_get(), TLS_KEEP_MAX);
		if (r == -EINVAL) {
			atomic_store(&cs->no_direct, true);
			head = 0;
		} else if (r < 0) {
			return r;
		}
	}
	if (direct && fcntl(fd, F_SETFL, 0) < 0)
		return -errno;
	return pwrite_full(fd, blob->data + head, blob->len - head, head);
}

/* may_direct: the caller has other writers to use the CPU while this one
 * waits for an O_DIRECT write (a backup's workers).  A receive writes in
 * stream order on one thread, where that wait would hold up the stream. */
static int write_tmp(chunkstore_t *cs, const struct cpath *p, const buf_t *blob, bool may_direct,
		     uint64_t *tmpno)
{
	char tmp[TMP_NAME_MAX];
	int fd;
	/* EEXIST can only be a stale file of a dead process that had our pid;
	 * ENOENT is a subdirectory not made yet. */
	bool made = false;
	/* A bucket store reads its temporary files back at once to upload
	 * them: there the page cache is what it needs. */
	bool direct = may_direct && !cs->be && blob->len >= DIRECT_MIN &&
		      !atomic_load(&cs->no_direct);
	for (int tries = 0;; tries++) {
		*tmpno = atomic_fetch_add(&tmp_counter, 1);
		tmp_name(p, cs->pid, *tmpno, tmp);
		int r = intent_begin(cs);
		if (r < 0)
			return r;
		fd = openat(p->at, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | (direct ? O_DIRECT : 0),
			    0600);
		int e = errno;
		intent_end(cs);
		if (fd >= 0)
			break;
		if (e == EINVAL && direct) { /* no O_DIRECT on this file system */
			atomic_store(&cs->no_direct, true);
			direct = false;
			continue;
		}
		if (e == ENOENT && !made) {
			made = true;
			r = subdir_make(cs, subdir_index(&p->d));
			if (r < 0)
				return r;
			continue;
		}
		if (e != EEXIST || tries >= 8)
			return -e;
	}
	int r = write_blob(cs, fd, direct, blob);
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
		if (cs->flushing)
			atomic_fetch_add(&cs->puts_during_flush, 1);
		cs->peak_ready = MAX(cs->peak_ready, cs->ready);
	}
	pthread_cond_broadcast(&cs->settled);
	/* While a flush runs the next batch may fill once, no more: a writer
	 * that finds it full waits until it is sealed, so the temporary files
	 * (remote: the bytes not yet uploaded) stay within two batches however
	 * slow the syncfs or the uploads are. */
	while (r == 0 && !cs->sticky_err && batch_full(cs)) {
		batch_full_locked(cs);
		if (!batch_full(cs))
			break; /* flushed right here */
		pthread_cond_wait(&cs->settled, &cs->lock);
	}
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
	int r = claim(cs, d, &p, stored_len, !k);
	if (r)
		return r > 0 ? 0 : r;

	buf_t *b = &tls_get()->enc;
	uint64_t tmpno = 0;
	r = k ? blob_encode_sealed(k, data, len, level, b) : blob_encode(data, len, level, b);
	if (!r)
		r = write_tmp(cs, &p, b, true, &tmpno);
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
	bool sealed = blob_is_encrypted(blob, len);
	int r = claim(cs, d, &p, stored_len, !sealed);
	if (r)
		return r > 0 ? 0 : r;
	if (sealed && (r = mark_sealed(cs)) < 0)
		return finish(cs, d, r, 0, 0);
	/* The caller verified the blob; write its bytes as they are. */
	buf_t b = {.data = (uint8_t *)blob, .len = len, .cap = len};
	uint64_t tmpno = 0;
	r = write_tmp(cs, &p, &b, false, &tmpno);
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

/* A marker reads as zeros (it is all hole); a blob starts with its magic. */
static bool blob_is_marker(const buf_t *b)
{
	return b->len == 0 || b->data[0] == 0;
}

/* With a backend: the local file is a marker (fetch the object) unless it
 * holds data.  A chunk unknown locally is still asked for remotely: the
 * bucket is the truth, the markers only a cache of it.  Between the two,
 * the local chunk cache; *cached says the blob came from it. */
static int read_remote(chunkstore_t *cs, const struct cpath *p, buf_t *out, bool *cached)
{
	struct stat st;
	if (fstatat(p->at, p->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_blocks > 0) {
		int r = read_file_at(p->at, p->name, out);
		if (r || !blob_is_marker(out))
			return r;
	}
	bool bypass = tls_bypass == cs;
	if (!bypass && chunkcache_get(cs->cache, &p->d, out) == 0) {
		*cached = true;
		return 0;
	}
	int r = backend_get(cs->be, &p->d, out);
	if (r < 0)
		tls_read_remote_fail = cs;
	else
		tls_read_remote_ok = cs;
	if (r < 0 && r != -ENOENT)
		remote_failed(cs);
	/* Bypassing, nothing is kept either: a verify reads every chunk once,
	 * and kept, they would evict the working set of restores and gc. */
	if (r == 0 && !bypass)
		chunkcache_put(cs->cache, &p->d, out->data, out->len);
	return r;
}

/* Reads the raw blob of d: the temp file if d is pending in this batch,
 * else the final file (or the bucket; *cached: from the chunk cache). */
static int read_blob(chunkstore_t *cs, const digest_t *d, buf_t *out, bool *cached)
{
	*cached = false;
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
		/* ENOENT: a flush renamed it since we looked (with a backend it
		 * may also have become a marker: blob_is_marker). */
		if (r != -ENOENT && !(cs->be && !r && blob_is_marker(out)))
			return r;
	}
	if (cs->be)
		return read_remote(cs, &p, out, cached);
	return read_file_at(p.at, p.name, out);
}

/* Judges a blob just read: decoded (out set: checks its name too), or,
 * when only the raw blob is wanted, its header and checksum checked, if
 * it came from the cache or the bucket.  A raw blob from the bucket goes
 * unchecked nowhere: send would put a body damaged on its way into a
 * stream and succeed (a local file's blob is the caller's to judge). */
static int judge_blob(chunkstore_t *cs, const crypt_keys_t *k, const digest_t *d,
		      const buf_t *raw, bool cached, buf_t *out)
{
	if (out)
		return blob_decode_key(k, raw->data, raw->len, d, out);
	if (cached || cs->be)
		return blob_check(raw->data, raw->len, NULL);
	return 0;
}

/* A cached copy that does not decode (out set) or check (out NULL: the
 * raw blob is wanted) is dropped and read again from the bucket: the cache
 * is never the only copy, so never trusted.  So is a fresh object that
 * does not, once. */
static int read_blob_checked(chunkstore_t *cs, const crypt_keys_t *k, const digest_t *d,
			     buf_t *raw, buf_t *out)
{
	bool cached;
	int r = read_blob(cs, d, raw, &cached);
	if (!r)
		r = judge_blob(cs, k, d, raw, cached, out);
	/* A copy from the cache, or a body damaged on its way from the
	 * bucket: one fresh read before calling the chunk damaged. */
	if (r == CAIRN_ECORRUPT && (cached || cs->be)) {
		chunkcache_drop(cs->cache, d);
		r = read_blob(cs, d, raw, &cached);
		if (!r)
			r = judge_blob(cs, k, d, raw, cached, out);
	}
	if (r == -ENOENT && cs->fallback)
		return read_blob_checked(cs->fallback, k, d, raw, out);
	return r;
}

int chunkstore_get(chunkstore_t *cs, const digest_t *d, buf_t *out)
{
	return chunkstore_get_key(cs, NULL, d, out);
}

int chunkstore_get_key(chunkstore_t *cs, const crypt_keys_t *k, const digest_t *d, buf_t *out)
{
	tls_read_remote_fail = tls_read_remote_ok = NULL;
	buf_t *raw = &tls_get()->raw;
	int r = read_blob_checked(cs, k, d, raw, out);
	tls_trim(raw);
	return r;
}

int chunkstore_get_raw(chunkstore_t *cs, const digest_t *d, buf_t *out)
{
	tls_read_remote_fail = tls_read_remote_ok = NULL;
	return read_blob_checked(cs, NULL, d, out, NULL);
}

bool chunkstore_read_failed_remotely(const chunkstore_t *cs)
{
	return cs && tls_read_remote_fail == cs;
}

bool chunkstore_read_from_bucket(const chunkstore_t *cs)
{
	return cs && tls_read_remote_ok == cs;
}

/* ---- small accessors ---- */

/* For a chunk with no file: 0 when a pending write holds it (its temp file
 * was just written, as fresh as a touched one), else what the fallback
 * store says (a dry run's scratch store reads through to the real one),
 * else -ENOENT. */
/* gen is the flush generation read before the caller looked at the disk:
 * a batch retired since may have renamed d after that look (-EAGAIN: look
 * again). */
static int pending_or_fallback(chunkstore_t *cs, const digest_t *d, uint64_t gen)
{
	pthread_mutex_lock(&cs->lock);
	struct pending *s = pset_find(cs, d);
	bool pending = s && s->state == SLOT_READY;
	bool moved = cs->gen != gen;
	pthread_mutex_unlock(&cs->lock);
	if (!pending && moved)
		return -EAGAIN;
	if (!pending && cs->fallback)
		return chunkstore_has(cs->fallback, d);
	return pending ? 0 : -ENOENT;
}

/* Touches the chunk at d.  What is on disk must be usable as the chunk
 * (touch_stat: a non-empty regular file), else it counts as missing, so a
 * backup reads the data again and a sync sends it again. */
int chunkstore_touch(chunkstore_t *cs, const digest_t *d)
{
	struct cpath p;
	cpath_init_once(cs, d, &p);
	int r;
	bool looked_aside = false;
	do {
		uint64_t gen = atomic_load(&cs->gen);
		uint32_t len;
		r = touch_stat(&p, &len);
		if (r == 1) /* in a sweep's window after our touch: kept */
			r = 0;
		/* In a sweep's window before our touch: the chunk is renamed
		 * aside and goes unless someone touched it first.  A receive
		 * told the sender it has the chunk and cannot write it again,
		 * so it takes the chunk back, as a writer would by writing it,
		 * and touches again (also when a writer's copy took the name
		 * meanwhile).  (On a remote store the file is only a marker
		 * and the remote sweep decides about the object: left alone.) */
		if (r == -ENOENT && !cs->be && !looked_aside) {
			looked_aside = true;
			if (chunk_unquarantine(p.at, p.name) >= 0) {
				r = -EAGAIN;
				continue;
			}
		}
		if (r == -ENOENT)
			r = pending_or_fallback(cs, d, gen);
	} while (r == -EAGAIN);
	return r;
}

bool chunkstore_sealed_at(chunkstore_t *cs, const digest_t *d)
{
	struct cpath p;
	cpath_init_once(cs, d, &p);
	return sealed_on_disk(cs, &p);
}

int chunk_unquarantine(int dirfd, const char *name)
{
	char q[5 + DIGEST_HEX_LEN + 8];
	if ((size_t)snprintf(q, sizeof(q), "%s.gc", name) >= sizeof(q))
		return -ENAMETOOLONG;
	int r = rename_noreplace(dirfd, q, name);
	if (r == 0)
		return 1;
	if (r == -ENOENT)
		return 0;
	if (r == -EEXIST) {
		/* The chunk was written anew meanwhile: same content. */
		unlinkat(dirfd, q, 0);
		return 0;
	}
	return r;
}

int chunkstore_set_aside(chunkstore_t *cs, const digest_t *d)
{
	struct cpath p;
	cpath_init_once(cs, d, &p);
	char bad[sizeof(p.buf) + 8];
	snprintf(bad, sizeof(bad), "%s.bad", p.name);
	return renameat(p.at, p.name, p.at, bad) < 0 ? -errno : 0;
}

void chunkstore_set_fallback(chunkstore_t *cs, chunkstore_t *fallback)
{
	cs->fallback = fallback;
}

int chunkstore_has(chunkstore_t *cs, const digest_t *d)
{
	struct cpath p;
	cpath_init(cs, d, &p);
	int r;
	do {
		uint64_t gen = atomic_load(&cs->gen);
		struct stat st;
		/* As touch_stat judges it: an empty file is damage, and the
		 * chunk is missing (a dry run's estimate counts it as sent). */
		if (fstatat(p.at, p.name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			return S_ISREG(st.st_mode) && st.st_size > 0 ? 0 : -ENOENT;
		if (errno != ENOENT)
			return -errno;
		r = pending_or_fallback(cs, d, gen);
	} while (r == -EAGAIN);
	return r;
}

int chunkstore_dirfd(chunkstore_t *cs, unsigned idx)
{
	if (idx >= NSUBDIRS)
		return -EINVAL;
	int fd = atomic_load_explicit(&cs->subfd[idx], memory_order_acquire) - 1;
	if (fd >= 0)
		return fd;
	fd = subdir_open_cached(cs, idx);
	if (fd == -ENOENT) {
		int r = subdir_make(cs, idx);
		fd = r < 0 ? r : subdir_open_cached(cs, idx);
	}
	return fd;
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

void chunkstore_set_direct(chunkstore_t *cs, bool on)
{
	atomic_store(&cs->no_direct, !on);
}

/* ---- remote chunks ---- */

int chunkstore_set_backend(chunkstore_t *cs, backend_t *be, const char *lockpath)
{
	int fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	cs->intent_fd = fd;
	cs->be = be;
	return 0;
}

void chunkstore_set_cache(chunkstore_t *cs, chunkcache_t *cache)
{
	chunkcache_close(cs->cache);
	cs->cache = cache;
}

void chunkstore_cache_bypass(chunkstore_t *cs, bool bypass)
{
	if (bypass)
		tls_bypass = cs;
	else if (tls_bypass == cs)
		tls_bypass = NULL;
}

backend_t *chunkstore_backend(const chunkstore_t *cs)
{
	return cs->be;
}

/* Is there a marker, a quarantined marker ("<hex>.gc", being removed by a
 * local sweep) or a writer's temporary file for d?  Reads d's directory
 * (only deletion candidates get here, and they are few per directory). */
static bool has_local_trace(chunkstore_t *cs, const digest_t *d)
{
	char name[5], hex[DIGEST_HEX_LEN + 1];
	subdir_name(subdir_index(d), name);
	digest_to_hex(d, hex);
	int fd = openat(cs->dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT; /* unreadable: keep, to be safe */
	DIR *dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return true;
	}
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(dp))) {
		const char *rest = e->d_name + DIGEST_HEX_LEN;
		/* The marker, "<hex>.gc" or "<hex>.tmp.<pid>.<n>"; verify's
		 * "<hex>.bad" (a damaged object) does not keep the object. */
		found = !strncmp(e->d_name, hex, DIGEST_HEX_LEN) &&
			(!*rest || !strcmp(rest, ".gc") || !strncmp(rest, ".tmp.", 5));
	}
	closedir(dp);
	return found;
}

/* Deletes the candidates that still have no local trace, holding the
 * intent lock exclusively so no writer starts an upload meanwhile. */
static int delete_candidates(chunkstore_t *cs, digest_t *cand, uint64_t *sizes, size_t n,
			     chunkstore_rsweep *out)
{
	/* Tests only: widen the window between the listing and the delete,
	 * in which writers may start uploading candidates. */
	const char *delay = getenv("CAIRN_TEST_BUCKET_SWEEP_DELAY_US");
	if (delay)
		usleep((unsigned)strtoul(delay, NULL, 10) % 10000000);
	while (flock(cs->intent_fd, LOCK_EX) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	size_t k = 0;
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++) {
		if (has_local_trace(cs, &cand[i])) {
			out->kept_intent++;
			continue;
		}
		bytes += sizes[i];
		cand[k++] = cand[i];
	}
	int r = backend_delete_many(cs->be, k, cand);
	flock(cs->intent_fd, LOCK_UN);
	for (size_t i = 0; !r && i < k; i++)
		chunkcache_drop(cs->cache, &cand[i]);
	if (!r) {
		out->removed += k;
		out->removed_bytes += bytes;
	}
	return r;
}

#define SWEEP_BATCH 1000

int chunkstore_sweep_remote(chunkstore_t *cs, int64_t threshold_ns, const digest_t *keep,
			    size_t nkeep, const volatile sig_atomic_t *stop, chunkstore_rsweep *out)
{
	memset(out, 0, sizeof(*out));
	if (!cs->be)
		return 0;
	backend_set_stop(stop);
	backend_stats s0, s1;
	backend_get_stats(cs->be, &s0);
	digest_t *cand = malloc(SWEEP_BATCH * sizeof(*cand));
	uint64_t *sizes = malloc(SWEEP_BATCH * sizeof(*sizes));
	int r = cand && sizes ? 0 : -ENOMEM;
	size_t n = 0;
	char *cursor = NULL;
	do {
		backend_obj *o = NULL;
		size_t no = 0;
		if (r == 0)
			r = backend_list_page(cs->be, &cursor, &o, &no);
		for (size_t i = 0; i < no && r == 0; i++) {
			out->listed++;
			struct cpath p;
			struct stat st;
			cpath_init(cs, &o[i].d, &p);
			if (o[i].mtime_ns >= threshold_ns) {
				out->kept_recent++;
			} else if (fstatat(p.at, p.name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
				/* Local sweep already removed stale markers: a marker
				 * that is still here is referenced or pending. */
				out->kept_marker++;
			} else if (nkeep && bsearch(&o[i].d, keep, nkeep, sizeof(*keep), digest_cmp_void)) {
				/* Referenced, its marker lost (verify set it aside,
				 * a crash, a hand): the object is what is left. */
				out->kept_referenced++;
			} else {
				cand[n] = o[i].d;
				sizes[n++] = o[i].size;
			}
			if (n == SWEEP_BATCH) {
				r = delete_candidates(cs, cand, sizes, n, out);
				n = 0;
			}
		}
		free(o);
		/* *stop is set by another thread or a signal: an atomic read */
		if (r == 0 && stop && __atomic_load_n(stop, __ATOMIC_RELAXED))
			r = -EINTR;
	} while (r == 0 && cursor);
	if (r == 0 && n)
		r = delete_candidates(cs, cand, sizes, n, out);
	free(cursor);
	free(cand);
	free(sizes);
	backend_get_stats(cs->be, &s1);
	backend_set_stop(NULL);
	out->list_requests = s1.list - s0.list;
	out->delete_requests = s1.delete_req - s0.delete_req;
	cs->last_sweep = *out;
	if (r < 0)
		remote_failed(cs);
	return r;
}

/* A marker for an object of `size` bytes the bucket holds: an empty file
 * of that apparent size (no blocks: blob_is_marker), fresh atime. */
static int marker_make(chunkstore_t *cs, const digest_t *d, uint64_t size)
{
	struct cpath p;
	cpath_init(cs, d, &p);
	int r = 0;
	int fd = openat(p.at, p.name, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == ENOENT) {
		r = subdir_make(cs, subdir_index(d));
		cpath_init(cs, d, &p);
		if (!r)
			fd = openat(p.at, p.name, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
	}
	if (fd < 0 || ftruncate(fd, size > UINT32_MAX ? 0 : size) < 0)
		r = r ? r : -errno;
	if (fd >= 0)
		close(fd);
	return r;
}

int chunkstore_import_markers(chunkstore_t *cs, uint64_t *count)
{
	*count = 0;
	if (!cs->be)
		return -EINVAL;
	char *cursor = NULL;
	int r = 0;
	do {
		backend_obj *o = NULL;
		size_t no = 0;
		r = backend_list_page(cs->be, &cursor, &o, &no);
		for (size_t i = 0; i < no && r == 0; i++)
			if ((r = marker_make(cs, &o[i].d, o[i].size)) == 0)
				(*count)++;
		free(o);
	} while (r == 0 && cursor);
	free(cursor);
	return r;
}

int chunkstore_remark(chunkstore_t *cs, const digest_t *d, crypt_keys_t *const *keys,
		      size_t nkeys)
{
	if (!cs->be)
		return -ENOENT;
	/* verify judged the object (<hex>.bad): only a backup of the data,
	 * which uploads it again, undoes that. */
	struct cpath p;
	cpath_init(cs, d, &p);
	char bad[sizeof(p.buf) + 8];
	snprintf(bad, sizeof(bad), "%s.bad", p.name);
	if (faccessat(p.at, bad, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	/* The bucket's own copy, not the cache's, and it must be d's: the
	 * marker vouches for it.  A sealed blob's id needs its root's key;
	 * the first key whose tag opens it gives the verdict. */
	buf_t raw = {0}, plain = {0};
	int r = backend_get(cs->be, d, &raw);
	if (r < 0 && r != -ENOENT)
		remote_failed(cs);
	if (r == 0 && blob_is_encrypted(raw.data, raw.len)) {
		bool authentic = false;
		r = -ENOKEY;
		for (size_t i = 0; i < nkeys && !authentic; i++) {
			buf_free(&plain);
			r = blob_decode_key_auth(keys[i], raw.data, raw.len, d, &plain, &authentic);
		}
		if (!authentic)
			r = -ENOKEY;
	} else if (r == 0) {
		r = blob_decode_key(NULL, raw.data, raw.len, d, &plain);
	}
	if (r == 0)
		r = marker_make(cs, d, raw.len);
	buf_free(&raw);
	if (plain.data) /* a sealed chunk's plaintext does not linger */
		explicit_bzero(plain.data, plain.cap);
	buf_free(&plain);
	return r;
}

bool chunkstore_remote_error(chunkstore_t *cs, char *buf, size_t len)
{
	if (!cs || !cs->be)
		return false;
	bool anywhere = atomic_exchange(&cs->remote_failed, false);
	if (tls_remote.cs == cs) {
		tls_remote.cs = NULL;
		snprintf(buf, len, "%s", tls_remote.msg);
		return true;
	}
	/* A failure on another thread (a worker of this one) */
	if (!anywhere)
		return false;
	snprintf(buf, len, "%s", backend_errmsg(cs->be));
	return true;
}
