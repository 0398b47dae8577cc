/* gc.c - garbage collection: mark (batched, sorted touches) and sweep.
 *
 * Mark walks every partial receive, then every snapshot (by dataset, then
 * createtxg, so that consecutive snapshots share most chunks and the LRU
 * keeps hitting).  A snapshot's chunks are its tree and index roots plus
 * every record of its index stream (which lists tree chunks too).  Each
 * reference goes through the LRU; a miss is queued in the pending list; a
 * full list is flushed: sorted (by inode numbers read from exactly the
 * directories the batch needs, or by digest, or left in arrival order),
 * then touched with utimensat(dirfd, name, {UTIME_NOW, UTIME_OMIT},
 * AT_SYMLINK_NOFOLLOW) through directory fds held for that flush.  A
 * flush runs in a thread of its own while the walk fills the next list
 * (directories read by GC_IO_THREADS threads, the sorted list touched by
 * `threads` threads in contiguous parts).  Index chunks already parsed in
 * this run are not read again (gc_idxwalk keeps their boundary bytes) and
 * the others are opened ahead by prefetch threads.  Sweep reads all 65536
 * directories on `threads` threads and removes chunks whose atime is
 * older than the threshold below.
 *
 * Memory: the LRU (64 bytes a digest), three pending lists of 48 bytes an
 * entry (filling, flushing, sort scratch), the index-chunk edge cache
 * (cache/16 entries of 116 bytes), 16 directory buffers of 64 KiB, and
 * per snapshot its root lists: set by gc_cache_capacity and gc_batch, not
 * by the number of chunks.  Both default to 1M entries (gc_batch equal to
 * the LRU size, so a warm run is one sorted pass per batch the cache did
 * not absorb): about 64 + 3 * 48 = 208 MiB.
 *
 * WHY A RUNNING BACKUP NEVER LOSES A CHUNK
 *
 * Notation: T0 is the GC's start on the filesystem's own clock (the atime
 * the kernel gives the lock file when we touch it with UTIME_NOW right
 * before anything else); W is the start time of the oldest writer found in
 * <store>/writers, read once right after T0 (R1) and again right before
 * sweep (R2), taking the older; SLACK is 2 s; C is gc_atime_cutoff.
 *   threshold = min(T0, W - SLACK) - C
 * Sweep removes a chunk only if its atime < threshold, so every chunk
 * whose atime is >= T0, or >= W - SLACK, survives.  Take a chunk X that a
 * snapshot S needs, S committed before GC ends:
 *
 *  1. S committed before mark read it from the catalog (mark reads
 *     snapshots in keyset batches; every row committed before the walk
 *     began is seen unless destroyed).  Mark touched X at a time >= T0,
 *     so atime(X) >= T0 (UTIME_NOW uses the same coarse kernel clock
 *     that produced T0, and that clock does not go backwards: we check it
 *     by touching the lock file again after mark and refuse to sweep if it
 *     did).  Kept.  A touch failing other than with ENOENT aborts GC
 *     before sweep; ENOENT is a missing chunk: nothing to lose.
 *  2. S was written by a writer P, which registered (writer_register:
 *     file with its start time w, fsynced) before it wrote or touched any
 *     chunk.  Every chunk S references was, after w, either written new
 *     by P (a new file's atime is its creation time; the rename of the
 *     temporary keeps it) or found existing and touched by P
 *     (chunkstore_put on a duplicate, backup's reuse path and recv's
 *     completeness check through chunkstore_touch: all utimensat
 *     UTIME_NOW on the name).  So
 *     atime(X) >= w - SLACK (SLACK covers the kernel's coarse clock and
 *     timestamp granularity against w, which is read from the fine clock).
 *     a) P's registration was visible at R1: W <= w, so X is kept.
 *        "Visible" means present and locked: P holds an OFD lock on its
 *        registry file until it unregisters or dies (writer.h), so a
 *        live P in another PID namespace or on another NFS client counts,
 *        and a file whose lock is free belongs to nobody.
 *     b) P registered after R1: P's touches and writes all happened after
 *        R1, which is after T0 was taken, so atime(X) >= T0.  Kept.
 *     c) P had finished before R1: it committed S before unregistering,
 *        so S was committed before mark began: case 1.
 *  3. The race between sweep's stat and its unlink: P may touch X (case
 *     2b: atime now >= T0) right after sweep saw the old atime.  So sweep
 *     never unlinks a chunk by its name: it renames X to "X.gc" (after
 *     which no writer can reach it by name: a touch gets ENOENT and the
 *     chunk is written anew), stats the renamed inode again, and unlinks
 *     it only if the atime is still below the threshold; otherwise it
 *     renames it back (RENAME_NOREPLACE: if P wrote X anew meanwhile, the
 *     copy is dropped; same content).  A touch either happened before the
 *     rename (the second stat sees it) or fails (P rewrites X; a receive,
 *     which has no data to rewrite X with, renames "X.gc" back instead,
 *     and a sweep that then finds its "X.gc" gone keeps X).  A sweep
 *     killed between rename and unlink leaves "X.gc": marking and verify
 *     put it back where a snapshot needs X; the next sweep puts any other
 *     back under its name and judges it like every chunk (so a complete
 *     run collects it).
 *  4. Temporary files (<hex>.tmp.<pid>.<n>) go only when older than the
 *     threshold (atime and mtime) and their process is gone.
 *  5. Bookmarks keep no chunks.  Partial receives (recvstate.idx) are
 *     walked like snapshots, and first: a receive that completes during
 *     the walk has committed its snapshot (in the transaction that drops
 *     its recvstate row) before the snapshots are read, so its chunks are
 *     reached one way or the other even by a receiver that does not touch
 *     the chunks it kept from the interrupted attempt.  A snapshot whose
 *     index cannot be read is walked through its tree instead; if that
 *     fails too, or a partial receive's index cannot be read, sweep is
 *     skipped altogether: we cannot tell what it needs.
 *
 * SIGINT/SIGTERM (cairn_gc_interrupt) stop GC between batches, snapshots,
 * index chunks and directories; a stop during mark skips sweep, a stop
 * during sweep leaves the rest for the next run.  Nothing referenced is
 * removed either way: removal decisions never depend on marking being
 * complete except through atimes, and sweep only starts after mark ended.
 *
 * Dry run (-n): nothing may be touched, so reachability is computed
 * exactly in memory, bounded: the digest space is cut into ranges of
 * directories such that each range's referenced set fits a budget of
 * max(cache + batch, 65536) digests; for each range every source is read
 * (sorted indexes stop early at the range's end) and the range's
 * directories are then classified against the set.  Exact, with peak
 * memory set by the cache and batch settings, at the price of re-reading
 * index streams once per range.
 */
#include "maint/gc.h"
#include "store/backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "data/snapio.h"
#include "catalog/writer.h"
#include "crypt/encroot.h"

#define SLACK_NS (2 * 1000000000LL)
#define PROGRESS_NS 200000000LL
#define SRC_BATCH 64
#define DIRBUF (64u << 10)

/* Set by cairn_gc_interrupt(), from a signal handler or from another
 * thread (chunkstore_sweep_remote's contract), and read by the sweep
 * workers and the GC thread; see stop_flag_t. */
static stop_flag_t gc_stop;
#define GC_STOPPED() STOP_FLAG_GET(gc_stop)

void cairn_gc_interrupt(void)
{
	STOP_FLAG_SET(gc_stop, 1);
}

/* ---- names ---- */

static const char hexdig[] = "0123456789abcdef";
static int8_t hexval_tab[256];
static pthread_once_t hex_once = PTHREAD_ONCE_INIT;

static void hex_init(void)
{
	memset(hexval_tab, -1, sizeof(hexval_tab));
	for (int i = 0; i < 16; i++)
		hexval_tab[(uint8_t)hexdig[i]] = i;
}

/* Decodes 2n lower-case hex digits into n bytes; false on a bad digit. */
static bool hex_decode(const char *s, uint8_t *out, size_t n)
{
	bool ok = true;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval_tab[(uint8_t)s[2 * i]], lo = hexval_tab[(uint8_t)s[2 * i + 1]];
		ok &= (hi | lo) >= 0;
		out[i] = (uint8_t)(hi << 4 | (lo & 15));
	}
	return ok;
}

static void hex_encode(const digest_t *d, char out[DIGEST_HEX_LEN + 1])
{
	for (int i = 0; i < DIGEST_LEN; i++) {
		out[2 * i] = hexdig[d->b[i] >> 4];
		out[2 * i + 1] = hexdig[d->b[i] & 15];
	}
	out[DIGEST_HEX_LEN] = 0;
}

void gc_dir_name(unsigned dir, char out[5])
{
	for (int i = 0; i < 4; i++)
		out[i] = hexdig[dir >> (12 - 4 * i) & 15];
	out[4] = 0;
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (hexval_tab[(uint8_t)s[i]] < 0)
			return false;
	return true;
}

enum gc_name_kind gc_name_kind(const char *name, unsigned dir, int *pid)
{
	pthread_once(&hex_once, hex_init);
	size_t len = strnlen(name, 256);
	if (len < DIGEST_HEX_LEN || !all_hex(name, DIGEST_HEX_LEN))
		return GC_NAME_OTHER;
	char dn[5];
	gc_dir_name(dir, dn);
	if (memcmp(name, dn, 4))
		return GC_NAME_OTHER; /* a chunk name in the wrong directory */
	const char *rest = name + DIGEST_HEX_LEN;
	if (!*rest)
		return GC_NAME_CHUNK;
	if (!strcmp(rest, ".gc"))
		return GC_NAME_QUARANTINE;
	if (!strncmp(rest, ".tmp.", 5)) {
		char *end;
		long p = strtol(rest + 5, &end, 10);
		if (end != rest + 5 && *end == '.' && p > 0 && p <= INT_MAX) {
			const char *n = end + 1;
			if (*n && strspn(n, "0123456789") == strlen(n)) {
				*pid = (int)p;
				return GC_NAME_TEMP;
			}
		}
	}
	return GC_NAME_OTHER;
}

unsigned gc_fd_budget(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return GC_NDIRS;
	rlim_t b = rl.rlim_cur / 2;
	b = b > 64 ? b - 32 : 16;
	return b > GC_NDIRS ? GC_NDIRS : (unsigned)b;
}

/* ---- reading a directory whole ---- */

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Calls fn(name, ino, arg) for every entry but "." and ".." of the open
 * directory fd, read from the start.  buf is DIRBUF bytes. */
static int dir_each(int fd, char *buf, void (*fn)(const char *, uint64_t, void *), void *arg)
{
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		long k = syscall(SYS_getdents64, fd, buf, DIRBUF);
		if (k < 0)
			return -errno;
		if (k == 0)
			return 0;
		for (long off = 0; off < k;) {
			struct linux_dirent64 *de = (struct linux_dirent64 *)(buf + off);
			off += de->d_reclen;
			const char *n = de->d_name;
			if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])))
				continue;
			fn(n, de->d_ino, arg);
		}
	}
}

/* Items sorted by digest (the digest at offset 0 of each), a u64 inode
 * number at ino_off. */
typedef struct inoctx {
	uint8_t *base;
	size_t stride, n, ino_off;
	uint64_t found;
} inoctx_t;

static inline uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void ino_entry(const char *name, uint64_t ino, void *arg)
{
	inoctx_t *c = arg;
	/* Bytes 2..9 of the name's digest locate it among the items (all in
	 * this directory: bytes 0-1 are equal). */
	uint8_t key[8];
	if (strnlen(name, DIGEST_HEX_LEN + 1) != DIGEST_HEX_LEN || !hex_decode(name + 4, key, 8))
		return;
	uint64_t want = be64(key);
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (be64(c->base + mid * c->stride + 2) < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < c->n; lo++) {
		uint8_t *it = c->base + lo * c->stride;
		if (be64(it + 2) != want)
			break;
		digest_t d;
		if (hex_decode(name, d.b, DIGEST_LEN) &&
		    !memcmp(d.b, it, DIGEST_LEN)) {
			memcpy(it + c->ino_off, &ino, 8);
			c->found++;
			break;
		}
	}
}

static int dir_inodes_buf(int dirfd, void *items, size_t stride, size_t n, size_t ino_off,
			  char *buf)
{
	pthread_once(&hex_once, hex_init);
	uint64_t zero = 0;
	for (size_t i = 0; i < n; i++)
		memcpy((uint8_t *)items + i * stride + ino_off, &zero, 8);
	inoctx_t c = {.base = items, .stride = stride, .n = n, .ino_off = ino_off};
	return dir_each(dirfd, buf, ino_entry, &c);
}

int gc_dir_inodes(int dirfd, void *items, size_t stride, size_t n, size_t ino_off)
{
	char *buf = malloc(DIRBUF);
	if (!buf)
		return -ENOMEM;
	int r = dir_inodes_buf(dirfd, items, stride, n, ino_off, buf);
	free(buf);
	return r;
}

/* ---- the marker ---- */

typedef struct pend {
	digest_t d;
	uint64_t key; /* inode number (inode order) or arrival number */
	int64_t owner;
} pend_t;

_Static_assert(offsetof(pend_t, d) == 0, "digest first");

struct gc_marker {
	gc_marker_opts_t o;
	lru_t *lru;
	/* pend fills while fbuf (with tmp as scratch) is flushed by a thread
	 * of its own: marking goes on during a flush. */
	pend_t *pend, *fbuf, *tmp;
	size_t n, fn, cap;
	bool busy; /* a flush thread runs */
	bool flusher_ok;
	pthread_t flusher;
	int ferr;           /* its result */
	pend_t *miss;       /* missing chunks it found, reported by the caller */
	size_t nmiss, capmiss;
	uint64_t seq;
	int *dfd;      /* per directory: fd held by the current flush, or -1 */
	uint32_t *off; /* GC_NDIRS + 1: the dir-sorted list's ranges */
	unsigned *opened;
	size_t nopened;
	unsigned *gdirs; /* the directories of the group being flushed */
	bool *hit;
	char **dirbufs; /* one per io thread */
	int threads;
	gc_mark_stats_t s;
};

#define HIT_CHUNK 4096

int gc_marker_new(const gc_marker_opts_t *o, gc_marker_t **out)
{
	*out = NULL;
	pthread_once(&hex_once, hex_init);
	if (o->batch < 1 || o->batch > (1u << 28) || o->chunkfd < 0)
		return -EINVAL;
	gc_marker_t *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->o = *o;
	if (!m->o.fd_budget)
		m->o.fd_budget = gc_fd_budget();
	m->cap = o->batch;
	m->threads = 1;
	m->pend = malloc(m->cap * sizeof(pend_t));
	m->fbuf = malloc(m->cap * sizeof(pend_t));
	m->tmp = malloc(m->cap * sizeof(pend_t));
	m->dfd = malloc(GC_NDIRS * sizeof(int));
	m->off = calloc(GC_NDIRS + 1, sizeof(uint32_t));
	m->opened = malloc(GC_NDIRS * sizeof(unsigned));
	m->hit = malloc(HIT_CHUNK * sizeof(bool));
	m->gdirs = malloc(GC_NDIRS * sizeof(unsigned));
	if (m->o.io_threads < 1)
		m->o.io_threads = GC_IO_THREADS;
	if (m->o.io_threads > 64)
		m->o.io_threads = 64;
	m->dirbufs = calloc(m->o.io_threads, sizeof(char *));
	int r = 0;
	for (int i = 0; m->dirbufs && i < m->o.io_threads; i++)
		if (!(m->dirbufs[i] = malloc(DIRBUF)))
			r = -ENOMEM;
	if (!m->pend || !m->fbuf || !m->tmp || !m->dfd || !m->off || !m->opened || !m->hit || !m->gdirs ||
	    !m->dirbufs)
		r = -ENOMEM;
	if (r == 0 && o->cache_capacity)
		r = lru_new(o->cache_capacity, &m->lru);
	if (r < 0) {
		gc_marker_free(m);
		return r;
	}
	for (unsigned i = 0; i < GC_NDIRS; i++)
		m->dfd[i] = -1;
	m->s.memory = sizeof(*m) + 3 * m->cap * sizeof(pend_t) + GC_NDIRS * (3 * sizeof(int) + 4) +
		      HIT_CHUNK + (size_t)m->o.io_threads * DIRBUF +
		      (m->lru ? lru_memory(m->lru) : 0);
	*out = m;
	return 0;
}

void gc_marker_free(gc_marker_t *m)
{
	if (!m)
		return;
	if (m->busy)
		pthread_join(m->flusher, NULL);
	lru_free(m->lru);
	free(m->pend);
	free(m->fbuf);
	free(m->tmp);
	free(m->miss);
	free(m->dfd);
	free(m->off);
	free(m->opened);
	free(m->hit);
	free(m->gdirs);
	for (int i = 0; m->dirbufs && i < m->o.io_threads; i++)
		free(m->dirbufs[i]);
	free(m->dirbufs);
	free(m);
}

void gc_marker_set_threads(gc_marker_t *m, int threads)
{
	m->threads = threads < 1 ? 1 : threads > 64 ? 64 : threads;
}

void gc_marker_stats(const gc_marker_t *m, gc_mark_stats_t *out)
{
	*out = m->s;
}

static const struct timespec touch_now[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};

int gc_touch_reference(int chunkfd, const digest_t *d)
{
	char path[5 + DIGEST_HEX_LEN + 1];
	pthread_once(&hex_once, hex_init);
	hex_encode(d, path + 5);
	memcpy(path, path + 5, 4);
	path[4] = '/';
	return utimensat(chunkfd, path, touch_now, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* What one touching thread found. */
typedef struct touchres {
	uint64_t touched, path_touches, restored;
	pend_t *missing;
	size_t nmissing, capmissing;
	int err;
} touchres_t;

static void touch_one(gc_marker_t *m, const pend_t *p, touchres_t *res)
{
	unsigned dir = gc_dir_of(&p->d);
	int fd = m->dfd[dir];
	char path[5 + DIGEST_HEX_LEN + 1];
	hex_encode(&p->d, path + 5);
	const char *name = path + 5;
	int at = fd;
	if (fd < 0) {
		memcpy(path, path + 5, 4);
		path[4] = '/';
		name = path;
		at = m->o.chunkfd;
		res->path_touches++;
	}
	if (utimensat(at, name, touch_now, AT_SYMLINK_NOFOLLOW) == 0) {
		res->touched++;
		return;
	}
	int e = errno;
	if (e == ENOENT) {
		/* A sweep killed mid-removal may have left it as "<hex>.gc". */
		int dfd = fd;
		if (fd < 0) {
			char dn[5];
			gc_dir_name(dir, dn);
			dfd = openat(m->o.chunkfd, dn, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		}
		/* Touched again whether we put it back or found nothing to put
		 * back: another thread (the index walk, a receive, verify) may
		 * have put it back between our touch and our look. */
		int q = dfd >= 0 ? chunk_unquarantine(dfd, path + 5) : -1;
		if (q >= 0 && utimensat(dfd, path + 5, touch_now, AT_SYMLINK_NOFOLLOW) == 0) {
			res->touched++;
			res->restored += q;
			e = 0;
		}
		if (fd < 0 && dfd >= 0)
			close(dfd);
		if (!e)
			return;
		if (res->nmissing == res->capmissing) {
			size_t nc = res->capmissing ? res->capmissing * 2 : 16;
			pend_t *v = realloc(res->missing, nc * sizeof(*v));
			if (!v) {
				res->err = res->err ?: -ENOMEM;
				return;
			}
			res->missing = v;
			res->capmissing = nc;
		}
		res->missing[res->nmissing++] = *p;
		return;
	}
	if (!res->err)
		res->err = -e;
}

typedef struct touchjob {
	gc_marker_t *m;
	const pend_t *v;
	size_t n;
	touchres_t res;
} touchjob_t;

static void *touch_thread(void *arg)
{
	touchjob_t *j = arg;
	for (size_t i = 0; i < j->n && !j->res.err; i++)
		touch_one(j->m, &j->v[i], &j->res);
	return NULL;
}

/* Touches v[0..n) in order, split into contiguous parts over threads. */
static int touch_list(gc_marker_t *m, const pend_t *v, size_t n)
{
	int t = m->threads;
	if (n < 2048 || t < 1)
		t = 1;
	if (t > 64)
		t = 64;
	touchjob_t jobs[64];
	memset(jobs, 0, sizeof(jobs));
	pthread_t tid[64];
	bool started[64] = {0};
	size_t per = (n + t - 1) / t;
	for (int i = 0; i < t; i++) {
		size_t from = MIN(n, i * per), to = MIN(n, from + per);
		jobs[i] = (touchjob_t){.m = m, .v = v + from, .n = to - from};
		if (i > 0)
			started[i] = thread_start(&tid[i], touch_thread, &jobs[i]) == 0;
	}
	touch_thread(&jobs[0]);
	for (int i = 1; i < t; i++) {
		if (started[i])
			pthread_join(tid[i], NULL);
		else
			touch_thread(&jobs[i]);
	}
	int err = 0;
	for (int i = 0; i < t; i++) {
		touchres_t *r = &jobs[i].res;
		m->s.touched += r->touched;
		m->s.path_touches += r->path_touches;
		m->s.restored += r->restored;
		m->s.missing += r->nmissing;
		/* Reported by the marker's owner thread (wait_flush). */
		if (r->nmissing && m->nmiss + r->nmissing > m->capmiss) {
			size_t c = MAX(m->capmiss * 2, m->nmiss + r->nmissing);
			pend_t *v = realloc(m->miss, c * sizeof(*v));
			if (v) {
				m->miss = v;
				m->capmiss = c;
			} else if (!err) {
				err = -ENOMEM;
			}
		}
		for (size_t k = 0; k < r->nmissing && m->nmiss < m->capmiss; k++)
			m->miss[m->nmiss++] = r->missing[k];
		free(r->missing);
		if (r->err && !err)
			err = r->err;
	}
	return err;
}

static int open_dir(gc_marker_t *m, unsigned dir)
{
	if (m->dfd[dir] >= 0)
		return m->dfd[dir];
	char dn[5];
	gc_dir_name(dir, dn);
	int fd = openat(m->o.chunkfd, dn, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1; /* touches fall back to paths; a real problem shows there */
	m->dfd[dir] = fd;
	m->opened[m->nopened++] = dir;
	m->s.dirs_opened++;
	return fd;
}

static void close_dirs(gc_marker_t *m)
{
	for (size_t i = 0; i < m->nopened; i++) {
		close(m->dfd[m->opened[i]]);
		m->dfd[m->opened[i]] = -1;
	}
	m->nopened = 0;
}

/* Stable counting sort of pend[0..n) by directory into tmp, then swapped
 * back; off[] gets each directory's range. */
static void sort_by_dir(gc_marker_t *m)
{
	uint32_t *off = m->off;
	memset(off, 0, (GC_NDIRS + 1) * sizeof(*off));
	for (size_t i = 0; i < m->fn; i++)
		off[gc_dir_of(&m->fbuf[i].d) + 1]++;
	for (unsigned d = 0; d < GC_NDIRS; d++)
		off[d + 1] += off[d];
	/* off[d] is now the start of d; fill with a moving cursor. */
	for (size_t i = 0; i < m->fn; i++) {
		unsigned d = gc_dir_of(&m->fbuf[i].d);
		m->tmp[off[d]++] = m->fbuf[i];
	}
	/* The cursors ended at each directory's end: shift back to starts. */
	for (unsigned d = GC_NDIRS; d > 0; d--)
		off[d] = off[d - 1];
	off[0] = 0;
	pend_t *t = m->fbuf;
	m->fbuf = m->tmp;
	m->tmp = t;
}

static int pend_digest_cmp(const void *a, const void *b)
{
	return memcmp(a, b, DIGEST_LEN);
}

static void sort_slice_digest(pend_t *v, size_t n)
{
	if (n < 2)
		return;
	if (n <= 16) {
		for (size_t i = 1; i < n; i++) {
			pend_t x = v[i];
			size_t j = i;
			while (j > 0 && memcmp(&v[j - 1].d, &x.d, DIGEST_LEN) > 0) {
				v[j] = v[j - 1];
				j--;
			}
			v[j] = x;
		}
		return;
	}
	qsort(v, n, sizeof(*v), pend_digest_cmp);
}

/* LSD radix sort of v[0..n) by key (stable), using tmp. */
static void sort_by_key(pend_t *v, pend_t *tmp, size_t n)
{
	uint64_t max = 0;
	for (size_t i = 0; i < n; i++)
		max |= v[i].key;
	static __thread uint32_t cnt[1 << 11];
	pend_t *src = v, *dst = tmp;
	for (int shift = 0; shift < 64 && (max >> shift); shift += 11) {
		memset(cnt, 0, sizeof(cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(src[i].key >> shift) & 2047]++;
		uint32_t sum = 0;
		for (int b = 0; b < 2048; b++) {
			uint32_t c = cnt[b];
			cnt[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[cnt[(src[i].key >> shift) & 2047]++] = src[i];
		pend_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

static int flush_none(gc_marker_t *m)
{
	/* Arrival order; directories opened as first needed, while the fd
	 * budget lasts (then paths). */
	for (size_t i = 0; i < m->fn; i++) {
		unsigned d = gc_dir_of(&m->fbuf[i].d);
		if (m->dfd[d] < 0 && m->nopened < m->o.fd_budget)
			open_dir(m, d);
	}
	int r = touch_list(m, m->fbuf, m->fn);
	close_dirs(m);
	return r;
}

/* Prepares the directories of one group: sorts each one's entries by
 * digest, opens it, and for inode order reads its entries' inode numbers.
 * Several threads take directories in turn. */
typedef struct prep {
	gc_marker_t *m;
	size_t ndirs;
	bool by_inode;
	atomic_size_t next;
	atomic_uint_fast64_t opened, read;
} prep_t;

typedef struct prepw {
	prep_t *p;
	char *buf;
} prepw_t;

static void *prep_thread(void *arg)
{
	prepw_t *w = arg;
	prep_t *p = w->p;
	gc_marker_t *m = p->m;
	for (;;) {
		size_t i = atomic_fetch_add(&p->next, 1);
		if (i >= p->ndirs)
			break;
		unsigned d = m->gdirs[i];
		uint32_t a = m->off[d], b = m->off[d + 1];
		sort_slice_digest(m->fbuf + a, b - a);
		char dn[5];
		gc_dir_name(d, dn);
		/* On failure touches use paths; a real problem shows there. */
		int fd = openat(m->o.chunkfd, dn, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		m->dfd[d] = fd;
		if (fd >= 0)
			atomic_fetch_add(&p->opened, 1);
		if (!p->by_inode)
			continue;
		int r = fd >= 0 ? dir_inodes_buf(fd, m->fbuf + a, sizeof(pend_t), b - a,
						 offsetof(pend_t, key), w->buf)
				: -1;
		if (fd >= 0)
			atomic_fetch_add(&p->read, 1);
		if (r < 0)
			for (uint32_t k = a; k < b; k++)
				m->fbuf[k].key = 0;
	}
	return NULL;
}

static void prepare_group(gc_marker_t *m, size_t ndirs, bool by_inode)
{
	prep_t p = {.m = m, .ndirs = ndirs, .by_inode = by_inode};
	int t = ndirs < 64 ? 1 : (int)MIN((size_t)m->o.io_threads, ndirs / 16);
	pthread_t tid[64];
	prepw_t ws[64];
	int started = 0;
	for (int i = 1; i < t; i++) {
		ws[i] = (prepw_t){.p = &p, .buf = m->dirbufs[i]};
		if (thread_start(&tid[started + 1], prep_thread, &ws[i]) == 0)
			started++;
	}
	ws[0] = (prepw_t){.p = &p, .buf = m->dirbufs[0]};
	prep_thread(&ws[0]);
	for (int i = 1; i <= started; i++)
		pthread_join(tid[i], NULL);
	m->s.dirs_opened += atomic_load(&p.opened);
	m->s.dirs_read += atomic_load(&p.read);
	for (size_t i = 0; i < ndirs; i++)
		if (m->dfd[m->gdirs[i]] >= 0)
			m->opened[m->nopened++] = m->gdirs[i];
}

/* Digest and inode order: directories in groups of at most fd_budget;
 * each group's directories are opened once (and, for inode order, read
 * once for the inode numbers), its entries sorted and touched, then the
 * directories are closed. */
static int flush_sorted(gc_marker_t *m, bool by_inode)
{
	sort_by_dir(m);
	int err = 0;
	unsigned d = 0;
	while (d < GC_NDIRS && !err) {
		while (d < GC_NDIRS && m->off[d] == m->off[d + 1])
			d++;
		if (d >= GC_NDIRS)
			break;
		unsigned first = d;
		size_t ndirs = 0;
		for (; d < GC_NDIRS && ndirs < m->o.fd_budget; d++)
			if (m->off[d] != m->off[d + 1])
				m->gdirs[ndirs++] = d;
		prepare_group(m, ndirs, by_inode);
		uint32_t ga = m->off[first], gb = m->off[d];
		if (by_inode)
			sort_by_key(m->fbuf + ga, m->tmp, gb - ga);
		err = touch_list(m, m->fbuf + ga, gb - ga);
		close_dirs(m);
	}
	return err;
}

/* Flushes fbuf[0..fn); runs in the flush thread. */
static int do_flush(gc_marker_t *m)
{
	int r;
	switch (m->o.order) {
	case CAIRN_GC_ORDER_NONE:
		r = flush_none(m);
		break;
	case CAIRN_GC_ORDER_DIGEST:
		r = flush_sorted(m, false);
		break;
	default:
		r = flush_sorted(m, true);
		break;
	}
	m->fn = 0;
	return r;
}

static void *flush_thread(void *arg)
{
	gc_marker_t *m = arg;
	m->ferr = do_flush(m);
	return NULL;
}

/* Waits for the running flush, reports what it found missing, and
 * returns its result. */
static int wait_flush(gc_marker_t *m)
{
	if (!m->busy)
		return 0;
	if (m->flusher_ok)
		pthread_join(m->flusher, NULL);
	m->busy = false;
	for (size_t i = 0; i < m->nmiss; i++)
		if (m->o.missing)
			m->o.missing(&m->miss[i].d, m->miss[i].owner, m->o.arg);
	m->nmiss = 0;
	int r = m->ferr;
	m->ferr = 0;
	return r;
}

/* Hands the pending list to a flush thread (after the previous one ended). */
static int start_flush(gc_marker_t *m)
{
	int r = wait_flush(m);
	if (r < 0 || !m->n)
		return r;
	pend_t *t = m->fbuf;
	m->fbuf = m->pend;
	m->pend = t;
	m->fn = m->n;
	m->n = 0;
	m->s.flushes++;
	m->busy = true;
	m->flusher_ok = thread_start(&m->flusher, flush_thread, m) == 0;
	if (!m->flusher_ok)
		m->ferr = do_flush(m); /* no thread: flush right here */
	return 0;
}

int gc_marker_flush(gc_marker_t *m)
{
	int r = start_flush(m);
	int w = wait_flush(m);
	return r < 0 ? r : w;
}

static inline int queue(gc_marker_t *m, const digest_t *d, int64_t owner)
{
	pend_t *p = &m->pend[m->n++];
	p->d = *d;
	p->key = m->seq++;
	p->owner = owner;
	return m->n == m->cap ? start_flush(m) : 0;
}

int gc_marker_add(gc_marker_t *m, const digest_t *d, size_t n, int64_t owner)
{
	m->s.offered += n;
	if (!m->lru) {
		m->s.misses += n;
		for (size_t i = 0; i < n; i++) {
			int r = queue(m, &d[i], owner);
			if (r < 0)
				return r;
		}
		return 0;
	}
	for (size_t i = 0; i < n; i += HIT_CHUNK) {
		size_t k = MIN(HIT_CHUNK, n - i);
		lru_check_insert_many(m->lru, d + i, k, m->hit);
		for (size_t j = 0; j < k; j++) {
			if (m->hit[j]) {
				m->s.hits++;
				continue;
			}
			m->s.misses++;
			int r = queue(m, &d[i + j], owner);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ---- the index walker ---- */

typedef struct edge {
	digest_t d;
	uint8_t used, phase, headlen, taillen;
	uint8_t head[CHUNK_REF_WIRE], tail[CHUNK_REF_WIRE];
} edge_t;

struct gc_idxwalk {
	edge_t *edges;
	size_t ecap; /* power of two, or 0 */
	int pf_fd, pf_threads;
	digest_t *pf; /* the chunks of this stream to prefetch */
	size_t npf, cappf;
	buf_t chunk;
	chunk_ref_t *out;
	size_t outcap;
	gc_idxwalk_stats_t s;
};

int gc_idxwalk_new(size_t edge_capacity, gc_idxwalk_t **out)
{
	*out = NULL;
	gc_idxwalk_t *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (edge_capacity) {
		size_t c = 16;
		while (c < edge_capacity && c < (1u << 24))
			c *= 2;
		w->edges = calloc(c, sizeof(edge_t));
		if (!w->edges) {
			free(w);
			return -ENOMEM;
		}
		w->ecap = c;
	}
	w->pf_fd = -1;
	*out = w;
	return 0;
}

void gc_idxwalk_reset(gc_idxwalk_t *w)
{
	if (w->ecap)
		memset(w->edges, 0, w->ecap * sizeof(edge_t));
}

void gc_idxwalk_set_prefetch(gc_idxwalk_t *w, int chunkfd, int threads)
{
	w->pf_fd = chunkfd;
	w->pf_threads = threads < 0 ? 0 : threads > 64 ? 64 : threads;
}

void gc_idxwalk_free(gc_idxwalk_t *w)
{
	if (!w)
		return;
	free(w->pf);
	free(w->edges);
	buf_free(&w->chunk);
	free(w->out);
	free(w);
}

void gc_idxwalk_stats(const gc_idxwalk_t *w, gc_idxwalk_stats_t *out)
{
	*out = w->s;
}

static edge_t *edge_slot(gc_idxwalk_t *w, const digest_t *d)
{
	uint64_t h;
	memcpy(&h, d->b + 20, 8);
	return &w->edges[h & (w->ecap - 1)];
}

static int out_reserve(gc_idxwalk_t *w, size_t n)
{
	if (n <= w->outcap)
		return 0;
	size_t c = w->outcap ? w->outcap : 1024;
	while (c < n)
		c *= 2;
	chunk_ref_t *v = realloc(w->out, c * sizeof(*v));
	if (!v)
		return -ENOMEM;
	w->out = v;
	w->outcap = c;
	return 0;
}

static int unpack_rec(const uint8_t *p, chunk_ref_t *r)
{
	chunk_ref_unpack(p, r);
	return (!r->plain_len || r->plain_len > CHUNK_MAX_PLAIN) ? CAIRN_ECORRUPT : 0;
}

typedef struct prefetch {
	const gc_idxwalk_t *w;
	atomic_size_t next;
} prefetch_t;

static void *prefetch_thread(void *arg)
{
	prefetch_t *p = arg;
	const gc_idxwalk_t *w = p->w;
	for (;;) {
		size_t i = atomic_fetch_add(&p->next, 1);
		if (i >= w->npf)
			return NULL;
		char path[5 + DIGEST_HEX_LEN + 1];
		hex_encode(&w->pf[i], path + 5);
		memcpy(path, path + 5, 4);
		path[4] = '/';
		/* Never block on a FIFO planted as a chunk, nor follow a link. */
		int fl = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW;
		int fd = openat(w->pf_fd, path, fl | O_NOATIME);
		if (fd < 0 && errno == EPERM)
			fd = openat(w->pf_fd, path, fl);
		if (fd >= 0) {
			readahead(fd, 0, 1 << 20);
			close(fd);
		}
	}
}

/* Starts prefetching the chunks of roots that will not be skipped; the
 * caller joins the threads after the stream. */
static int prefetch_start(gc_idxwalk_t *w, const uint8_t *roots, size_t nroots, prefetch_t *p,
			  pthread_t *tid)
{
	if (!w->pf_threads || nroots < 2)
		return 0;
	if (nroots > w->cappf) {
		digest_t *v = realloc(w->pf, nroots * sizeof(*v));
		if (!v)
			return 0;
		w->pf = v;
		w->cappf = nroots;
	}
	w->npf = 0;
	for (size_t i = 1; i < nroots; i++) { /* the first one is read at once */
		digest_t d;
		memcpy(d.b, roots + i * CHUNK_REF_WIRE, DIGEST_LEN);
		if (w->ecap) {
			edge_t *e = edge_slot(w, &d);
			if (e->used && !digest_cmp(&e->d, &d))
				continue; /* will most likely be skipped */
		}
		w->pf[w->npf++] = d;
	}
	p->w = w;
	atomic_init(&p->next, 0);
	int t = (int)MIN((size_t)w->pf_threads, w->npf), started = 0;
	for (int i = 0; i < t; i++)
		if (thread_start(&tid[started], prefetch_thread, p) == 0)
			started++;
	return started;
}

static int walk_stream(gc_idxwalk_t *w, chunkstore_t *cs, const uint8_t *roots, size_t nroots,
		       gc_refs_fn fn, void *arg, chunk_ref_t *failed);

int gc_idxwalk_stream(gc_idxwalk_t *w, chunkstore_t *cs, const uint8_t *roots, size_t nroots,
		      gc_refs_fn fn, void *arg, chunk_ref_t *failed)
{
	prefetch_t p;
	pthread_t tid[64];
	int started = prefetch_start(w, roots, nroots, &p, tid);
	int r = walk_stream(w, cs, roots, nroots, fn, arg, failed);
	if (started)
		atomic_store(&p.next, SIZE_MAX / 2); /* stop early */
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	return r;
}

static int walk_stream(gc_idxwalk_t *w, chunkstore_t *cs, const uint8_t *roots, size_t nroots,
		       gc_refs_fn fn, void *arg, chunk_ref_t *failed)
{
	memset(failed, 0, sizeof(*failed));
	uint8_t hdr[INDEX_HEADER_LEN], carry[CHUNK_REF_WIRE];
	size_t hdrlen = 0, clen = 0;
	for (size_t i = 0; i < nroots; i++) {
		chunk_ref_t ref;
		chunk_ref_unpack(roots + i * CHUNK_REF_WIRE, &ref);
		size_t nout = 0;
		bool header_done = hdrlen == INDEX_HEADER_LEN;
		if (header_done && w->ecap) {
			edge_t *e = edge_slot(w, &ref.digest);
			if (e->used && e->phase == clen && !digest_cmp(&e->d, &ref.digest)) {
				/* Parsed before: only the straddling records are new. */
				w->s.chunks_skipped++;
				if (clen) {
					memcpy(carry + clen, e->head, e->headlen);
					int r = out_reserve(w, 1);
					if (r == 0)
						r = unpack_rec(carry, &w->out[0]);
					if (r < 0)
						return r;
					w->s.records++;
					r = fn(w->out, 1, arg);
					if (r)
						return r > 0 ? 0 : r;
				}
				memcpy(carry, e->tail, e->taillen);
				clen = e->taillen;
				continue;
			}
		}
		int r = chunkstore_get(cs, &ref.digest, &w->chunk);
		if (r == -ENOENT && w->pf_fd >= 0) {
			/* A sweep killed mid-removal may have left it as "<hex>.gc". */
			char hex[DIGEST_HEX_LEN + 1], dn[5];
			hex_encode(&ref.digest, hex);
			memcpy(dn, hex, 4);
			dn[4] = 0;
			int dfd = openat(w->pf_fd, dn, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd >= 0) {
				/* (0: nothing to put back, but another thread may
				 * just have done it: read again all the same) */
				if (chunk_unquarantine(dfd, hex) >= 0)
					r = chunkstore_get(cs, &ref.digest, &w->chunk);
				close(dfd);
			}
		}
		if (r < 0) {
			*failed = ref;
			return r;
		}
		w->s.chunks_read++;
		w->s.bytes_read += w->chunk.len;
		const uint8_t *p = w->chunk.data;
		size_t n = w->chunk.len;
		while (hdrlen < INDEX_HEADER_LEN && n) {
			hdr[hdrlen++] = *p++;
			n--;
			if (hdrlen == INDEX_HEADER_LEN &&
			    (memcmp(hdr, INDEX_MAGIC, 8) || get_u32(hdr + 8) != 1))
				return CAIRN_ECORRUPT;
		}
		size_t phase = clen, headlen = 0;
		r = out_reserve(w, n / CHUNK_REF_WIRE + 2);
		if (r < 0)
			return r;
		if (clen && n) {
			headlen = MIN(CHUNK_REF_WIRE - clen, n);
			memcpy(carry + clen, p, headlen);
			clen += headlen;
			p += headlen;
			n -= headlen;
			if (clen == CHUNK_REF_WIRE) {
				if ((r = unpack_rec(carry, &w->out[nout++])) < 0)
					return r;
				clen = 0;
			}
		}
		for (; n >= CHUNK_REF_WIRE; p += CHUNK_REF_WIRE, n -= CHUNK_REF_WIRE)
			if ((r = unpack_rec(p, &w->out[nout++])) < 0)
				return r;
		if (n) {
			memcpy(carry + clen, p, n);
			clen += n;
		}
		w->s.records += nout;
		r = nout ? fn(w->out, nout, arg) : 0;
		if (r)
			return r > 0 ? 0 : r;
		/* Remember the chunk's edges when both lie inside it. */
		if (w->ecap && header_done && w->chunk.len >= 2 * CHUNK_REF_WIRE) {
			edge_t *e = edge_slot(w, &ref.digest);
			e->d = ref.digest;
			e->used = 1;
			e->phase = phase;
			e->headlen = headlen;
			memcpy(e->head, w->chunk.data, headlen);
			e->taillen = clen;
			memcpy(e->tail, carry, clen);
		}
	}
	if (nroots && (hdrlen < INDEX_HEADER_LEN || clen))
		return CAIRN_ECORRUPT;
	return 0;
}

int gc_tree_refs(chunkstore_t *cs, const buf_t *tree_roots, gc_refs_fn fn, void *arg,
		 chunk_ref_t *failed)
{
	memset(failed, 0, sizeof(*failed));
	snaptree_t t;
	int r = snaptree_open(&t, cs, tree_roots);
	chunk_ref_t v[256];
	size_t n = 0;
	tree_entry_t e = {0};
	while (r == 0 && (r = snaptree_next(&t, &e)) == 1) {
		r = 0;
		if (e.content == TREE_CONTENT_BUNDLE)
			v[n++] = e.bundle;
		for (uint32_t i = 0; r == 0 && e.content == TREE_CONTENT_EXTENTS && i < e.nextent;
		     i++) {
			if (e.extents[i].kind != TREE_EXT_CHUNK)
				continue;
			v[n++] = e.extents[i].ref;
			if (n == ARRAY_SIZE(v)) {
				r = fn(v, n, arg);
				n = 0;
			}
		}
		if (r == 0 && n >= ARRAY_SIZE(v) - 1) {
			r = fn(v, n, arg);
			n = 0;
		}
		tree_entry_clear(&e);
	}
	if (r == 0 && n)
		r = fn(v, n, arg);
	if (r < 0 && t.m.failed.plain_len)
		*failed = t.m.failed;
	snaptree_close(&t);
	return r < 0 ? r : 0;
}

/* ---- the bounded reachability set ---- */

int gc_range_init(gc_range_t *r, unsigned lo, size_t budget)
{
	memset(r, 0, sizeof(*r));
	r->lo = lo;
	r->hi = GC_NDIRS;
	r->budget = budget < 1024 ? 1024 : budget;
	/* Tests: a budget of a few digests cuts a small store into several
	 * ranges, which otherwise takes more than 65,536 referenced chunks. */
	const char *t = getenv("CAIRN_TEST_RANGE_BUDGET");
	if (t && strtoul(t, NULL, 10) > 0)
		r->budget = strtoul(t, NULL, 10);
	r->hist = calloc(GC_NDIRS, sizeof(uint32_t));
	return r->hist ? 0 : -ENOMEM;
}

void gc_range_free(gc_range_t *r)
{
	refset_free(&r->set);
	free(r->hist);
	memset(r, 0, sizeof(*r));
}

/* Lowers hi so that about half the budget stays, dropping the rest. */
static int range_shrink(gc_range_t *r)
{
	size_t keep = r->budget / 2, sum = 0;
	unsigned h = r->lo;
	while (h < r->hi && sum + r->hist[h] <= keep)
		sum += r->hist[h++];
	if (h == r->lo)
		h = r->lo + 1; /* one directory over budget: keep it anyway */
	if (h >= r->hi)
		return 0;
	/* Keep the entries below h: straight from the slots (an all-zero
	 * digest marks an empty slot; that digest itself is kept aside). */
	refset_t n = {0};
	static const digest_t zero;
	for (size_t i = 0; i < r->set.cap; i++) {
		const chunk_ref_t *x = &r->set.slots[i];
		if (!digest_cmp(&x->digest, &zero) || gc_dir_of(&x->digest) >= h)
			continue;
		if (refset_add(&n, x) < 0) {
			refset_free(&n);
			return -ENOMEM;
		}
	}
	if (r->set.has_zero && refset_add(&n, &r->set.zero) < 0) {
		refset_free(&n);
		return -ENOMEM;
	}
	refset_free(&r->set);
	r->set = n;
	for (unsigned d = h; d < r->hi; d++)
		r->hist[d] = 0;
	r->hi = h;
	return 0;
}

int gc_range_add(gc_range_t *r, const chunk_ref_t *refs, size_t n)
{
	int past = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned d = gc_dir_of(&refs[i].digest);
		if (d < r->lo)
			continue;
		if (d >= r->hi) {
			past = 1;
			continue;
		}
		int k = refset_add(&r->set, &refs[i]);
		if (k < 0)
			return k;
		if (k == 1) {
			r->hist[d]++;
			if (r->set.n + r->set.has_zero > r->budget) {
				int e = range_shrink(r);
				if (e < 0)
					return e;
			}
		}
	}
	return past;
}

/* ---- sources ---- */

void gc_srciter_init(gc_srciter_t *it, cairn_store *st, const int64_t *ids, size_t nids,
		     bool with_recv)
{
	memset(it, 0, sizeof(*it));
	it->st = st;
	it->ids = ids;
	it->nids = nids;
	it->with_recv = with_recv && !ids;
	it->phase = it->with_recv ? 0 : 1;
	it->cur_ds = INT64_MIN;
	it->cur_txg = INT64_MIN;
	it->cur_recv = INT64_MIN;
}

static void source_clear(gc_source_t *s)
{
	free(s->name);
	buf_free(&s->tree);
	buf_free(&s->idx);
	memset(s, 0, sizeof(*s));
}

static void batch_clear(gc_srciter_t *it)
{
	for (size_t i = 0; i < it->n; i++)
		source_clear(&it->batch[i]);
	it->n = it->next = 0;
}

void gc_srciter_free(gc_srciter_t *it)
{
	batch_clear(it);
	free(it->batch);
	memset(it, 0, sizeof(*it));
}

static int blob_copy(sqlite3_stmt *s, int col, buf_t *b)
{
	b->len = 0;
	int n = sqlite3_column_bytes(s, col);
	const void *p = sqlite3_column_blob(s, col);
	if (n && !p)
		return -ENOMEM;
	if (n % CHUNK_REF_WIRE)
		return CAIRN_ECORRUPT;
	return n ? buf_append(b, p, n) : 0;
}

#define SNAP_SELECT                                                                      \
	"SELECT s.id, d.name, s.name, s.dataset, s.createtxg, s.logicalreferenced, sd.tree," \
	" sd.idx, sd.snapshot IS NULL FROM snapshot s LEFT JOIN dataset d ON d.id = s.dataset"   \
	" LEFT JOIN snapdata sd ON sd.snapshot = s.id "

/* Runs one batch query; fills it->batch. */
static int load_batch(gc_srciter_t *it)
{
	sqlite3 *db = catalog_db(it->st->cat);
	sqlite3_stmt *s = NULL;
	char sql[1024 + SRC_BATCH * 2];
	int rc;
	bool recv = it->phase == 0;
	size_t nbind = 0;
	if (recv) {
		snprintf(sql, sizeof(sql),
			 "SELECT id, dataset, idx FROM recvstate WHERE id > ?1 ORDER BY id LIMIT %d",
			 SRC_BATCH);
	} else if (it->ids) {
		nbind = MIN(SRC_BATCH, it->nids - it->nexti);
		int k = snprintf(sql, sizeof(sql), SNAP_SELECT "WHERE s.id IN (");
		for (size_t i = 0; i < nbind; i++)
			k += snprintf(sql + k, sizeof(sql) - k, i ? ",?" : "?");
		snprintf(sql + k, sizeof(sql) - k, ") ORDER BY s.dataset, s.createtxg");
	} else {
		snprintf(sql, sizeof(sql),
			 SNAP_SELECT "WHERE (s.dataset, s.createtxg) > (?1, ?2)"
				     " ORDER BY s.dataset, s.createtxg LIMIT %d",
			 SRC_BATCH);
	}
	int r = catalog_begin_read(it->st->cat);
	if (r < 0)
		return store_err(it->st, r, "catalog: %s", catalog_errmsg(it->st->cat));
	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK) {
		r = -EIO;
		goto out;
	}
	if (recv) {
		sqlite3_bind_int64(s, 1, it->cur_recv);
	} else if (it->ids) {
		for (size_t i = 0; i < nbind; i++)
			sqlite3_bind_int64(s, i + 1, it->ids[it->nexti + i]);
		it->nexti += nbind;
	} else {
		sqlite3_bind_int64(s, 1, it->cur_ds);
		sqlite3_bind_int64(s, 2, it->cur_txg);
	}
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (it->n == it->cap) {
			size_t nc = it->cap ? it->cap * 2 : SRC_BATCH;
			gc_source_t *v = realloc(it->batch, nc * sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			it->batch = v;
			it->cap = nc;
		}
		gc_source_t *src = &it->batch[it->n++];
		memset(src, 0, sizeof(*src));
		char *name = NULL;
		if (recv) {
			int64_t id = sqlite3_column_int64(s, 0);
			src->owner = -id;
			const char *ds = (const char *)sqlite3_column_text(s, 1);
			if (asprintf(&name, "partial receive into %s", ds ? ds : "?") < 0)
				name = NULL;
			it->cur_recv = id;
			r = blob_copy(s, 2, &src->idx);
		} else {
			src->owner = sqlite3_column_int64(s, 0);
			const char *ds = (const char *)sqlite3_column_text(s, 1);
			const char *sn = (const char *)sqlite3_column_text(s, 2);
			if (asprintf(&name, "%s@%s", ds ? ds : "?", sn ? sn : "?") < 0)
				name = NULL;
			it->cur_ds = sqlite3_column_int64(s, 3);
			it->cur_txg = sqlite3_column_int64(s, 4);
			src->logical = sqlite3_column_int64(s, 5);
			if (sqlite3_column_int(s, 8))
				r = CAIRN_ECORRUPT; /* no snapdata row: chunk lists unknown */
			else if ((r = blob_copy(s, 6, &src->tree)) == 0)
				r = blob_copy(s, 7, &src->idx);
		}
		src->name = name;
		if (!name && r == 0)
			r = -ENOMEM;
		if (r == CAIRN_ECORRUPT)
			store_err(it->st, r, "%s: its chunk lists in the catalog are damaged",
				  name ? name : "snapshot");
		if (r < 0)
			break;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = -EIO;
out:
	if (r == -EIO)
		store_err(it->st, r, "catalog: %s", sqlite3_errmsg(db));
	sqlite3_finalize(s);
	catalog_end_read(it->st->cat);
	return r;
}

int gc_srciter_next(gc_srciter_t *it, gc_source_t **out)
{
	for (;;) {
		if (it->next < it->n) {
			*out = &it->batch[it->next++];
			return 1;
		}
		batch_clear(it);
		if (it->phase >= 2)
			return 0;
		if (it->ids && it->nexti >= it->nids) {
			it->phase = 2;
			return 0;
		}
		int r = load_batch(it);
		if (r < 0)
			return r;
		if (it->n == 0 && !it->ids)
			it->phase++; /* this phase is over */
	}
}

char *gc_snapshot_name(cairn_store *st, int64_t id)
{
	sqlite3 *db = catalog_db(st->cat);
	sqlite3_stmt *s;
	const char *sql =
		id > 0 ? "SELECT d.name || '@' || s.name FROM snapshot s JOIN dataset d"
			 " ON d.id = s.dataset WHERE s.id = ?1"
		       : "SELECT 'partial receive into ' || dataset FROM recvstate WHERE id = ?1";
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(s, 1, id > 0 ? id : -id);
	char *name = NULL;
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		name = strdup((const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	if (!name && asprintf(&name, "%s %lld (destroyed since)", id > 0 ? "snapshot" : "receive",
			      (long long)(id > 0 ? id : -id)) < 0)
		name = NULL;
	return name;
}

/* ---- sweep ---- */

typedef struct sweepstats {
	uint64_t kept, kept_bytes, pending, pending_bytes, removed, removed_bytes;
	uint64_t temp, other, restored;
} sweepstats_t;

typedef struct sweep {
	int chunkfd;
	bool dry;
	int64_t threshold, t0; /* ns */
	const refset_t *set;   /* dry run: the referenced chunks of [lo, hi) */
	unsigned lo, hi;
	atomic_uint next;
	atomic_uint_fast64_t scanned, dirs_done;
	pthread_mutex_t lock;
	void (*item)(const char *path, uint64_t bytes, void *arg);
	void *arg;
	/* Tests only (CAIRN_TEST_SWEEP_DELAY_US): a pause between deciding to
	 * remove a chunk and removing it, to widen the race with writers. */
	unsigned delay_us;
	sweepstats_t tot;
	int err;
	char errobj[1100]; /* a directory, or why the bucket was left alone */
} sweep_t;

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static bool pid_alive(int pid)
{
	if (pid == getpid())
		return true;
	return kill(pid, 0) == 0 || errno == EPERM;
}

static void sweep_fail(sweep_t *sw, int err, const char *dir, const char *name)
{
	pthread_mutex_lock(&sw->lock);
	if (!sw->err) {
		sw->err = err;
		snprintf(sw->errobj, sizeof(sw->errobj), ".chunks/%s%s%s", dir, name ? "/" : "",
			 name ? name : "");
	}
	pthread_mutex_unlock(&sw->lock);
}

static void sweep_item(sweep_t *sw, const char *dir, const char *name, uint64_t bytes)
{
	if (!sw->item)
		return;
	char path[96];
	snprintf(path, sizeof(path), ".chunks/%s/%s", dir, name);
	pthread_mutex_lock(&sw->lock);
	sw->item(path, bytes, sw->arg);
	pthread_mutex_unlock(&sw->lock);
}

/* Removes chunk `name` if it is still unreferenced once no writer can
 * reach it (see the top of this file, point 3).  Returns true if removed. */
static bool remove_chunk(sweep_t *sw, int fd, const char *dir, const char *name)
{
	char q[DIGEST_HEX_LEN + 8];
	snprintf(q, sizeof(q), "%s.gc", name);
	if (sw->delay_us)
		usleep(sw->delay_us);
	if (renameat(fd, name, fd, q) < 0) {
		if (errno != ENOENT)
			sweep_fail(sw, -errno, dir, name);
		return false; /* kept (ENOSPC: no room for the name) */
	}
	struct stat st;
	if (fstatat(fd, q, &st, AT_SYMLINK_NOFOLLOW) == 0 && ts_ns(&st.st_atim) < sw->threshold &&
	    unlinkat(fd, q, 0) == 0)
		return true;
	/* Touched meanwhile (or could not be removed): put it back. */
	int r = chunk_unquarantine(fd, name);
	if (r < 0)
		sweep_fail(sw, r, dir, q);
	return false;
}

typedef struct dirlist {
	char *names; /* NUL-separated */
	size_t len, cap;
} dirlist_t;

static void dirlist_add(const char *name, uint64_t ino, void *arg)
{
	dirlist_t *l = arg;
	size_t n = strlen(name) + 1;
	if (l->len + n > l->cap) {
		size_t c = l->cap ? l->cap * 2 : 16384;
		while (c < l->len + n)
			c *= 2;
		char *p = realloc(l->names, c);
		if (!p)
			return; /* caught by the caller: cap unchanged */
		l->names = p;
		l->cap = c;
	}
	memcpy(l->names + l->len, name, n);
	l->len += n;
}

static void sweep_dir(sweep_t *sw, unsigned d, char *buf, dirlist_t *l, sweepstats_t *s)
{
	char dn[5];
	gc_dir_name(d, dn);
	int fd = openat(sw->chunkfd, dn, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		/* Chunk directories are made on first use: none, no chunks. */
		if (errno != ENOENT)
			sweep_fail(sw, -errno, dn, NULL);
		return;
	}
	/* The whole listing first: our own renames must not show up in it. */
	l->len = 0;
	int r = dir_each(fd, buf, dirlist_add, l);
	if (r < 0) {
		sweep_fail(sw, r, dn, NULL);
		close(fd);
		return;
	}
	for (size_t off = 0; off < l->len; off += strlen(l->names + off) + 1) {
		const char *name = l->names + off;
		int pid = 0;
		enum gc_name_kind k = gc_name_kind(name, d, &pid);
		atomic_fetch_add_explicit(&sw->scanned, 1, memory_order_relaxed);
		if (k == GC_NAME_OTHER) {
			s->other++;
			continue;
		}
		struct stat st;
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				sweep_fail(sw, -errno, dn, name);
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			s->other++;
			continue;
		}
		int64_t at = ts_ns(&st.st_atim);
		char hex[DIGEST_HEX_LEN + 1];
		if (k == GC_NAME_QUARANTINE) {
			/* Left by a killed sweep.  Mark has already put back every
			 * one a snapshot needs, so this one is judged like any
			 * chunk, under its own name again (where a writer can
			 * reach it, and where remove_chunk's protocol applies).
			 * If the chunk exists again the copy is dropped. */
			memcpy(hex, name, DIGEST_HEX_LEN);
			hex[DIGEST_HEX_LEN] = 0;
			name = hex;
			if (sw->dry) {
				struct stat own;
				if (fstatat(fd, hex, &own, AT_SYMLINK_NOFOLLOW) == 0)
					continue; /* counted under its own name */
			} else {
				r = chunk_unquarantine(fd, hex);
				if (r < 0)
					sweep_fail(sw, r, dn, hex);
				if (r != 1)
					continue;
				s->restored++;
			}
		}
		if (k == GC_NAME_TEMP) {
			int64_t mt = ts_ns(&st.st_mtim);
			if (MAX(at, mt) < sw->threshold && !pid_alive(pid)) {
				if (sw->dry || unlinkat(fd, name, 0) == 0)
					s->temp++;
			}
			continue;
		}
		/* A chunk. */
		bool referenced;
		if (sw->dry) {
			digest_t dg;
			hex_decode(name, dg.b, DIGEST_LEN);
			referenced = refset_has(sw->set, &dg);
		} else {
			referenced = at >= sw->t0;
		}
		if (referenced || at >= sw->threshold) {
			if (referenced) {
				s->kept++;
				s->kept_bytes += st.st_size;
			} else {
				s->pending++;
				s->pending_bytes += st.st_size;
			}
			continue;
		}
		if (sw->dry || remove_chunk(sw, fd, dn, name)) {
			s->removed++;
			s->removed_bytes += st.st_size;
			sweep_item(sw, dn, name, st.st_size);
		} else {
			s->kept++;
			s->kept_bytes += st.st_size;
		}
	}
	close(fd);
}

typedef struct sweeprun {
	sweep_t *sw;
	const cairn_gc_opts *opts;
	cairn_gc_status *status; /* for progress */
	int64_t t0;
	bool main;
} sweeprun_t;

static void *sweep_worker(void *arg)
{
	sweeprun_t *run = arg;
	sweep_t *sw = run->sw;
	sweepstats_t s = {0};
	char *buf = malloc(DIRBUF);
	dirlist_t l = {0};
	int64_t last = mono_ns();
	if (!buf) {
		sweep_fail(sw, -ENOMEM, "", NULL);
		return NULL;
	}
	for (;;) {
		if (GC_STOPPED())
			break;
		unsigned d = atomic_fetch_add(&sw->next, 1);
		if (d >= sw->hi)
			break;
		sweep_dir(sw, d, buf, &l, &s);
		atomic_fetch_add(&sw->dirs_done, 1);
		if (run->main && run->opts->progress && mono_ns() - last > PROGRESS_NS) {
			last = mono_ns();
			cairn_progress p = {.phase = sw->dry ? "gc -n sweep" : "gc sweep",
					    .object = ".chunks",
					    .files = atomic_load(&sw->scanned),
					    .elapsed_ns = last - run->t0};
			run->opts->progress(&p, run->opts->arg);
		}
	}
	free(buf);
	free(l.names);
	pthread_mutex_lock(&sw->lock);
	sweepstats_t *t = &sw->tot;
	t->kept += s.kept;
	t->kept_bytes += s.kept_bytes;
	t->pending += s.pending;
	t->pending_bytes += s.pending_bytes;
	t->removed += s.removed;
	t->removed_bytes += s.removed_bytes;
	t->temp += s.temp;
	t->other += s.other;
	t->restored += s.restored;
	pthread_mutex_unlock(&sw->lock);
	return NULL;
}

/* The bucket half of the sweep (chunkstore_sweep_remote): objects whose
 * markers the local sweep removed go, with the same threshold, except
 * those of referenced chunks whose markers are gone.  (The bucket's claim
 * was checked before the local sweep: remote_sweep_allowed.) */
static void sweep_remote(cairn_store *st, sweep_t *sw, digest_t *keep, size_t nkeep)
{
	chunkstore_rsweep rs;
	/* (No referenced chunk has lost its marker: keep may be NULL, which
	 * qsort may not be given even for no item.) */
	if (nkeep)
		qsort(keep, nkeep, sizeof(*keep), digest_cmp_void);
	int r = chunkstore_sweep_remote(st->cs, sw->threshold, keep, nkeep, &gc_stop, &rs);
	if (r < 0 && r != -EINTR) {
		sw->err = r;
		snprintf(sw->errobj, sizeof(sw->errobj), "bucket");
	}
}

/* A remote store's sweep may begin: the bucket answers reads and is this
 * store's (its claim, meta/store-id).  Asked before the first marker goes:
 * a bucket that refuses reads (a wrong credential) or holds another
 * store's chunks must fail the gc with nothing changed, not after the
 * local sweep removed markers whose objects then stay. */
static int remote_sweep_allowed(cairn_store *st)
{
	if (!chunkstore_backend(st->cs))
		return 0;
	/* Its retries heed a stop like the bucket sweep's (a claim answered
	 * 503 is retried for the whole budget). */
	backend_set_stop(&gc_stop);
	int r = store_remote_check_owner(st);
	backend_set_stop(NULL);
	return r;
}

/* Sweeps directories [sw->lo, sw->hi) with `threads` threads (the caller's
 * thread is one of them). */
static void sweep_run(sweep_t *sw, int threads, const cairn_gc_opts *opts)
{
	atomic_init(&sw->next, sw->lo);
	pthread_t tid[64];
	sweeprun_t runs[64];
	int started = 0;
	int64_t t0 = mono_ns();
	if (threads > 64)
		threads = 64;
	for (int i = 1; i < threads; i++) {
		runs[i] = (sweeprun_t){.sw = sw, .opts = opts, .t0 = t0};
		if (thread_start(&tid[started + 1], sweep_worker, &runs[i]) == 0)
			started++;
	}
	runs[0] = (sweeprun_t){.sw = sw, .opts = opts, .t0 = t0, .main = true};
	sweep_worker(&runs[0]);
	for (int i = 1; i <= started; i++)
		pthread_join(tid[i], NULL);
}

/* ---- status in the catalog ---- */

typedef struct stcol {
	const char *name;
	size_t off;
	char type; /* i int64, u uint64, d double, b bool */
} stcol_t;

#define SC(f, t) {#f, offsetof(cairn_gc_status, f), t}
static const stcol_t stcols[] = {
	SC(start, 'i'),          SC(end, 'i'),           SC(snapshots, 'u'),
	SC(index_bytes, 'u'),    SC(referenced_chunks, 'u'), SC(touched, 'u'),
	SC(cache_hits, 'u'),     SC(cache_misses, 'u'),  SC(missing, 'u'),
	SC(disk_chunks, 'u'),    SC(disk_bytes, 'u'),    SC(removed_chunks, 'u'),
	SC(removed_bytes, 'u'),  SC(pending_chunks, 'u'), SC(pending_bytes, 'u'),
	SC(removed_temp, 'u'),   SC(other_files, 'u'),   SC(dedup_factor, 'd'),
	SC(avg_chunk, 'u'),      SC(mark_ns, 'i'),       SC(sweep_ns, 'i'),
	SC(touches_per_s, 'd'),  SC(dry_run, 'b'),
};
#undef SC

static int status_save(cairn_store *st, const cairn_gc_status *s)
{
	char create[2048], insert[2048];
	int kc = snprintf(create, sizeof(create),
			  "CREATE TABLE IF NOT EXISTS gcstatus(id INTEGER PRIMARY KEY CHECK(id = 1)");
	int ki = snprintf(insert, sizeof(insert), "INSERT OR REPLACE INTO gcstatus(id");
	for (size_t i = 0; i < ARRAY_SIZE(stcols); i++) {
		kc += snprintf(create + kc, sizeof(create) - kc, ", %s %s NOT NULL DEFAULT 0",
			       stcols[i].name, stcols[i].type == 'd' ? "REAL" : "INTEGER");
		ki += snprintf(insert + ki, sizeof(insert) - ki, ", %s", stcols[i].name);
	}
	snprintf(create + kc, sizeof(create) - kc, ")");
	ki += snprintf(insert + ki, sizeof(insert) - ki, ") VALUES(1");
	for (size_t i = 0; i < ARRAY_SIZE(stcols); i++)
		ki += snprintf(insert + ki, sizeof(insert) - ki, ", ?");
	snprintf(insert + ki, sizeof(insert) - ki, ")");

	sqlite3 *db = catalog_db(st->cat);
	uint64_t txg;
	int r = catalog_begin_write(st->cat, &txg);
	if (r < 0)
		return r;
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_exec(db, create, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, insert, -1, &q, NULL);
	for (size_t i = 0; rc == SQLITE_OK && i < ARRAY_SIZE(stcols); i++) {
		const char *p = (const char *)s + stcols[i].off;
		switch (stcols[i].type) {
		case 'i': sqlite3_bind_int64(q, i + 1, *(const int64_t *)p); break;
		case 'u': sqlite3_bind_int64(q, i + 1, (int64_t)*(const uint64_t *)p); break;
		case 'd': sqlite3_bind_double(q, i + 1, *(const double *)p); break;
		case 'b': sqlite3_bind_int(q, i + 1, *(const bool *)p); break;
		}
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
	sqlite3_finalize(q);
	if (rc != SQLITE_OK) {
		r = (rc & 0xff) == SQLITE_FULL ? -ENOSPC : -EIO;
		catalog_rollback(st->cat);
		return r;
	}
	return catalog_commit(st->cat);
}

int cairn_gc_last_status(cairn_store *st, cairn_gc_status *out)
{
	int r = STORE_ENTER(st, out);
	if (r < 0)
		return r;
	memset(out, 0, sizeof(*out));
	char sql[1024];
	int k = snprintf(sql, sizeof(sql), "SELECT ");
	for (size_t i = 0; i < ARRAY_SIZE(stcols); i++)
		k += snprintf(sql + k, sizeof(sql) - k, "%s%s", i ? ", " : "", stcols[i].name);
	snprintf(sql + k, sizeof(sql) - k, " FROM gcstatus WHERE id = 1");
	sqlite3 *db = catalog_db(st->cat);
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
		/* No table: no GC has finished on this store yet. */
		return store_err(st, -ENOENT, "no garbage collection has run on this store");
	}
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		for (size_t i = 0; i < ARRAY_SIZE(stcols); i++) {
			char *p = (char *)out + stcols[i].off;
			switch (stcols[i].type) {
			case 'i': *(int64_t *)p = sqlite3_column_int64(q, i); break;
			case 'u': *(uint64_t *)p = (uint64_t)sqlite3_column_int64(q, i); break;
			case 'd': *(double *)p = sqlite3_column_double(q, i); break;
			case 'b': *(bool *)p = sqlite3_column_int(q, i) != 0; break;
			}
		}
	} else if (rc == SQLITE_DONE) {
		r = store_err(st, -ENOENT, "no garbage collection has run on this store");
	} else {
		r = store_err(st, -EIO, "catalog: %s", sqlite3_errmsg(db));
	}
	sqlite3_finalize(q);
	return r;
}

/* ---- cairn_gc ---- */

typedef struct gcctx {
	cairn_store *st;
	cairn_gc_opts *opts;
	cairn_gc_status *s;
	gc_marker_t *mk;
	gc_range_t *range; /* dry run */
	gc_source_t *src;
	digest_t *dbuf;
	size_t dcap;
	int fatal; /* a failed touch, -EINTR, -ENOMEM: stops the walk */
	bool sorted; /* the refs come from an index stream (dry run may stop early) */
	bool unsafe; /* some source's chunks could not be listed */
	uint64_t damaged; /* sources whose index had to be replaced by the tree */
	bool again; /* dry run, range after the first: every source was walked,
		     * warned about and counted once already */
	int64_t last_progress, t0;
	uint64_t refs;
	int64_t name_owner;
	char *name_cache;
	digest_t *missing; /* referenced chunks mark found no file for */
	size_t nmissing, capmissing;
	bool unkept_missing; /* one of them could not be remembered */
	encroot_keyset_t keys; /* loaded keys, for sealed lost markers */
	bool keys_loaded;      /* (on the first one) */
	/* Dry run: the chunk directory, to look for the referenced chunks a
	 * real mark would find missing (-1: not looked for, remote store), and
	 * those found missing in the current range, with a snapshot needing
	 * each, reported once the range is final. */
	int dry_chunkfd;
	struct drymiss { digest_t d; int64_t owner; } *dmiss;
	size_t ndmiss, capdmiss;
} gcctx_t;

static void progress(gcctx_t *c, const char *phase, bool force)
{
	if (!c->opts->progress)
		return;
	int64_t now = mono_ns();
	if (!force && now - c->last_progress < PROGRESS_NS)
		return;
	c->last_progress = now;
	cairn_progress p = {.phase = phase, .object = c->src ? c->src->name : NULL,
			    .files = c->refs, .elapsed_ns = now - c->t0};
	c->opts->progress(&p, c->opts->arg);
}

/* A referenced chunk of a remote store has no marker.  Only the marker
 * may be gone: the bucket's object brings it back (true: not missing).
 * Else it is kept from the bucket sweep, since the object may be all
 * that is left of the chunk; without room to remember it, no object may
 * go (unkept_missing). */
static bool remark_or_keep(gcctx_t *c, const digest_t *d)
{
	if (!c->keys_loaded) {
		c->keys_loaded = true;
		if (encroot_keyset_load(c->st, &c->keys) < 0) {
			/* none: sealed ones stay missing (and GC's own error
			 * message is not this one) */
			encroot_keyset_free(&c->keys);
			c->st->errdetail[0] = 0;
		}
	}
	if (chunkstore_remark(c->st->cs, d, c->keys.k, c->keys.n) == 0)
		return true;
	if (c->nmissing == c->capmissing) {
		size_t n = c->capmissing ? c->capmissing * 2 : 64;
		digest_t *v = realloc(c->missing, n * sizeof(*v));
		if (v) {
			c->missing = v;
			c->capmissing = n;
		}
	}
	if (c->nmissing < c->capmissing)
		c->missing[c->nmissing++] = *d;
	else
		c->unkept_missing = true;
	return false;
}

static void on_missing(const digest_t *d, int64_t owner, void *arg)
{
	gcctx_t *c = arg;
	if (chunkstore_backend(c->st->cs) && remark_or_keep(c, d))
		return;
	c->s->missing++;
	if (!c->opts->warn)
		return;
	if (!c->name_cache || c->name_owner != owner) {
		free(c->name_cache);
		c->name_cache = gc_snapshot_name(c->st, owner);
		c->name_owner = owner;
	}
	char hex[DIGEST_HEX_LEN + 1], obj[512];
	hex_encode(d, hex);
	snprintf(obj, sizeof(obj), "chunk %s (.chunks/%.4s/%s), needed by %s", hex, hex, hex,
		 c->name_cache ? c->name_cache : "a snapshot");
	c->opts->warn(obj, -ENOENT, c->opts->arg);
}

/* Dry run: would a real mark find chunk d?  Its touch succeeds on any
 * entry under the name, and a "<hex>.gc" left by a killed sweep is put
 * back first (touch_one), so either name counts as present. */
static bool dry_present(int chunkfd, const digest_t *d)
{
	char path[5 + DIGEST_HEX_LEN + 4];
	struct stat st;
	hex_encode(d, path + 5);
	memcpy(path, path + 5, 4);
	path[4] = '/';
	if (fstatat(chunkfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
		return true; /* another error: not known to be missing */
	memcpy(path + 5 + DIGEST_HEX_LEN, ".gc", 4);
	return fstatat(chunkfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

/* Dry run: adds refs to the range set one by one, so that each chunk new
 * to the set is looked for once; a missing one is remembered with its
 * snapshot (reported by dry_report_missing once the range is final). */
static int dry_add(gcctx_t *c, const chunk_ref_t *refs, size_t n)
{
	if (c->dry_chunkfd < 0)
		return gc_range_add(c->range, refs, n);
	int past = 0;
	for (size_t i = 0; i < n; i++) {
		const digest_t *d = &refs[i].digest;
		unsigned dir = gc_dir_of(d);
		bool fresh = dir >= c->range->lo && dir < c->range->hi &&
			     !refset_has(&c->range->set, d);
		int r = gc_range_add(c->range, &refs[i], 1);
		if (r < 0)
			return r;
		past |= r;
		if (!fresh || dry_present(c->dry_chunkfd, d))
			continue;
		if (c->ndmiss == c->capdmiss) {
			size_t nc = c->capdmiss ? c->capdmiss * 2 : 64;
			struct drymiss *v = realloc(c->dmiss, nc * sizeof(*v));
			if (!v)
				return -ENOMEM;
			c->dmiss = v;
			c->capdmiss = nc;
		}
		c->dmiss[c->ndmiss++] = (struct drymiss){.d = *d, .owner = c->src->owner};
	}
	return past;
}

static void on_missing(const digest_t *d, int64_t owner, void *arg);

/* Dry run, after a range's walk: reports its missing chunks.  Those the
 * range dropped when it shrank belong to a later range, which looks for
 * them again. */
static void dry_report_missing(gcctx_t *c)
{
	for (size_t i = 0; i < c->ndmiss; i++)
		if (gc_dir_of(&c->dmiss[i].d) < c->range->hi)
			on_missing(&c->dmiss[i].d, c->dmiss[i].owner, c);
	c->ndmiss = 0;
}

static int mark_refs(const chunk_ref_t *refs, size_t n, void *arg)
{
	gcctx_t *c = arg;
	if (GC_STOPPED()) {
		c->fatal = -EINTR;
		return -EINTR;
	}
	c->refs += n;
	if (c->range) {
		int r = dry_add(c, refs, n);
		if (r < 0)
			c->fatal = r;
		progress(c, "gc -n mark", false);
		return r < 0 ? r : (c->sorted ? r : 0);
	}
	if (n > c->dcap) {
		size_t nc = MAX(n, 4096);
		digest_t *v = realloc(c->dbuf, nc * sizeof(*v));
		if (!v) {
			c->fatal = -ENOMEM;
			return -ENOMEM;
		}
		c->dbuf = v;
		c->dcap = nc;
	}
	for (size_t i = 0; i < n; i++)
		c->dbuf[i] = refs[i].digest;
	int r = gc_marker_add(c->mk, c->dbuf, n, c->src->owner);
	if (r < 0)
		c->fatal = r;
	progress(c, "gc mark", false);
	return r;
}

static void warn_chunk(gcctx_t *c, const char *what, const chunk_ref_t *failed, int err)
{
	if (!c->opts->warn)
		return;
	char obj[600], hex[DIGEST_HEX_LEN + 1];
	if (failed->plain_len) {
		hex_encode(&failed->digest, hex);
		snprintf(obj, sizeof(obj), "%s: %s chunk %s (.chunks/%.4s/%s)", c->src->name, what,
			 hex, hex, hex);
	} else {
		snprintf(obj, sizeof(obj), "%s: %s", c->src->name, what);
	}
	c->opts->warn(obj, err, c->opts->arg);
}

/* Whether err, from this thread's last chunk read, is the bucket refusing
 * the read (HTTP 403) rather than anything about the chunk, which a local
 * file's EACCES would be. */
static bool bucket_refused(const gcctx_t *c, int err)
{
	return err == -EACCES && chunkstore_read_failed_remotely(c->st->cs);
}

/* The error of a gc that the bucket refused a stream chunk's read: the
 * refusal first, as verify says it (its request and status follow, as
 * " (bucket: ...)"), not a warning about the chunk.  Every read would be
 * refused alike, so gc stops before its sweep. */
static int refused_err(gcctx_t *c, const char *what, const chunk_ref_t *failed, int err)
{
	/* A walk that could not say which chunk failed leaves failed zeroed
	 * (no plain length): the stream is named, not a zero digest. */
	char obj[DIGEST_HEX_LEN + 300], hex[DIGEST_HEX_LEN + 1];
	hex_encode(&failed->digest, hex);
	if (failed->plain_len)
		snprintf(obj, sizeof(obj), "chunk %s (%s of %s)", hex, what, c->src->name);
	else
		snprintf(obj, sizeof(obj), "%s of %s (which of its chunks is not known)", what,
			 c->src->name);
	return store_err(c->st, err,
			 "the bucket refused to read %s: is the credential wrong, or without "
			 "read access (or, to a credential without ListBucket, is the object "
			 "missing)?  Nothing was removed",
			 obj);
}

/* Offers roots (packed refs) as references. */
static int mark_roots(gcctx_t *c, const buf_t *roots)
{
	size_t n = roots->len / CHUNK_REF_WIRE;
	chunk_ref_t v[64];
	for (size_t i = 0; i < n;) {
		size_t k = 0;
		for (; k < ARRAY_SIZE(v) && i < n; k++, i++)
			chunk_ref_unpack(roots->data + i * CHUNK_REF_WIRE, &v[k]);
		int r = mark_refs(v, k, c);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Marks (or, in a dry run, collects) one source's chunks. */
static int mark_source(gcctx_t *c, gc_idxwalk_t *w)
{
	gc_source_t *src = c->src;
	int r = mark_roots(c, &src->tree);
	if (r == 0)
		r = mark_roots(c, &src->idx);
	if (r < 0)
		return r;
	chunk_ref_t failed = {0};
	size_t nroots = src->idx.len / CHUNK_REF_WIRE;
	c->sorted = true;
	r = nroots ? gc_idxwalk_stream(w, c->st->cs, src->idx.data, nroots, mark_refs, c, &failed)
		   : (src->owner > 0 ? CAIRN_ECORRUPT : 0);
	c->sorted = false;
	if (c->fatal)
		return c->fatal;
	if (r == 0)
		return 0;
	if (r == -ENOMEM)
		return r;
	/* A 403 for the index chunk: the credential's refusal, or that one
	 * object's (S3 answers a missing key so to a credential without
	 * ListBucket).  The snapshot's tree, read next, tells which: if the
	 * bucket reads it, the index chunk is reported as a missing one is,
	 * and the tree's chunks are marked. */
	bool idx_refused = bucket_refused(c, r);
	chunk_ref_t idx_failed = failed;
	if (idx_refused && src->owner <= 0)
		return refused_err(c, "the index stream", &failed, r);
	/* The index cannot be read: a snapshot's tree still lists its chunks.
	 * (A missing stream chunk is also counted by the marker: it is a root.) */
	if (!c->again && !idx_refused)
		warn_chunk(c, "index stream", &failed, r);
	if (src->owner > 0) {
		int t = gc_tree_refs(c->st->cs, &src->tree, mark_refs, c, &failed);
		if (c->fatal)
			return c->fatal;
		/* (Both refused: the tree's chunk is named, whose request the
		 * error's detail is.) */
		if (bucket_refused(c, t))
			return refused_err(c, "the tree stream", &failed, t);
		if (idx_refused && !c->again && c->opts->warn) {
			char obj[700], hex[DIGEST_HEX_LEN + 1];
			hex_encode(&idx_failed.digest, hex);
			snprintf(obj, sizeof(obj),
				 "%s: index stream chunk %s (.chunks/%.4s/%s): the bucket answered "
				 "HTTP 403 for its object though it reads this snapshot's tree: "
				 "missing, or this credential may not read it",
				 src->name, hex, hex, hex);
			c->opts->warn(obj, r, c->opts->arg);
		}
		if (t == 0) {
			c->damaged += !c->again;
			return 0;
		}
		if (!c->again)
			warn_chunk(c, "tree stream", &failed, t);
	}
	if (!c->unsafe)
		store_err(c->st, CAIRN_ECORRUPT,
			  "%s: its chunk lists cannot be read, so GC cannot tell which chunks it "
			  "needs; sweep skipped",
			  src->name);
	c->unsafe = true;
	return 0;
}

/* Walks every source once, feeding the marker or the range set. */
static int walk_sources(gcctx_t *c, gc_idxwalk_t *w)
{
	gc_srciter_t it;
	gc_srciter_init(&it, c->st, NULL, 0, true);
	int r;
	while ((r = gc_srciter_next(&it, &c->src)) == 1) {
		if (GC_STOPPED()) {
			r = -EINTR;
			break;
		}
		if (c->src->owner > 0) {
			c->s->snapshots++;
			c->s->index_bytes += c->src->logical;
		}
		r = mark_source(c, w);
		if (r < 0)
			break;
	}
	c->src = NULL;
	gc_srciter_free(&it);
	return r;
}

/* store_check_atime's probe on the lock file, for a filesystem too full
 * to create the probe file (GC is most wanted there). */
static int check_atime_on(int fd, char *why, size_t whylen)
{
	struct timespec old[2] = {{time(NULL) - 3600, 0}, {0, UTIME_OMIT}};
	struct stat a, b;
	const char *fake = getenv("CAIRN_TEST_NO_ATIME");
	if (futimens(fd, old) < 0 || fstat(fd, &a) < 0 || futimens(fd, touch_now) < 0 ||
	    fstat(fd, &b) < 0) {
		snprintf(why, whylen, "atime probe failed: %s", strerror(errno));
		return -errno;
	}
	if ((fake && *fake == '1') || a.st_atime > time(NULL) - 3000 ||
	    b.st_atime < time(NULL) - 60) {
		snprintf(why, whylen,
			 "the filesystem does not keep access times set with utimensat(); "
			 "garbage collection would be unsafe here");
		return CAIRN_ENOATIME;
	}
	return 0;
}

static int clock_probe(int fd, int64_t *ns)
{
	struct stat st;
	if (futimens(fd, touch_now) < 0 || fstat(fd, &st) < 0)
		return -errno;
	*ns = ts_ns(&st.st_atim);
	return 0;
}

int cairn_gc(cairn_store *st, cairn_gc_opts *opts, cairn_gc_status *out)
{
	int e = STORE_ENTER(st);
	if (e < 0)
		return e;
	cairn_gc_opts defopts = {.cache_capacity = -1};
	if (!opts)
		opts = &defopts;
	cairn_gc_status sbuf;
	cairn_gc_status *s = out ? out : &sbuf;
	memset(s, 0, sizeof(*s));
	s->dry_run = opts->dry_run;
	pthread_once(&hex_once, hex_init);

	int64_t cap = opts->cache_capacity < 0 ? store_setting(st, "gc_cache_capacity")
					       : opts->cache_capacity;
	int64_t batch = opts->batch > 0 ? opts->batch : store_setting(st, "gc_batch");
	int64_t cutoff = store_setting(st, "gc_atime_cutoff");
	if (cap > (1 << 30) || batch > (1 << 28))
		return store_err(st, -EINVAL, "gc: cache capacity or batch too large");
	if (opts->order != CAIRN_GC_ORDER_INODE && opts->order != CAIRN_GC_ORDER_DIGEST &&
	    opts->order != CAIRN_GC_ORDER_NONE)
		return store_err(st, -EINVAL, "gc: unknown order %d", (int)opts->order);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int threads = opts->threads > 0 ? opts->threads : (ncpu > 0 ? (int)ncpu : 1);

	if (mknodat(st->dirfd, "gc.lock", S_IFREG | 0600, 0) < 0 && errno != EEXIST)
		return store_err(st, -errno, "gc.lock: %s", strerror(errno));
	int lockfd = open_regular(st->dirfd, "gc.lock", O_RDWR);
	if (lockfd < 0)
		return store_err(st, lockfd, "gc.lock: %s",
				 lockfd == CAIRN_ECORRUPT ? "not a regular file" : strerror(-lockfd));
	if (flock(lockfd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close(lockfd);
		if (e == EWOULDBLOCK)
			return store_err(st, -EBUSY, "GC already running on this store");
		return store_err(st, -e, "gc.lock: %s", strerror(e));
	}
	char why[256];
	int r = store_check_atime(st->dirfd, why, sizeof(why));
	if (r == -ENOSPC || r == -EDQUOT)
		r = check_atime_on(lockfd, why, sizeof(why));
	if (r < 0) {
		close(lockfd);
		return store_err(st, r, "refusing to collect garbage: %s", why);
	}
	int chunkfd = openat(st->dirfd, ".chunks", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (chunkfd < 0) {
		r = store_err(st, -errno, ".chunks: %s", strerror(errno));
		close(lockfd);
		return r;
	}

	/* T0 on the filesystem's clock, then the writers (R1). */
	int64_t t0 = 0, t1 = 0, w1 = INT64_MAX, w2 = INT64_MAX;
	s->start = time(NULL);
	r = clock_probe(lockfd, &t0);
	if (r == 0)
		r = writer_oldest(st, &w1);
	if (r < 0)
		store_err(st, r, "gc: reading the clock or the writer registry: %s", strerror(-r));

	/* A dry run looks for the referenced chunks itself (a real mark's
	 * touches find the missing ones).  Not on a bucket store: there a
	 * lost marker is not a lost chunk, and only the bucket can tell. */
	gcctx_t c = {.st = st, .opts = opts, .s = s, .t0 = mono_ns(),
		     .dry_chunkfd = opts->dry_run && !chunkstore_backend(st->cs) ? chunkfd : -1};
	gc_idxwalk_t *w = NULL;
	size_t edges = cap > 0 ? MAX((size_t)cap / 16, 256) : 0;
	if (r == 0)
		r = gc_idxwalk_new(edges, &w);
	if (r == 0)
		gc_idxwalk_set_prefetch(w, chunkfd, GC_IO_THREADS / 2);
	sweep_t sw = {.chunkfd = chunkfd, .dry = opts->dry_run, .t0 = t0};
	pthread_mutex_init(&sw.lock, NULL);
	sw.item = opts->item;
	sw.arg = opts->arg;
	const char *delay = getenv("CAIRN_TEST_SWEEP_DELAY_US");
	sw.delay_us = delay ? (unsigned)strtoul(delay, NULL, 10) % 10000000 : 0;
	int64_t mark0 = mono_ns(), sweep_ns = 0;
	bool swept = false;

	if (r == 0 && !opts->dry_run) {
		gc_marker_opts_t mo = {.chunkfd = chunkfd, .order = opts->order, .batch = batch,
				       .cache_capacity = cap, .missing = on_missing, .arg = &c};
		r = gc_marker_new(&mo, &c.mk);
		if (r == 0) {
			gc_marker_set_threads(c.mk, threads);
			r = walk_sources(&c, w);
			if (r == 0)
				r = gc_marker_flush(c.mk);
			gc_mark_stats_t ms;
			gc_marker_stats(c.mk, &ms);
			s->touched = ms.touched;
			s->cache_hits = ms.hits;
			s->cache_misses = ms.misses;
			s->referenced_chunks = ms.offered;
			if (r < 0 && r != -EINTR && !*st->errdetail)
				store_err(st, r, "gc mark: touching a chunk failed: %s; nothing removed",
					  strerror(-r));
		}
		s->mark_ns = mono_ns() - mark0;
		progress(&c, "gc mark", true);
		/* The clock must not have gone back, or atimes lie. */
		if (r == 0 && (r = clock_probe(lockfd, &t1)) == 0 && t1 < t0)
			r = store_err(st, -EAGAIN,
				      "the system clock went backwards during mark; nothing removed");
		if (r == 0)
			r = writer_oldest(st, &w2);
		if (r == 0 && !c.unsafe && !GC_STOPPED())
			r = remote_sweep_allowed(st);
		if (r == 0 && !c.unsafe && !GC_STOPPED()) {
			int64_t wmin = MIN(w1, w2);
			int64_t thr = t0;
			if (wmin != INT64_MAX && wmin - SLACK_NS < thr)
				thr = wmin - SLACK_NS;
			sw.threshold = thr - cutoff * 60 * 1000000000LL;
			sw.lo = 0;
			sw.hi = GC_NDIRS;
			int64_t s0 = mono_ns();
			sweep_run(&sw, threads, opts);
			swept = !GC_STOPPED();
			/* Remote chunks: the bucket's sweep, after the markers'. */
			if (swept && !sw.err && chunkstore_backend(st->cs) && !c.unkept_missing)
				sweep_remote(st, &sw, c.missing, c.nmissing);
			sweep_ns = mono_ns() - s0;
		}
	} else if (r == 0) {
		/* Dry run: exact reachability, one range of directories at a time. */
		int64_t wmin = w1;
		int64_t thr = t0;
		if (wmin != INT64_MAX && wmin - SLACK_NS < thr)
			thr = wmin - SLACK_NS;
		sw.threshold = thr - cutoff * 60 * 1000000000LL;
		size_t budget = MAX((size_t)(cap + batch), (size_t)65536);
		unsigned lo = 0;
		while (r == 0 && lo < GC_NDIRS && !GC_STOPPED()) {
			gc_range_t range;
			r = gc_range_init(&range, lo, budget);
			if (r < 0)
				break;
			c.range = &range;
			c.again = lo > 0;
			gc_idxwalk_reset(w);
			uint64_t snaps = s->snapshots, ib = s->index_bytes;
			c.ndmiss = 0;
			r = walk_sources(&c, w);
			if (r == 0)
				dry_report_missing(&c);
			if (lo > 0) { /* counted once */
				s->snapshots = snaps;
				s->index_bytes = ib;
			}
			if (r == 0 && !c.unsafe) {
				s->referenced_chunks += range.set.n + range.set.has_zero;
				sw.set = &range.set;
				sw.lo = lo;
				sw.hi = range.hi;
				int64_t s0 = mono_ns();
				sweep_run(&sw, threads, opts);
				sweep_ns += mono_ns() - s0;
			}
			lo = range.hi;
			c.range = NULL;
			gc_range_free(&range);
			if (c.unsafe)
				break;
		}
		s->mark_ns = mono_ns() - mark0 - sweep_ns;
	}
	if (r == 0 && GC_STOPPED())
		r = -EINTR;
	s->sweep_ns = sweep_ns;
	s->removed_chunks = sw.tot.removed;
	s->removed_bytes = sw.tot.removed_bytes;
	s->pending_chunks = sw.tot.pending;
	s->pending_bytes = sw.tot.pending_bytes;
	s->removed_temp = sw.tot.temp;
	s->other_files = sw.tot.other;
	s->disk_chunks = sw.tot.kept + sw.tot.pending;
	s->disk_bytes = sw.tot.kept_bytes + sw.tot.pending_bytes;
	s->dedup_factor = s->disk_bytes ? (double)s->index_bytes / s->disk_bytes : 0;
	s->avg_chunk = s->disk_chunks ? s->disk_bytes / s->disk_chunks : 0;
	s->touches_per_s = s->mark_ns > 0 ? s->touched / (s->mark_ns / 1e9) : 0;
	s->end = time(NULL);

	if (r == 0 && c.unsafe)
		r = CAIRN_ECORRUPT; /* errdetail set by mark_source */
	if (r == 0 && sw.err)
		r = store_err(st, sw.err, "gc sweep: %s: %s", sw.errobj, strerror(-sw.err));
	if (r == 0 && s->missing)
		r = store_err(st, CAIRN_ECORRUPT,
			      "%llu referenced chunks are missing (see the warnings); %s",
			      (unsigned long long)s->missing,
			      opts->dry_run ? "dry run: nothing was removed" : "the rest was collected");
	if (r == 0 && c.damaged)
		r = store_err(st, CAIRN_ECORRUPT,
			      "%llu index streams could not be read (see the warnings); their "
			      "snapshots' trees were walked instead; %s",
			      (unsigned long long)c.damaged,
			      opts->dry_run ? "dry run: nothing was removed" : "the rest was collected");
	if (!opts->dry_run && swept && (r == 0 || r == CAIRN_ECORRUPT || sw.err)) {
		/* A Ctrl-C now ends a wait for another writer's commit. */
		catalog_stop_waits_on(&gc_stop);
		int e = status_save(st, s);
		catalog_stop_waits_on(NULL);
		if (e < 0 && r == 0)
			r = store_err(st, e,
				      "GC done, but its status could not be saved in the catalog: %s",
				      catalog_errmsg(st->cat));
	}
	if (r == -EINTR && !*st->errdetail)
		store_err(st, r, "interrupted; nothing referenced was removed");

	free(c.dbuf);
	free(c.name_cache);
	free(c.missing);
	free(c.dmiss);
	encroot_keyset_free(&c.keys);
	gc_marker_free(c.mk);
	gc_idxwalk_free(w);
	pthread_mutex_destroy(&sw.lock);
	close(chunkfd);
	close(lockfd); /* releases the lock */
	STOP_FLAG_SET(gc_stop, 0);
	return r;
}
