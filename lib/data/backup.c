/* backup.c - taking snapshots: walk a source, store chunks, write the tree.
 *
 * Files are visited in tree order (each directory's entries sorted
 * bytewise), which is also the order of the previous snapshot's tree
 * stream, so the previous entry of a path is found by advancing a cursor,
 * never by a lookup.  A file whose size, mtime, ctime and inode match its
 * previous entry is not opened: its chunk references are reused.  A file
 * changed about when the backup ran is recorded so that the next backup
 * reads it again (see racy_since).
 *
 * Small files (below the minimum chunk size) are packed into bundles.  A
 * bundle closes after a file whose path hash hits a mask (once the bundle
 * is big enough) or when it reaches the average chunk size, so boundaries
 * depend on the files themselves: an unchanged run of files forms the
 * same bundle again and is reused without reading, and a changed file
 * re-packs only its own bundle.
 *
 * The main thread only walks, reads and emits: chunks of large files and
 * whole bundles go to the worker pool (hash, compress, store), and file
 * entries wait in groups (one bundle's worth of entries, in tree order)
 * until every job of their group is done.  Jobs complete in submission
 * order and a group is emitted as soon as its last job completes, before
 * any later job's reference is taken, so the tree stream and the chunk
 * set are the same for any number of workers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "data/exclude.h"
#include "catalog/dataset.h"
#include "crypt/encroot.h"
#include "data/snapio.h"
#include "store/store.h"
#include "data/pool.h"
#include "catalog/snapshot.h"
#include "data/statahead.h"
#include "catalog/writer.h"

/* Bundle rules; changing them changes bundle boundaries (not the format). */
#define BUNDLE_HASH_MASK 31u
#define PENDING_MAX 4096

typedef struct pending {
	tree_entry_t e;
	bool small;     /* a bundle member whose content is still to be read */
	bool dropped;   /* could not be read: left out of the snapshot */
	bool unchanged; /* matches its previous entry */
	bool kept;      /* a bundle member left where it was: in its previous bundle */
	bool judged;    /* keep_unchanged decided for its previous bundle */
	bool xattrs_later; /* new or changed: xattrs are read when it is opened */
	bool prev_bundle;
	chunk_ref_t pref; /* previous bundle ref, when prev_bundle */
	uint32_t poff;
	uint32_t psize;   /* the previous entry's size in it */
} pending_t;

/* Entries of one bundle group, in tree order, with the number of pool
 * jobs (chunks of its large files, its bundle) still to complete. */
typedef struct group {
	pending_t *pend;
	size_t npend, cappend;
	size_t outstanding;
	struct group *next;
} group_t;

/* Changed small files of groups whose other members stayed in their
 * previous bundles, packed together across groups: a scattered change
 * makes a few bundles, not one tiny chunk per changed file.  A group's
 * carried members are all in one carry, which holds one of the group's
 * outstanding jobs until its bundle is stored. */
typedef struct carry {
	buf_t data;
	struct carried {
		group_t *g;
		uint32_t idx;
	} *m;
	size_t n, cap;
} carry_t;

/* Bytes of each bundle that the previous snapshot's files use, read from
 * its tree on the first group that has a changed member (an unchanged
 * backup never needs it). */
typedef struct bundleuse {
	struct use {
		digest_t d;
		uint64_t live;
		bool used;
	} *slot;
	size_t cap, n; /* cap: a power of two */
	bool loaded;
} bundleuse_t;

typedef struct hardlink {
	dev_t dev;
	ino_t ino;
	char *path; /* the inode's first name */
	int lost;   /* why that name was left out (negative errno), else 0 */
} hardlink_t;

typedef struct prevcur {
	snaptree_t t;
	tree_entry_t cur;
	bool have, open, done;
	buf_t roots; /* its tree roots (the data is owned by t) */
} prevcur_t;

typedef struct bctx {
	cairn_store *st;
	chunkstore_t *cs;
	cairn_snapshot_opts *opts;
	const char *dsname;
	char *root; /* source path */
	int rootfd; /* open on it while the walk and its groups run */
	dev_t rootdev;
	chunker_params_t cp, mp;
	crypt_keys_t *key; /* the encryption root's keys, NULL for a plain dataset */
	int level;
	uint32_t avg;
	refset_t set;
	cdcw_t tree;
	prevcur_t prev;
	group_t *cur;                /* the group being filled */
	group_t *ghead, *gtail;      /* closed groups waiting to be emitted */
	size_t queued;               /* entries in the closed groups */
	size_t group_files;
	uint64_t group_bytes;
	hardlink_t *links;
	size_t nlinks, caplinks;
	buf_t io, bundle;
	carry_t carry;
	bundleuse_t use;
	pool_t *pool;
	statahead_t *sa; /* incremental walks: a second thread stats ahead */
	struct inflight {
		chunkjob_t *job;
		group_t *g;   /* the group of the entry the job belongs to */
		uint32_t idx; /* that entry's index in g */
		uint32_t ext; /* its extent, or EXT_BUNDLE for g's bundle */
		carry_t *carry; /* or the members of a carried bundle (g unused) */
	} *q; /* all jobs not yet completed, oldest first */
	size_t qhead, qn, qcap;
	uint64_t qbytes;
	int64_t last_progress;
	uint64_t files, bytes_read, bytes_reused;
	uint64_t skipped;      /* objects left out, directories not counted */
	uint64_t skipped_dirs; /* directories whose entries were left out */
	uint64_t torn;         /* files written in place while read (see torn_check) */
	int err;
	int64_t racy_ns;    /* files changed since are recorded as racy (see racy_since) */
	int64_t ahead_ns;   /* how far a file's stamp may run ahead of this clock (see racy) */
	excl_t *excl;       /* exclude properties and .cairnignore files */
	uint64_t excluded;  /* entries left out by it */
} bctx_t;

/* ---- previous-tree cursor ---- */

static const tree_entry_t *prev_find(bctx_t *c, const char *path)
{
	prevcur_t *p = &c->prev;
	if (!p->open || p->done)
		return NULL;
	for (;;) {
		if (p->have) {
			int cmp = tree_path_cmp(p->cur.path ? p->cur.path : "", path);
			if (cmp == 0)
				return &p->cur;
			if (cmp > 0)
				return NULL;
			tree_entry_clear(&p->cur);
			p->have = false;
		}
		int r = snaptree_next(&p->t, &p->cur);
		if (r <= 0) {
			/* A damaged previous tree only costs re-reading files. */
			p->done = true;
			return NULL;
		}
		p->have = true;
	}
}

static bool same_file(const tree_entry_t *a, const tree_entry_t *b)
{
	return a->type == b->type && a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       a->ctime_ns == b->ctime_ns && a->ino == b->ino;
}

/* ---- progress and warnings ---- */

static void progress(bctx_t *c, bool force)
{
	if (!c->opts->progress)
		return;
	int64_t now = mono_ns();
	if (!force && now - c->last_progress < 200000000)
		return;
	c->last_progress = now;
	cairn_progress p = {.phase = "backup", .object = c->dsname, .files = c->files,
			    .bytes = c->bytes_read + c->bytes_reused};
	c->opts->progress(&p, c->opts->arg);
}

/* An unreadable item: fatal with --strict, else reported and counted in
 * *count. */
static int skip_counted(bctx_t *c, const char *path, int err, uint64_t *count)
{
	char obj[PATH_MAX + 64];
	snprintf(obj, sizeof(obj), "%s/%s", c->root, path);
	if (c->opts->strict)
		return store_err(c->st, err, "%s: %s", obj, cairn_strerror(err));
	(*count)++;
	if (c->opts->warn)
		c->opts->warn(obj, err, c->opts->arg);
	return 0;
}

/* An object (not a directory) that could not be read. */
static int skip_item(bctx_t *c, const char *path, int err)
{
	return skip_counted(c, path, err, &c->skipped);
}

/* A directory whose entries could not be read: counted apart, as it
 * stands for everything below it, which one "file" in the summary hid. */
static int skip_dir(bctx_t *c, const char *path, int err)
{
	return skip_counted(c, path, err, &c->skipped_dirs);
}

/* ---- hardlinks ---- */

/* Inodes with several links seen so far: an open-addressing table keyed
 * by (dev, ino), so a tree full of hardlinks stays linear. */
static size_t link_slot(const bctx_t *c, dev_t dev, ino_t ino)
{
	uint64_t h = ((uint64_t)ino * 0x9e3779b97f4a7c15ull) ^ (uint64_t)dev;
	size_t i = h & (c->caplinks - 1);
	while (c->links[i].path && (c->links[i].dev != dev || c->links[i].ino != ino))
		i = (i + 1) & (c->caplinks - 1);
	return i;
}

/* The first name's record of e's inode, or NULL when e is not one. */
static hardlink_t *hardlink_first(bctx_t *c, const tree_entry_t *e)
{
	if (!c->caplinks || e->nlink < 2 || e->type == TREE_DIR)
		return NULL;
	hardlink_t *h = &c->links[link_slot(c, e->dev, e->ino)];
	return h->path ? h : NULL;
}

/* e is left out for err: if it is the first name of its inode, the later
 * names (hardlinks to it) are left out too when they are emitted. */
static void hardlink_lost(bctx_t *c, const tree_entry_t *e, int err)
{
	hardlink_t *h = e->type == TREE_HARDLINK ? NULL : hardlink_first(c, e);
	if (h && !strcmp(h->path, e->path))
		h->lost = err;
}

/* Reports a later name of an inode whose first name was left out; a link
 * to it would dangle in the snapshot. */
static int skip_later_name(bctx_t *c, const tree_entry_t *e, int err)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s (a hardlink of %s/%s)", e->path, c->root, e->link);
	return skip_item(c, path, err);
}

static int hardlink_add(bctx_t *c, const struct stat *st, const char *path)
{
	if ((c->nlinks + 1) * 2 > c->caplinks) {
		bctx_t grown = {.caplinks = c->caplinks ? c->caplinks * 2 : 64};
		grown.links = calloc(grown.caplinks, sizeof(hardlink_t));
		if (!grown.links)
			return -ENOMEM;
		for (size_t i = 0; i < c->caplinks; i++)
			if (c->links[i].path)
				grown.links[link_slot(&grown, c->links[i].dev, c->links[i].ino)] =
					c->links[i];
		free(c->links);
		c->links = grown.links;
		c->caplinks = grown.caplinks;
	}
	hardlink_t *h = &c->links[link_slot(c, st->st_dev, st->st_ino)];
	h->path = strdup(path);
	if (!h->path)
		return -ENOMEM;
	h->dev = st->st_dev;
	h->ino = st->st_ino;
	c->nlinks++;
	return 0;
}

/* ---- chunk references ---- */

/* Adds a reused chunk to the snapshot, touching it the first time so a
 * running GC keeps it.  -ENOENT when the chunk has gone. */
static int reuse_ref(bctx_t *c, const chunk_ref_t *r)
{
	if (refset_has(&c->set, &r->digest))
		return 0;
	int e = chunkstore_touch(c->cs, &r->digest);
	if (e < 0)
		return e;
	return refset_add(&c->set, r) < 0 ? -ENOMEM : 0;
}

/* A store failure ends the snapshot; the first one is the one reported. */
static int job_failed(bctx_t *c, int r, const digest_t *d)
{
	if (!c->err)
		c->err = store_chunk_err(c->st, r, d);
	return r;
}

static int store_chunk(bctx_t *c, const uint8_t *data, size_t len, chunk_ref_t *ref)
{
	int r = chunk_store_data_key(c->cs, c->key, data, len, c->level, ref, NULL);
	if (r == 0 && refset_add(&c->set, ref) < 0)
		r = -ENOMEM;
	/* The store failed, not the source: this ends the snapshot. */
	return r < 0 ? job_failed(c, r, &ref->digest) : 0;
}

static int extent_add(tree_entry_t *e, size_t *cap, const tree_extent_t *x)
{
	if (e->nextent == *cap) {
		size_t n = *cap ? *cap * 2 : 8;
		tree_extent_t *p = realloc(e->extents, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		e->extents = p;
		*cap = n;
	}
	e->extents[e->nextent++] = *x;
	return 0;
}

/* ---- reading file content ---- */

/* Bytes of chunk copies waiting for workers; bounds memory. */
#define INFLIGHT_MAX (64u << 20)
/* Entries waiting in closed groups behind unfinished jobs; bounds memory. */
#define QUEUED_MAX 65536u
#define EXT_BUNDLE UINT32_MAX

static int emit_ready(bctx_t *c);

/* Gives a bundle's reference to the members that made it. */
static void bundle_set_ref(group_t *g, const chunk_ref_t *ref)
{
	for (size_t i = 0; i < g->npend; i++)
		if (g->pend[i].small && !g->pend[i].dropped && !g->pend[i].kept)
			g->pend[i].e.bundle = *ref;
}

/* Gives a carried bundle's reference to its members. */
static void carry_set_ref(carry_t *k, const chunk_ref_t *ref)
{
	for (size_t i = 0; i < k->n; i++)
		k->m[i].g->pend[k->m[i].idx].e.bundle = *ref;
}

/* Ends the job each member group holds on k, and frees k. */
static void carry_release(carry_t *k)
{
	for (size_t i = 0; i < k->n; i++)
		if (i == 0 || k->m[i].g != k->m[i - 1].g)
			k->m[i].g->outstanding--;
	free(k->m);
	buf_free(&k->data);
	free(k);
}

/* Waits for the oldest job, puts its reference where it belongs and
 * emits the groups it completes.  Called only in submission order, which
 * is what keeps the output independent of the workers' timing. */
static int complete_oldest(bctx_t *c)
{
	struct inflight *f = &c->q[c->qhead++];
	c->qn--;
	pool_wait(c->pool, f->job);
	chunkjob_t *j = f->job;
	group_t *g = f->g;
	int r = j->err;
	c->qbytes -= j->len;
	if (r == 0) {
		if (f->carry)
			carry_set_ref(f->carry, &j->ref);
		else if (f->ext == EXT_BUNDLE)
			bundle_set_ref(g, &j->ref);
		else
			g->pend[f->idx].e.extents[f->ext].ref = j->ref;
		if (refset_add(&c->set, &j->ref) < 0)
			r = -ENOMEM;
	}
	if (r < 0)
		job_failed(c, r, &j->ref.digest);
	free(j);
	if (f->carry)
		carry_release(f->carry);
	else
		g->outstanding--;
	if (!c->qn)
		c->qhead = 0;
	int q = emit_ready(c);
	return r ? r : q;
}

/* Completes every job submitted so far (and emits what that allows). */
static int complete_all(bctx_t *c)
{
	int r = 0;
	while (c->qn) {
		int q = complete_oldest(c);
		if (!r)
			r = q;
	}
	return r;
}

/* Queues job f for the workers; waits for the oldest jobs while too many
 * bytes are in flight. */
static int queue_job(bctx_t *c, struct inflight f)
{
	chunkjob_t *j = f.job;
	if (c->qhead + c->qn == c->qcap) {
		if (c->qhead) {
			memmove(c->q, c->q + c->qhead, c->qn * sizeof(*c->q));
			c->qhead = 0;
		} else {
			size_t ncap = c->qcap ? c->qcap * 2 : 64;
			struct inflight *p = realloc(c->q, ncap * sizeof(*p));
			if (!p) {
				free(j->data);
				free(j);
				return -ENOMEM;
			}
			c->q = p;
			c->qcap = ncap;
		}
	}
	c->q[c->qhead + c->qn++] = f;
	c->qbytes += j->len;
	j->level = c->level;
	pool_submit(c->pool, j);
	int r = 0;
	while (r == 0 && c->qbytes > INFLIGHT_MAX)
		r = complete_oldest(c);
	return r;
}

/* Queues j as the chunk of entry idx's extent ext (or the bundle) of the
 * current group. */
static int submit_job(bctx_t *c, chunkjob_t *j, uint32_t idx, uint32_t ext)
{
	c->cur->outstanding++;
	return queue_job(c, (struct inflight){j, c->cur, idx, ext, NULL});
}

/* Adds a chunk extent to e (the last entry of the current group); its
 * digest, compression and write happen on a worker thread, and
 * complete_oldest() fills the reference in. */
static int submit_chunk(bctx_t *c, tree_entry_t *e, size_t *cap, const uint8_t *data, size_t n)
{
	tree_extent_t x = {.kind = TREE_EXT_CHUNK, .length = n};
	if (!c->pool) {
		int r = store_chunk(c, data, n, &x.ref);
		return r < 0 ? r : extent_add(e, cap, &x);
	}
	int r = extent_add(e, cap, &x);
	chunkjob_t *j = r == 0 ? calloc(1, sizeof(*j)) : NULL;
	if (j)
		j->data = malloc(n);
	if (!j || !j->data) {
		free(j);
		return -ENOMEM;
	}
	memcpy(j->data, data, n);
	j->len = n;
	return submit_job(c, j, c->cur->npend - 1, e->nextent - 1);
}

/* Chunks [off, end) of fd with FastCDC into e's extents. */
static int chunk_region(bctx_t *c, int fd, uint64_t off, uint64_t end, tree_entry_t *e,
			size_t *cap, uint64_t *got)
{
	size_t want = 2 * (size_t)c->cp.max_size;
	if (buf_reserve(&c->io, want) < 0)
		return -ENOMEM;
	c->io.len = 0;
	bool eof = false;
	while (!eof || c->io.len) {
		while (!eof && c->io.len < want) {
			size_t n = MIN(want - c->io.len, end - off);
			ssize_t k = n ? pread_full(fd, c->io.data + c->io.len, n, off) : 0;
			if (k < 0)
				return k;
			c->io.len += k;
			off += k;
			c->bytes_read += k;
			if ((size_t)k < n || off >= end)
				eof = true;
		}
		size_t done = 0;
		while (c->io.len - done >= c->cp.max_size || (eof && done < c->io.len)) {
			size_t n = chunker_cut(&c->cp, c->io.data + done, c->io.len - done);
			int r = submit_chunk(c, e, cap, c->io.data + done, n);
			if (r < 0)
				return r;
			done += n;
			*got += n;
		}
		buf_consume(&c->io, done);
		progress(c, false);
	}
	return 0;
}

static int hole_add(tree_entry_t *e, size_t *cap, uint64_t len)
{
	if (e->nextent && e->extents[e->nextent - 1].kind == TREE_EXT_HOLE) {
		e->extents[e->nextent - 1].length += len;
		return 0;
	}
	tree_extent_t x = {.kind = TREE_EXT_HOLE, .length = len};
	return extent_add(e, cap, &x);
}

/* Where a file's data ends once SEEK_DATA found none after some offset:
 * its end as stat saw it (size), unless it shrank since.  A truncated file
 * must not be recorded with its old size as a trailing hole: that would
 * restore bytes it never had, where the non-sparse path records what it
 * read. */
static off_t end_of_data(int fd, uint64_t size)
{
	struct stat now;
	if (fstat(fd, &now) == 0 && (uint64_t)now.st_size < size)
		return now.st_size;
	return size;
}

/* Reads a whole large file; sparse regions become holes. */
static int read_large(bctx_t *c, int fd, const struct stat *st, tree_entry_t *e)
{
	size_t cap = 0;
	uint64_t got = 0, off = 0, size = st->st_size;
	bool sparse = (uint64_t)st->st_blocks * 512 < size;
	while (off < size) {
		uint64_t data = off, hole = size;
		if (sparse) {
			off_t d = lseek(fd, off, SEEK_DATA);
			if (d < 0 && errno == ENXIO)
				d = end_of_data(fd, size);
			if (d < 0)
				return -errno;
			off_t h = lseek(fd, d, SEEK_HOLE);
			data = MIN((uint64_t)d, size); /* the file may have grown */
			hole = h < 0 ? size : MIN((uint64_t)h, size);
			/* A hole punched at d between the two calls: read on as
			 * data (its zeros are the content), so the loop advances. */
			if (hole <= data)
				hole = size;
			if (data > off) {
				int r = hole_add(e, &cap, data - off);
				if (r < 0)
					return r;
				got += data - off;
			}
		}
		if (data >= size)
			break;
		uint64_t before = got;
		int r = chunk_region(c, fd, data, hole, e, &cap, &got);
		if (r < 0)
			return r;
		if (got - before < hole - data)
			break; /* the file shrank while we read it */
		off = hole;
	}
	e->size = got;
	return 0;
}

/* ---- volumes ---- */

static bool all_zero(const uint8_t *p, size_t n)
{
	static const uint8_t z[4096];
	for (size_t i = 0; i < n; i += sizeof(z))
		if (memcmp(p + i, z, MIN(sizeof(z), n - i)))
			return false;
	return true;
}

/* Fixed-size chunks; all-zero chunks become holes (free to store, and
 * sparse again on restore to a file). */
static int read_volume(bctx_t *c, int fd, tree_entry_t *e)
{
	size_t cap = 0, cs = c->avg;
	if (buf_reserve(&c->io, cs) < 0)
		return -ENOMEM;
	uint64_t off = 0;
	for (;;) {
		ssize_t k = pread_full(fd, c->io.data, cs, off);
		if (k < 0)
			return k;
		if (k == 0)
			break;
		int r;
		if (all_zero(c->io.data, k))
			r = hole_add(e, &cap, k);
		else
			r = submit_chunk(c, e, &cap, c->io.data, k);
		if (r < 0)
			return r;
		off += k;
		c->bytes_read += k;
		progress(c, false);
		if ((size_t)k < cs)
			break;
	}
	e->size = off;
	return 0;
}

/* ---- tree output ---- */

/* The clock that stamps file times (ns). */
static int64_t coarse_now(void)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Filesystems whose timestamps come from another host's clock (or a
 * FUSE daemon's choice), which may be coarse and is not this clock. */
static bool foreign_clock(long type)
{
	switch ((unsigned long)type) {
	case 0x6969:     /* NFS */
	case 0x517b:     /* SMB */
	case 0xff534d42: /* CIFS */
	case 0xfe534d42: /* SMB2 */
	case 0x65735546: /* FUSE */
	case 0x00c36400: /* Ceph */
	case 0x01021997: /* 9p */
	case 0x5346414f: /* AFS */
		return true;
	default:
		return false;
	}
}

/* The granularity of the source's timestamps (ns), as far as can be told:
 * one with a foreign clock 2 s, as is a local one whose root has whole
 * seconds for mtime or ctime (FAT keeps 2 s); otherwise the largest power
 * of ten dividing both (exFAT keeps 10 ms, ext4 and tmpfs 1 ns).  A guess
 * that is too coarse only makes more files racy. */
static int64_t time_granularity(bool foreign, const struct stat *root)
{
	long a = root->st_mtim.tv_nsec, b = root->st_ctim.tv_nsec;
	if (foreign || !a || !b)
		return 2000000000;
	int64_t g = 1;
	while (g < 1000000000 && a % (g * 10) == 0 && b % (g * 10) == 0)
		g *= 10;
	return g;
}

/* The ctime from which a file's stat cannot be trusted by the next
 * backup's unchanged shortcut, for a backup whose walk starts now.  A
 * write in the same timestamp tick as this backup's read of a file leaves
 * its size, mtime and ctime as recorded, and the shortcut would keep the
 * old content for good (git's "racy" index entries): on a filesystem
 * with coarse timestamps (FAT: 2 s; FUSE, NFS, some others: 1 s) that is
 * a whole second, and even ns timestamps come from the kernel's coarse
 * clock (a tick of up to 10 ms).  A write moves mtime and ctime to the
 * current tick, so only a file whose mtime or ctime is no older than the
 * tick holding the walk's start, on that coarse clock, can hide one
 * (ctime alone would do where it is a change time, but FAT has none; an
 * mtime set into the future is left to racy).  A foreign clock (a file
 * server's) is allowed a further 2 s of difference from this one, either
 * way: c->ahead_ns is how far a stamp may run ahead of this clock. */
static void racy_since(bctx_t *c, int rootfd, const struct stat *root)
{
	struct statfs sf;
	bool foreign = fstatfs(rootfd, &sf) == 0 && foreign_clock(sf.f_type);
	int64_t g = time_granularity(foreign, root);
	int64_t t = coarse_now() - (foreign ? 2000000000 : 0);
	c->racy_ns = t - t % g;
	/* a tick of g, and a second for a fine-grained stamp (multigrain
	 * timestamps) taken ahead of the coarse clock */
	c->ahead_ns = g + 1000000000 + (foreign ? 2000000000 : 0);
}

/* A racy object is recorded with its ctime 1 ns early: the next backup's
 * stat then differs from it, and the object is read again (the snapshot
 * itself restores the same; ctime is not restored).  Not only a regular
 * file: the shortcut keeps any object's xattrs (a directory's ACL) from
 * the previous snapshot.  A later name of an inode (TREE_HARDLINK) has
 * nothing kept: its xattrs are read every time. */
static bool racy(const bctx_t *c, const tree_entry_t *e)
{
	if (e->type == TREE_HARDLINK)
		return false;
	if (e->ctime_ns >= c->racy_ns)
		return true;
	/* mtime for a filesystem whose ctime is no change time.  One later
	 * than any write could have stamped by now was set (touch -d, an
	 * archive's date): it cannot hide a write, which would move it back
	 * to now, and counting it would read the file again every backup
	 * until that date. */
	return e->mtime_ns >= c->racy_ns && e->mtime_ns <= coarse_now() + c->ahead_ns;
}

static int emit(bctx_t *c, const tree_entry_t *e)
{
	buf_t rec = {0};
	int r = 0;
	tree_entry_t smudged;
	if (racy(c, e)) {
		smudged = *e; /* shallow: only read by the writer below */
		smudged.ctime_ns--;
		e = &smudged;
	}
	if (e->type == TREE_REG && e->content == TREE_CONTENT_EXTENTS &&
	    e->nextent > TREE_MAX_EXTENTS) {
		/* Long extent lists continue in TREE_CONT records. */
		tree_entry_t head = *e;
		head.nextent = TREE_MAX_EXTENTS;
		r = tree_write_entry(&rec, &head);
		for (uint32_t i = TREE_MAX_EXTENTS; r == 0 && i < e->nextent; i += TREE_MAX_EXTENTS) {
			tree_entry_t cont = {.type = TREE_CONT, .content = TREE_CONTENT_EXTENTS,
					     .extents = e->extents + i,
					     .nextent = MIN(TREE_MAX_EXTENTS, e->nextent - i)};
			r = tree_write_entry(&rec, &cont);
		}
	} else {
		r = tree_write_entry(&rec, e);
	}
	if (r == 0)
		r = cdcw_write(&c->tree, rec.data, rec.len);
	buf_free(&rec);
	return r;
}

/* ---- bundles ---- */

static bool group_reusable(bctx_t *c, group_t *g)
{
	uint64_t off = 0;
	const chunk_ref_t *ref = NULL;
	for (size_t i = 0; i < g->npend; i++) {
		pending_t *p = &g->pend[i];
		if (!p->small)
			continue;
		if (!p->unchanged || !p->prev_bundle || p->poff != off)
			return false;
		if (ref && digest_cmp(&ref->digest, &p->pref.digest))
			return false;
		ref = &p->pref;
		off += p->e.size;
	}
	return ref && off == ref->plain_len && reuse_ref(c, ref) == 0;
}

/* Where an object's xattrs are read from: a file the backup has open
 * (no path walk), or a whole path (objects it does not open). */
typedef struct xsrc {
	int fd;
	const char *path; /* used when not NULL */
} xsrc_t;

static ssize_t xattr_list(const xsrc_t *s, char *names, size_t size)
{
	return s->path ? llistxattr(s->path, names, size) : flistxattr(s->fd, names, size);
}

static ssize_t xattr_get(const xsrc_t *s, const char *name, void *val, size_t size)
{
	return s->path ? lgetxattr(s->path, name, val, size) : fgetxattr(s->fd, name, val, size);
}

/* Whether a listed xattr's read failed because it is not there (removed
 * since the list, or a namespace this filesystem lists but does not
 * serve).  Any other error (EIO, EACCES, ...) leaves the object's xattrs
 * unknown: recording it without that one would restore it without it,
 * and later snapshots would copy the loss on while the file is unchanged. */
static bool xattr_gone(int err)
{
	return err == ENODATA || err == ENOTSUP || err == EOPNOTSUPP;
}

static int read_xattrs(const xsrc_t *src, tree_entry_t *e)
{
	char names[65536];
	ssize_t n = xattr_list(src, names, sizeof(names));
	if (n <= 0)
		return (n < 0 && errno != ENOTSUP && errno != ENODATA) ? -errno : 0;
	size_t count = 0;
	for (ssize_t i = 0; i < n; i += strlen(names + i) + 1)
		count++;
	e->xattrs = calloc(count, sizeof(*e->xattrs));
	if (!e->xattrs)
		return -ENOMEM;
	for (ssize_t i = 0; i < n; i += strlen(names + i) + 1) {
		uint8_t val[TREE_MAX_XATTR_VALUE];
		ssize_t vl = xattr_get(src, names + i, val, sizeof(val));
		if (vl < 0 && !xattr_gone(errno))
			return -errno;
		if (vl < 0 || strlen(names + i) > 255)
			continue; /* vanished, or too large for the format */
		tree_xattr_t *x = &e->xattrs[e->nxattr];
		x->name = strdup(names + i);
		x->value = malloc(vl ? vl : 1);
		if (!x->name || !x->value) {
			free(x->name);
			free(x->value);
			return -ENOMEM;
		}
		memcpy(x->value, val, vl);
		x->len = vl;
		e->nxattr++;
	}
	return 0;
}

/* read_xattrs for path under the source root (the xattr calls take whole
 * paths, and only a changed object needs them). */
static int read_xattrs_at(const bctx_t *c, const char *path, tree_entry_t *e)
{
	char full[PATH_MAX * 2];
	snprintf(full, sizeof(full), "%s%s%s", c->root, *path ? "/" : "", path);
	return read_xattrs(&(xsrc_t){.path = full}, e);
}

/* A file's mtime and size as its open saw them (known: they could be
 * told), to notice it being written while it is read (see torn_check). */
typedef struct opened {
	bool known;
	int64_t mtime_ns;
	uint64_t size;
} opened_t;

/* Whether the open fd is still the object the walk stat'ed: of type
 * `type` (S_IFREG, S_IFDIR), on dev with inode number ino, and ctime_ns
 * the stat's ctime.  The name may have been renamed over (another object
 * swapped in) or mounted on since: a directory's entries would then be
 * recorded below the old one's metadata, a file's bytes under the old
 * file's mode, owner, times and size (a file that never existed).  Fills
 * *seen (unless NULL) for torn_check. */
static int same_object(int fd, mode_t type, dev_t dev, ino_t ino, int64_t ctime_ns,
		       int64_t walk_start, opened_t *seen)
{
	struct statx now;
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
		  STATX_TYPE | STATX_INO | STATX_CTIME | STATX_BTIME | STATX_MTIME | STATX_SIZE,
		  &now) < 0) {
		/* No statx (an old kernel, a sandbox refusing it): the inode. */
		struct stat old;
		if ((errno != ENOSYS && errno != EPERM) || fstat(fd, &old) < 0)
			return -errno;
		return (old.st_mode & S_IFMT) == type && old.st_ino == ino && old.st_dev == dev
			? 0 : CAIRN_ECHANGED;
	}
	if ((now.stx_mode & S_IFMT) != type || now.stx_ino != ino ||
	    makedev(now.stx_dev_major, now.stx_dev_minor) != dev)
		return CAIRN_ECHANGED;
	if (seen && (now.stx_mask & (STATX_MTIME | STATX_SIZE)) == (STATX_MTIME | STATX_SIZE))
		*seen = (opened_t){.known = true, .size = now.stx_size,
				   .mtime_ns = (int64_t)now.stx_mtime.tv_sec * 1000000000 +
					       now.stx_mtime.tv_nsec};
	/* The inode number alone does not tell: one removed and made again
	 * (rm; mkdir, or a file unlinked and created anew) gets the freed
	 * number back at once on ext4.  An object that has not changed since
	 * the stat is the one stat'ed; one that has is another if it was born
	 * after the stat's ctime (ctime is never before birth, and a changed
	 * directory's entries or a file written in place are no replacement,
	 * so ctime alone would not do).  Without a birth time (tmpfs before
	 * Linux 5.x, NFS) the inode is all there is.  One made again since the
	 * stat was born after the walk started (walk_start, racy_since's
	 * bound): an object born earlier is the one stat'ed even when its
	 * birth comes after its ctime, as on vfat, whose ctime is its mtime
	 * (set back by cp -p or touch -d) while its birth time is real. */
	int64_t c = (int64_t)now.stx_ctime.tv_sec * 1000000000 + now.stx_ctime.tv_nsec;
	if (c == ctime_ns || !(now.stx_mask & STATX_BTIME))
		return 0;
	int64_t born = (int64_t)now.stx_btime.tv_sec * 1000000000 + now.stx_btime.tv_nsec;
	return born > ctime_ns && born >= walk_start ? CAIRN_ECHANGED : 0;
}

/* same_object for a directory the walk stat'ed as st. */
static int same_dir(const bctx_t *c, int fd, const struct stat *st)
{
	return same_object(fd, S_IFDIR, st->st_dev, st->st_ino,
			   (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec,
			   c->racy_ns, NULL);
}

/* Opens a file of the source: relative to the root, so the kernel walks
 * only the part of the path below it.  The walk saw a regular file, but
 * the name may be another object by now: O_NONBLOCK keeps the open of a
 * FIFO from waiting for a writer forever, and anything but a regular file
 * is refused before it is read.  So is another regular file (one renamed
 * over the name since the stat, as editors and atomic writers do, or one
 * removed and made again under the freed inode number: see same_object): the
 * entry holds the stat's mode, owner, times and size, and reading the new
 * file's bytes into it would record a file that never existed (the old
 * one's metadata, the new one's content cut to the old size). */
static int source_open(const bctx_t *c, int at, const char *name, const tree_entry_t *want,
		       opened_t *seen)
{
	int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOATIME;
	int fd = openat(at, name, flags);
	if (fd < 0 && errno == EPERM) { /* O_NOATIME needs the owner or CAP_FOWNER */
		flags &= ~O_NOATIME;
		fd = openat(at, name, flags);
	}
	if (fd < 0)
		return -errno;
	int r = same_object(fd, S_IFREG, want->dev, want->ino, want->ctime_ns, c->racy_ns, seen);
	/* Local filesystems ignore O_NONBLOCK on a regular file; a FUSE or
	 * network one may pass it on, so reads go without it. */
	if (r == 0 && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* Reports a file written in place while it was read: its mtime moved
 * since the open while it did not grow, so its copy may mix old and new
 * bytes.  It stays recorded as read (left out, a file rewritten all the
 * time would never be backed up), and the next backup reads it again, as
 * its mtime and ctime are new.  A file appended to (a log) grows: it is
 * stored up to its size at the stat, a consistent prefix, without a word.
 * One fstat per file read; the files the shortcut skips cost nothing. */
static void torn_check(bctx_t *c, int fd, const opened_t *seen, const char *path)
{
	struct stat now;
	if (!seen->known || fstat(fd, &now) < 0)
		return;
	int64_t m = (int64_t)now.st_mtim.tv_sec * 1000000000 + now.st_mtim.tv_nsec;
	if (m == seen->mtime_ns || (uint64_t)now.st_size > seen->size)
		return;
	c->torn++;
	if (c->opts->warn) {
		char obj[PATH_MAX + 64];
		snprintf(obj, sizeof(obj), "%s/%s", c->root, path);
		c->opts->warn(obj, CAIRN_ETORN, c->opts->arg);
	}
}

/* Reads a new or changed file's xattrs from its open fd (see visit). */
static int xattrs_from_fd(pending_t *p, int fd)
{
	if (!p->xattrs_later)
		return 0;
	p->xattrs_later = false;
	return read_xattrs(&(xsrc_t){.fd = fd}, &p->e);
}

static int read_small(bctx_t *c, pending_t *p, buf_t *into)
{
	opened_t seen = {0};
	int fd = source_open(c, c->rootfd, p->e.path, &p->e, &seen);
	if (fd < 0)
		return fd;
	size_t before = into->len;
	int r = xattrs_from_fd(p, fd);
	if (r == 0)
		r = buf_reserve(into, p->e.size);
	ssize_t k = r < 0 ? r : read_full(fd, into->data + before, p->e.size);
	if (k >= 0)
		torn_check(c, fd, &seen, p->e.path);
	close(fd);
	if (k < 0)
		return k;
	into->len += k;
	c->bytes_read += k;
	p->e.bundle_off = before;
	p->e.size = k; /* what was there when we read it */
	return 0;
}

/* Stores the bundle in c->bundle: on a worker (which takes the buffer
 * over) or, without a pool, right here. */
static int bundle_store(bctx_t *c, group_t *g)
{
	if (!c->pool) {
		chunk_ref_t ref = {0};
		int r = store_chunk(c, c->bundle.data, c->bundle.len, &ref);
		if (r == 0)
			bundle_set_ref(g, &ref);
		return r;
	}
	chunkjob_t *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->data = c->bundle.data;
	j->len = c->bundle.len;
	c->bundle = (buf_t){0};
	return submit_job(c, j, 0, EXT_BUNDLE);
}

static struct use *use_slot(bundleuse_t *u, const digest_t *d)
{
	uint64_t h;
	memcpy(&h, d->b, sizeof(h)); /* a digest's bytes are already uniform */
	size_t i = h & (u->cap - 1);
	while (u->slot[i].used && digest_cmp(&u->slot[i].d, d))
		i = (i + 1) & (u->cap - 1);
	return &u->slot[i];
}

static int use_add(bundleuse_t *u, const digest_t *d, uint64_t bytes)
{
	if ((u->n + 1) * 2 > u->cap) {
		bundleuse_t grown = {.cap = u->cap ? u->cap * 2 : 1024};
		grown.slot = calloc(grown.cap, sizeof(*grown.slot));
		if (!grown.slot)
			return -ENOMEM;
		for (size_t i = 0; i < u->cap; i++)
			if (u->slot[i].used)
				*use_slot(&grown, &u->slot[i].d) = u->slot[i];
		free(u->slot);
		u->slot = grown.slot;
		u->cap = grown.cap;
	}
	struct use *x = use_slot(u, d);
	if (!x->used) {
		*x = (struct use){.d = *d, .used = true};
		u->n++;
	}
	x->live += bytes;
	return 0;
}

/* Reads the previous tree once more, summing its files' bytes per bundle.
 * A tree that cannot be read leaves the table empty: every bundle then
 * counts as unused and its unchanged members are re-packed (read again). */
static int use_load(bctx_t *c)
{
	c->use.loaded = true;
	if (!c->prev.open)
		return 0;
	snaptree_t t;
	tree_entry_t e = {0};
	int r = snaptree_open_key(&t, c->cs, c->key, &c->prev.roots);
	while (r == 0 && (r = snaptree_next(&t, &e)) == 1) {
		r = e.content == TREE_CONTENT_BUNDLE ? use_add(&c->use, &e.bundle.digest, e.size) : 0;
		tree_entry_clear(&e);
	}
	tree_entry_clear(&e);
	snaptree_close(&t);
	return r == -ENOMEM ? r : 0;
}

/* Bytes of bundle `ref` its unchanged members will still use: what the
 * previous snapshot used of it, less this group's changed members. */
static int bundle_live(bctx_t *c, const group_t *g, const chunk_ref_t *ref, uint64_t *live)
{
	int r = c->use.loaded ? 0 : use_load(c);
	if (r < 0)
		return r;
	*live = 0;
	if (!c->use.cap)
		return 0;
	struct use *x = use_slot(&c->use, &ref->digest);
	uint64_t dead = 0;
	for (size_t i = 0; i < g->npend; i++) {
		const pending_t *p = &g->pend[i];
		if (p->small && !p->unchanged && p->prev_bundle &&
		    !digest_cmp(&p->pref.digest, &ref->digest))
			dead += p->psize;
	}
	*live = x->used && x->live > dead ? x->live - dead : 0;
	return 0;
}

/* Unchanged members keep pointing into their previous bundle, so a changed
 * neighbour costs only its own bytes, not a re-read and re-store of the
 * whole bundle.  A bundle that its files use less than half of is re-packed
 * instead, so the superseded bytes an old bundle keeps alive stay bounded
 * (about as many again as the live ones: the count is the previous
 * snapshot's, less this group's changes, so other groups' changes in this
 * backup are seen by the next one).  The decision is the bundle's, the same
 * in every group holding its members. */
static int keep_unchanged(bctx_t *c, group_t *g)
{
	int kept = 0;
	for (size_t i = 0; i < g->npend; i++) {
		pending_t *p = &g->pend[i];
		if (!p->small || !p->unchanged || !p->prev_bundle || p->judged)
			continue;
		/* Judged once per bundle, for all its members in the group. */
		uint64_t live;
		int r = bundle_live(c, g, &p->pref, &live);
		if (r < 0)
			return r;
		bool keep = 2 * live >= p->pref.plain_len;
		if (keep && (r = reuse_ref(c, &p->pref)) == -ENOMEM)
			return r;
		keep = keep && r == 0; /* gone or damaged: read the files again */
		for (size_t k = i; k < g->npend; k++) {
			pending_t *q = &g->pend[k];
			if (!q->small || !q->unchanged || !q->prev_bundle ||
			    digest_cmp(&q->pref.digest, &p->pref.digest))
				continue;
			q->judged = true;
			if (!keep)
				continue;
			q->kept = true;
			q->e.content = TREE_CONTENT_BUNDLE;
			q->e.bundle = q->pref;
			q->e.bundle_off = q->poff;
			c->bytes_reused += q->e.size;
			kept++;
		}
	}
	return kept;
}

/* Reads the group's small files that are not kept into `into`; a file
 * that cannot be read is left out.  Carried members are recorded in the
 * carry. */
static int pack_members(bctx_t *c, group_t *g, buf_t *into, bool carried)
{
	for (size_t i = 0; i < g->npend; i++) {
		pending_t *p = &g->pend[i];
		if (!p->small || p->kept)
			continue;
		int r = read_small(c, p, into);
		if (r < 0 && r != -ENOMEM) {
			p->dropped = true;
			c->files--; /* counted as recorded when visited */
			hardlink_lost(c, &p->e, r);
			r = skip_item(c, p->e.path, r);
		}
		if (r < 0)
			return r;
		if (p->dropped)
			continue;
		p->e.content = p->e.size ? TREE_CONTENT_BUNDLE : TREE_CONTENT_NONE;
		if (carried) {
			carry_t *k = &c->carry;
			if (array_reserve(&k->m, &k->cap, k->n + 1, sizeof(*k->m)) < 0)
				return -ENOMEM;
			k->m[k->n++] = (struct carried){g, (uint32_t)i};
		}
	}
	return 0;
}

/* Stores the carried bundle (on a worker, or right here without a pool);
 * its groups wait for it. */
static int carry_submit(bctx_t *c)
{
	if (!c->carry.n)
		return 0;
	carry_t *k = malloc(sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = c->carry;
	c->carry = (carry_t){0};
	if (!k->data.len || !c->pool) {
		chunk_ref_t ref = {0};
		int r = k->data.len ? store_chunk(c, k->data.data, k->data.len, &ref) : 0;
		if (r == 0)
			carry_set_ref(k, &ref);
		carry_release(k);
		int q = emit_ready(c);
		return r ? r : q;
	}
	chunkjob_t *j = calloc(1, sizeof(*j));
	if (!j) {
		carry_release(k);
		return -ENOMEM;
	}
	j->data = k->data.data;
	j->len = k->data.len;
	k->data = (buf_t){0};
	return queue_job(c, (struct inflight){j, NULL, 0, EXT_BUNDLE, k});
}

/* Packs the group's small files that need storing: a group with no member
 * kept in a previous bundle gets its own bundle, cut as a first backup
 * would cut it (so it deduplicates with one); the changed members of a
 * group that kept others join the carry. */
static int group_pack(bctx_t *c, group_t *g)
{
	int kept = keep_unchanged(c, g);
	if (kept < 0)
		return kept;
	if (!kept) {
		c->bundle.len = 0;
		/* Sized once from the stat sizes (a file that grew is read
		 * only up to them); the buffer goes to the worker with the job. */
		if (buf_reserve(&c->bundle, c->group_bytes) < 0)
			return -ENOMEM;
		int r = pack_members(c, g, &c->bundle, false);
		return r == 0 && c->bundle.len ? bundle_store(c, g) : r;
	}
	size_t before = c->carry.n;
	int r = pack_members(c, g, &c->carry.data, true);
	if (c->carry.n > before)
		g->outstanding++;
	return r;
}

static void group_free(group_t *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->npend; i++)
		tree_entry_clear(&g->pend[i].e);
	free(g->pend);
	free(g);
}

/* Writes the closed groups whose jobs are all done, oldest first. */
static int emit_ready(bctx_t *c)
{
	int r = 0;
	while (c->ghead && !c->ghead->outstanding) {
		group_t *g = c->ghead;
		c->ghead = g->next;
		if (!c->ghead)
			c->gtail = NULL;
		c->queued -= g->npend;
		for (size_t i = 0; r == 0 && i < g->npend; i++) {
			const tree_entry_t *e = &g->pend[i].e;
			const hardlink_t *h =
				e->type == TREE_HARDLINK ? hardlink_first(c, e) : NULL;
			if (g->pend[i].dropped)
				continue;
			if (h && h->lost) {
				c->files--; /* counted as recorded when visited */
				r = skip_later_name(c, e, h->lost);
			} else {
				r = emit(c, e);
			}
		}
		group_free(g);
		if (r < 0 && !c->err)
			c->err = store_chunk_err_during(c->st, r, "writing the tree");
		if (r < 0)
			return r;
	}
	return 0;
}

/* Closes the current group: its bundle is reused or packed and submitted,
 * then it waits in line to be emitted; a new group starts. */
static int group_flush(bctx_t *c)
{
	group_t *g = c->cur, *next = calloc(1, sizeof(*next));
	if (!next)
		return -ENOMEM;
	int r = 0;
	if (c->group_files) {
		if (group_reusable(c, g)) {
			for (size_t i = 0; i < g->npend; i++)
				if (g->pend[i].small) {
					g->pend[i].e.content = TREE_CONTENT_BUNDLE;
					g->pend[i].e.bundle = g->pend[i].pref;
					g->pend[i].e.bundle_off = g->pend[i].poff;
					c->bytes_reused += g->pend[i].e.size;
				}
		} else {
			r = group_pack(c, g);
		}
	}
	if (c->gtail)
		c->gtail->next = g;
	else
		c->ghead = g;
	c->gtail = g;
	c->queued += g->npend;
	c->cur = next;
	c->group_files = 0;
	c->group_bytes = 0;
	if (r < 0)
		return r;
	if (c->carry.data.len >= c->avg / 2 || (c->carry.n && c->queued > QUEUED_MAX))
		r = carry_submit(c);
	if (r == 0)
		r = emit_ready(c);
	while (r == 0 && c->qn && c->queued > QUEUED_MAX)
		r = complete_oldest(c);
	return r;
}

static pending_t *pending_push(bctx_t *c)
{
	group_t *g = c->cur;
	if (g->npend == g->cappend) {
		size_t n = g->cappend ? g->cappend * 2 : 64;
		pending_t *p = realloc(g->pend, n * sizeof(*p));
		if (!p)
			return NULL;
		g->pend = p;
		g->cappend = n;
	}
	pending_t *p = &g->pend[g->npend++];
	memset(p, 0, sizeof(*p));
	return p;
}

/* ---- one filesystem object ---- */

static int copy_xattrs(tree_entry_t *e, const tree_entry_t *prev)
{
	if (!prev->nxattr)
		return 0;
	tree_entry_t tmp = {0};
	tmp.nxattr = prev->nxattr;
	tmp.xattrs = prev->xattrs;
	tree_entry_t cp = {0};
	int r = tree_entry_copy(&cp, &tmp);
	if (r < 0)
		return r;
	e->xattrs = cp.xattrs;
	e->nxattr = cp.nxattr;
	cp.xattrs = NULL;
	cp.nxattr = 0;
	tree_entry_clear(&cp);
	return 0;
}

static int large_file(bctx_t *c, int dfd, const char *name, const struct stat *st,
		      pending_t *p, const tree_entry_t *prev)
{
	tree_entry_t *e = &p->e;
	if (prev && same_file(e, prev) && prev->content == TREE_CONTENT_EXTENTS) {
		int r = 0;
		for (uint32_t i = 0; r == 0 && i < prev->nextent; i++)
			if (prev->extents[i].kind == TREE_EXT_CHUNK)
				r = reuse_ref(c, &prev->extents[i].ref);
		if (r == 0) {
			e->content = TREE_CONTENT_EXTENTS;
			e->extents = malloc(prev->nextent * sizeof(*e->extents));
			if (!e->extents)
				return -ENOMEM;
			memcpy(e->extents, prev->extents, prev->nextent * sizeof(*e->extents));
			e->nextent = prev->nextent;
			c->bytes_reused += e->size;
			return 0;
		}
		/* A reused chunk is gone (or damaged and renamed): read again. */
	}
	opened_t seen = {0};
	int fd = source_open(c, dfd, name, e, &seen);
	if (fd < 0)
		return fd;
	e->content = TREE_CONTENT_EXTENTS;
	int r = xattrs_from_fd(p, fd);
	if (r == 0)
		r = read_large(c, fd, st, e);
	if (r == 0)
		torn_check(c, fd, &seen, e->path);
	close(fd);
	/* The entry's chunks complete later, in order; only a file left
	 * out must first see its jobs finish, as they point into it. */
	if (r < 0)
		complete_all(c);
	return r;
}

/* Reads the target of the symlink e (as the walk stat'ed it).  Another one
 * put on the name in between is another link: its target under the old
 * link's owner and times would be a symlink that never existed, so it is
 * left out as a replaced file is (the next snapshot records it).  The
 * inode number alone does not tell: one removed and made again (rm; ln -s)
 * gets the freed number back on ext4 at once.  Its times do: same_file,
 * the test that lets an unchanged link keep its previous target. */
static int read_link(int dfd, const char *name, tree_entry_t *e)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	tree_entry_t now = {0};
	tree_entry_from_stat(&now, &st);
	if (!same_file(&now, e) || now.dev != e->dev)
		return CAIRN_ECHANGED;
	target[n] = 0;
	e->link = strdup(target);
	return e->link ? 0 : -ENOMEM;
}

/* Records one object; regular files get their content here or in the
 * bundle group.  Returns <0 only for errors that stop the snapshot, and 1
 * when the object was left out (reported): a directory left out is not
 * walked, or its entries would be recorded with no parent to restore into.
 * Not inlined: its buffers (a symlink target, a whole path for the xattr
 * calls) would otherwise sit in every level of the recursive walk, whose
 * frame then limits how deep a tree can be backed up (see walk). */
static __attribute__((noinline)) int visit(bctx_t *c, int dfd, const char *name, const char *path, const struct stat *st)
{
	pending_t *p = pending_push(c);
	if (!p)
		return -ENOMEM;
	tree_entry_t *e = &p->e;
	tree_entry_from_stat(e, st);
	e->path = strdup(path);
	if (!e->path)
		return -ENOMEM;
	const tree_entry_t *prev = prev_find(c, path);
	bool unchanged = prev && same_file(e, prev);
	int r = 0;
	if (e->type == TREE_SYMLINK && unchanged && prev->link) {
		/* A symlink's target cannot change in place: a new one is a new
		 * inode, so the same inode and ctime mean the same target. */
		e->link = strdup(prev->link);
		r = e->link ? 0 : -ENOMEM;
	} else if (e->type == TREE_SYMLINK) {
		r = read_link(dfd, name, e);
	}
	/* Any object but a directory can have several names: a symlink, FIFO
	 * or device node too.  Later names point at the first. */
	bool linked = e->type != TREE_DIR && st->st_nlink > 1;
	const hardlink_t *first = linked ? hardlink_first(c, e) : NULL;
	/* A new or changed file with content is opened anyway: its xattrs
	 * are read from that fd then, which spares a walk of its whole path
	 * (one per file, a good part of an initial backup's kernel time). */
	p->xattrs_later = !unchanged && !first && e->type == TREE_REG && e->size;
	if (r == 0 && !p->xattrs_later)
		r = unchanged ? copy_xattrs(e, prev) : read_xattrs_at(c, path, e);
	/* A directory's xattrs are read by name: one renamed or exchanged
	 * onto it since the stat would lend its xattrs (its ACL) to this
	 * one's mode, owner and times.  walk_into's check comes only after
	 * the entry is recorded, so the name is checked here too. */
	if (r == 0 && !unchanged && e->type == TREE_DIR) {
		struct stat now;
		if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0)
			r = -errno;
		else if (now.st_ino != st->st_ino || now.st_dev != st->st_dev)
			r = CAIRN_ECHANGED;
	}
	/* Only a name read so far becomes the inode's first name: if this
	 * one failed, the next name takes its place. */
	if (r == 0 && first) {
		e->type = TREE_HARDLINK;
		free(e->link);
		e->link = strdup(first->path);
		r = e->link ? 0 : -ENOMEM;
		e->size = 0;
	} else if (r == 0 && linked) {
		r = hardlink_add(c, st, path);
	}
	if (r == 0 && e->type == TREE_REG && e->size) {
		if (e->size < c->cp.min_size) {
			p->small = true;
			p->unchanged = unchanged;
			if (prev && prev->content == TREE_CONTENT_BUNDLE) {
				p->prev_bundle = true;
				p->pref = prev->bundle;
				p->poff = prev->bundle_off;
				p->psize = prev->size;
			}
			c->group_files++;
			c->group_bytes += e->size;
		} else {
			r = large_file(c, dfd, name, st, p, prev);
		}
	}
	if (c->err)
		return c->err;
	if (r < 0 && r != -ENOMEM) {
		/* The object could not be read: leave it out. */
		hardlink_lost(c, e, r);
		tree_entry_clear(e);
		c->cur->npend--;
		if (p->small) {
			c->group_files--;
			c->group_bytes -= st->st_size;
		}
		/* A directory goes with its whole subtree (see walk): the
		 * report says so, or one line would hide any number of files. */
		if (S_ISDIR(st->st_mode) && !c->opts->strict) {
			char obj[PATH_MAX + 64];
			snprintf(obj, sizeof(obj), "%s (a directory, left out with everything below it)", path);
			r = skip_dir(c, obj, r);
		} else {
			r = skip_item(c, path, r);
		}
		return r < 0 ? r : 1;
	}
	if (r < 0)
		return r;
	c->files++; /* recorded (one left out counts as skipped instead) */
	/* The file name, not the whole path: the same files backed up under
	 * another root (a child dataset, another host) cut into the same
	 * bundles and deduplicate. */
	uint64_t h = fnv1a64(name, strlen(name));
	bool boundary = p->small && ((c->group_bytes >= c->avg / 4 && !(h & BUNDLE_HASH_MASK)) ||
				     c->group_bytes >= c->avg);
	if (boundary || c->cur->npend >= PENDING_MAX)
		return group_flush(c);
	progress(c, false);
	return 0;
}

static int walk(bctx_t *c, sa_dir_t *d, const char *dirpath);

/* dir/name into buf (just name at the root), truncated to fit; returns
 * the length the whole path needs, as snprintf would.  The walk builds one
 * per object, so it avoids snprintf's format parsing. */
static size_t path_join(char *buf, size_t size, const char *dir, size_t dirlen, const char *name)
{
	size_t namelen = strlen(name), need = dirlen + (dirlen ? 1 : 0) + namelen;
	if (need >= size) {
		snprintf(buf, size, "%s%s%s", dir, dirlen ? "/" : "", name);
		return need;
	}
	memcpy(buf, dir, dirlen);
	size_t at = dirlen;
	if (dirlen)
		buf[at++] = '/';
	memcpy(buf + at, name, namelen + 1);
	return need;
}

/* Enters subdirectory i of d (stat'ed as st); one that cannot be opened or
 * listed, or is another directory by now, is left out with a warning,
 * like any unreadable object. */
static int walk_into(bctx_t *c, sa_dir_t *d, size_t i, const char *path, const struct stat *st)
{
	sa_dir_t *sub;
	int r = sa_enter(c->sa, d, i, &sub);
	if (r < 0)
		return r == -ENOMEM ? r : skip_dir(c, path, r);
	r = same_dir(c, sub->dfd, st);
	if (r < 0) {
		sa_leave(c->sa, sub);
		return skip_dir(c, path, r);
	}
	r = walk(c, sub, path);
	sa_leave(c->sa, sub);
	return r;
}

/* Reads the directory's .cairnignore; a bad line is reported, not fatal.
 * Not inlined into walk, for the same reason as visit. */
static __attribute__((noinline)) int exclude_walk_enter(bctx_t *c, int dfd, const char *dirpath, const dirlist_t *l)
{
	unsigned bad_line;
	char why[512];
	int r = exclude_enter(c->excl, dfd, dirpath, l, &bad_line, why, sizeof(why));
	if (r == 0 && bad_line && c->opts->warn) {
		char obj[PATH_MAX + 600];
		snprintf(obj, sizeof(obj), "%s/%s%s.cairnignore: line %u: %s", c->root, dirpath,
			 *dirpath ? "/" : "", bad_line, why);
		c->opts->warn(obj, CAIRN_EBADPROP, c->opts->arg);
	}
	return r;
}

/* Walks the listed directory d, whose entries' paths start with dirpath.
 * It recurses once per level, and a path of PATH_MAX bytes can be 2,048
 * levels deep: the frame must stay small (the path buffer is on the heap),
 * or a deep tree overflows the stack (at about 600 levels it did). */
static int walk(bctx_t *c, sa_dir_t *d, const char *dirpath)
{
	char *path = malloc(PATH_MAX);
	if (!path)
		return -ENOMEM;
	int r = exclude_walk_enter(c, d->dfd, dirpath, &d->list);
	if (r < 0) {
		free(path);
		return r;
	}
	/* The helper may read subdirectories ahead only where no exclude rule
	 * could leave them out: it must not open what the walk skips. */
	if (!exclude_any(c->excl))
		sa_allow_ahead(c->sa, d);
	char *const *names = d->list.names;
	size_t dirlen = strlen(dirpath);
	for (size_t i = 0; i < d->list.n && r == 0; i++) {
		size_t len = path_join(path, PATH_MAX, dirpath, dirlen, names[i]);
		if (len >= PATH_MAX || len > TREE_MAX_PATH) {
			r = skip_item(c, path, -ENAMETOOLONG);
			continue;
		}
		struct stat st;
		int e = sa_dir_stat(d, i, &st);
		if (e < 0) {
			r = skip_item(c, path, e);
			continue;
		}
		if (exclude_match(c->excl, path, names[i], S_ISDIR(st.st_mode))) {
			c->excluded++;
			continue;
		}
		r = visit(c, d->dfd, names[i], path, &st);
		/* Stay on one filesystem, as a ZFS dataset would. */
		if (r == 0 && S_ISDIR(st.st_mode) && st.st_dev == c->rootdev)
			r = walk_into(c, d, i, path, &st);
		else if (r > 0)
			r = 0; /* left out, and not entered */
	}
	exclude_leave(c->excl);
	free(path);
	return r;
}

/* Walks the source's root directory fd.  An incremental walk is bound by
 * its system calls, so a helper thread lists and stats ahead of it; a
 * first backup is bound by reading files and leaves that core to the pool. */
static int walk_root(bctx_t *c, int fd)
{
	if (c->prev.roots.len && statahead_start(c->rootdev, &c->sa) < 0)
		c->sa = NULL;
	sa_dir_t *d;
	int r = sa_root(c->sa, fd, &d);
	if (r < 0) {
		r = r == -ENOMEM ? r : skip_dir(c, "", r);
	} else {
		r = walk(c, d, "");
		sa_leave(c->sa, d);
	}
	statahead_stop(c->sa);
	c->sa = NULL;
	return r;
}

/* ---- one dataset ---- */

typedef struct snapjob {
	ds_row_t ds;
	char *snapname;
	buf_t tree_roots, index_roots;
	uint64_t referenced, logical;
} snapjob_t;

/* The previous snapshot only saves reading: if it is gone (destroyed by
 * another process a moment ago) or unreadable, the backup reads files. */
static int open_prev(bctx_t *c, int64_t dsid)
{
	snap_row_t prev = {0};
	buf_t tree = {0}, idx = {0};
	int r = catalog_begin_read(c->st->cat);
	if (r == 0)
		r = catalog_snap_prev(c->st->cat, dsid, UINT64_MAX, &prev);
	if (r == 0)
		r = catalog_snap_roots(c->st->cat, prev.id, &tree, &idx);
	catalog_end_read(c->st->cat);
	snap_row_clear(&prev);
	buf_free(&idx);
	if (r == 0)
		r = snaptree_open_key(&c->prev.t, c->cs, c->key, &tree);
	if (r < 0) {
		buf_free(&tree);
		return r == -ENOENT || r == CAIRN_ECORRUPT ? 0
			: store_err(c->st, r, "catalog: %s", catalog_errmsg(c->st->cat));
	}
	c->prev.open = true;
	/* The cursor reads tree chunks lazily from this copy of the roots. */
	c->prev.t.m.refs = tree.data;
	c->prev.roots = tree;
	return 0;
}

static void ctx_free(bctx_t *c)
{
	for (size_t i = 0; i < c->qn; i++) {
		struct inflight *f = &c->q[c->qhead + i];
		pool_wait(c->pool, f->job);
		free(f->job);
		if (f->carry)
			carry_release(f->carry);
	}
	free(c->q);
	pool_free(c->pool);
	while (c->ghead) {
		group_t *g = c->ghead;
		c->ghead = g->next;
		group_free(g);
	}
	group_free(c->cur);
	if (c->prev.open) {
		free((void *)c->prev.t.m.refs);
		tree_entry_clear(&c->prev.cur);
		snaptree_close(&c->prev.t);
	}
	for (size_t i = 0; i < c->caplinks; i++)
		free(c->links[i].path);
	free(c->links);
	refset_free(&c->set);
	cdcw_free(&c->tree);
	crypt_keys_free(c->key);
	buf_free(&c->io);
	buf_free(&c->bundle);
	free(c->carry.m);
	buf_free(&c->carry.data);
	free(c->use.slot);
	free(c->root);
	exclude_free(c->excl);
}

static int backup_source(bctx_t *c, snapjob_t *j)
{
	char *src = NULL;
	int r = dataset_prop(c->st, &j->ds, "source", &src, NULL);
	if (r < 0)
		return r;
	if (!strcmp(src, "none")) {
		free(src);
		/* A container dataset: an empty tree, as a ZFS snapshot of an
		 * empty filesystem would be. */
		return 0;
	}
	c->root = src;
	if (j->ds.type == CAIRN_TYPE_FILESYSTEM && (r = exclude_open(c->st, &j->ds, &c->excl)) < 0)
		return r;
	/* O_NONBLOCK: a volume whose source names a FIFO is refused below,
	 * not waited on; reads of files and block devices ignore it. */
	int fd = j->ds.type == CAIRN_TYPE_FILESYSTEM ? dirlist_open(AT_FDCWD, src)
						     : open(src, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	c->rootfd = fd;
	/* The walk never follows a symlink, the source itself included: say
	 * so, rather than "Not a directory" for a link to one. */
	struct stat lst;
	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP) && lstat(src, &lst) == 0 &&
	    S_ISLNK(lst.st_mode))
		return store_err(c->st, CAIRN_ENOSOURCE,
				 "%s: source %s is a symlink (set source to the path it points to)",
				 j->ds.name, src);
	if (fd < 0)
		return store_err(c->st, CAIRN_ENOSOURCE, "%s: source %s: %s", j->ds.name, src,
				 strerror(errno));
	struct stat st;
	fstat(fd, &st);
	c->rootdev = st.st_dev;
	racy_since(c, fd, &st); /* before the walk's first stat */
	pending_t *p;
	if (j->ds.type == CAIRN_TYPE_VOLUME) {
		if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
			close(fd);
			return store_err(c->st, CAIRN_ENOSOURCE,
					 "%s: source %s is not a file or block device", j->ds.name,
					 src);
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		if (!(p = pending_push(c)))
			r = -ENOMEM;
		else {
			tree_entry_from_stat(&p->e, &st);
			p->e.type = TREE_REG;
			p->e.path = strdup("");
			p->e.content = TREE_CONTENT_EXTENTS;
			r = p->e.path ? read_volume(c, fd, &p->e) : -ENOMEM;
		}
		c->files = 1;
	} else if (!(p = pending_push(c))) {
		r = -ENOMEM;
	} else {
		tree_entry_from_stat(&p->e, &st);
		p->e.path = strdup("");
		/* The root cannot be left out: its xattrs unread fail the
		 * snapshot, naming the source. */
		r = read_xattrs(&(xsrc_t){.path = src}, &p->e);
		if (r < 0 && r != -ENOMEM)
			store_err(c->st, r, "%s: source %s: reading its xattrs: %s", j->ds.name, src,
				  cairn_strerror(r));
		if (r == 0)
			r = walk_root(c, fd);
	}
	/* The last group, then every job still running: all of the tree is
	 * written once these return. */
	if (r == 0)
		r = group_flush(c);
	if (r == 0)
		r = carry_submit(c);
	if (r == 0)
		r = complete_all(c);
	if (r == 0 && c->err)
		r = c->err;
	close(fd);
	if (r < 0 && !*c->st->errdetail)
		store_err(c->st, r, "%s: %s", j->ds.name, cairn_strerror(r));
	return r;
}

/* An encrypted dataset: keyed ids, encrypted blobs, and the root's own
 * gear table for content and tree stream alike.  The index stream stays
 * plain (index_write), so GC, holds and verify need no key. */
static int backup_crypt_setup(bctx_t *c, const ds_row_t *ds)
{
	int r = encroot_keys(c->st, ds, &c->key);
	if (r < 0 || !c->key)
		return r;
	chunker_params_seed(&c->cp, c->key->gear);
	chunker_params_seed(&c->mp, c->key->gear);
	if (c->pool)
		pool_set_key(c->pool, c->key);
	return 0;
}

static int backup_one(cairn_store *st, snapjob_t *j, cairn_snapshot_opts *opts)
{
	bctx_t c = {.st = st, .cs = st->cs, .opts = opts, .dsname = j->ds.name,
		    .pool = pool_new(st->cs, opts->threads),
		    .cur = calloc(1, sizeof(group_t))};
	int r = c.cur ? dataset_compression(st, &j->ds, &c.level) : -ENOMEM;
	if (r == 0)
		r = dataset_chunksize(st, &j->ds, &c.avg);
	if (r == 0 && chunker_params_init(&c.cp, c.avg) < 0)
		r = store_err(st, CAIRN_EBADPROP, "%s: bad chunksize %u", j->ds.name, c.avg);
	chunker_params_init(&c.mp, META_CHUNK_AVG);
	if (r == 0)
		r = backup_crypt_setup(&c, &j->ds);
	cdcw_init(&c.tree, st->cs, &c.mp, c.level ? c.level : 0, &c.set);
	c.tree.key = c.key;
	buf_t hdr = {0};
	if (r == 0)
		r = tree_write_header(&hdr);
	if (r == 0)
		r = cdcw_write(&c.tree, hdr.data, hdr.len);
	buf_free(&hdr);
	if (r == 0 && j->ds.type == CAIRN_TYPE_FILESYSTEM)
		r = open_prev(&c, j->ds.id);
	if (r == 0)
		r = backup_source(&c, j);
	if (r == 0 && (r = cdcw_finish(&c.tree)) < 0)
		store_chunk_err_during(st, r, "writing the tree");
	if (r == 0)
		r = buf_append(&j->tree_roots, c.tree.refs.data, c.tree.refs.len);
	if (r == 0 &&
	    (r = index_write(st->cs, &c.set, &j->index_roots, &j->referenced, &j->logical)) < 0)
		store_chunk_err_during(st, r, "writing the chunk index");
	progress(&c, true);
	opts->files += c.files;
	opts->bytes_read += c.bytes_read;
	opts->bytes_reused += c.bytes_reused;
	opts->skipped += c.skipped;
	opts->skipped_dirs += c.skipped_dirs;
	opts->torn += c.torn;
	opts->excluded += c.excluded;
	ctx_free(&c);
	return r;
}

/* ---- commit ---- */

static int commit_all(cairn_store *st, snapjob_t *jobs, size_t n, cairn_snapshot_opts *opts)
{
	uint64_t txg;
	int r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	int64_t now = time(NULL);
	for (size_t i = 0; r == 0 && i < n; i++) {
		snapjob_t *j = &jobs[i];
		snapnew_t sn = {.ds = j->ds.id, .dsname = j->ds.name, .name = j->snapname,
				.guid = random_u64(), .creation = now, .tree = &j->tree_roots,
				.idx = &j->index_roots, .referenced = j->referenced,
				.logical = j->logical, .props = opts->props, .nprops = opts->nprops,
				.warn = opts->warn, .warn_arg = opts->arg};
		r = snapshot_insert(st, &sn, txg);
	}
	r = store_txn_end(st, r);
	return r;
}

/* ---- the snapshot list ---- */

static int job_add(cairn_store *st, snapjob_t **jobs, size_t *n, size_t *cap, int64_t dsid,
		   const char *snap)
{
	for (size_t i = 0; i < *n; i++)
		if ((*jobs)[i].ds.id == dsid)
			return store_err(st, -EINVAL,
					 "%s@%s: one command cannot take two snapshots of a dataset",
					 (*jobs)[i].ds.name, snap);
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		snapjob_t *p = realloc(*jobs, *cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*jobs = p;
	}
	snapjob_t *j = &(*jobs)[*n];
	memset(j, 0, sizeof(*j));
	int r = catalog_ds_by_id(st->cat, dsid, &j->ds);
	if (r < 0)
		return store_err(st, r, "catalog: %s", catalog_errmsg(st->cat));
	j->snapname = strdup(snap);
	(*n)++;
	if (!j->snapname)
		return -ENOMEM;
	r = derived_name_check(st, j->ds.name, '@', snap);
	if (r < 0)
		return r;
	snap_row_t exist = {0};
	if (catalog_snap_lookup(st->cat, dsid, snap, &exist) == 0) {
		snap_row_clear(&exist);
		return store_err(st, -EEXIST, "%s@%s: snapshot already exists", j->ds.name, snap);
	}
	return 0;
}

static int plan(cairn_store *st, const char *const *names, size_t n, bool recursive,
		snapjob_t **jobs, size_t *njobs)
{
	size_t cap = 0;
	for (size_t i = 0; i < n; i++) {
		ds_row_t ds = {0};
		const char *snap;
		int r = snapshot_split(st, names[i], &ds, &snap);
		if (r == 0 && !*snap)
			r = store_err(st, CAIRN_EBADNAME, "%s: empty snapshot name", names[i]);
		int64_t *ids = NULL;
		size_t nids = 0;
		if (r == 0 && recursive)
			r = catalog_ds_subtree(st->cat, ds.id, &ids, &nids);
		if (r == 0 && !recursive)
			r = job_add(st, jobs, njobs, &cap, ds.id, snap);
		for (size_t k = 0; r == 0 && k < nids; k++)
			r = job_add(st, jobs, njobs, &cap, ids[k], snap);
		free(ids);
		ds_row_clear(&ds);
		if (r < 0)
			return r;
	}
	return 0;
}

int cairn_snapshot_create(cairn_store *st, const char *const *names, size_t n,
			  cairn_snapshot_opts *opts)
{
	int r = STORE_ENTER(st);
	if (r == 0)
		r = store_check_names(st, __func__, "names", names, n);
	cairn_snapshot_opts none = {0};
	if (!opts)
		opts = &none;
	if (r == 0)
		r = store_check_props(st, __func__, "opts->props", opts->props, opts->nprops);
	if (r < 0)
		return r;
	for (size_t i = 0; i < opts->nprops; i++)
		if (!strchr(opts->props[i].name, ':'))
			return store_err(st, CAIRN_EBADPROP,
					 "%s: only user properties (module:name) can be set on "
					 "snapshots",
					 opts->props[i].name);
	snapjob_t *jobs = NULL;
	size_t njobs = 0;
	r = plan(st, names, n, opts->recursive, &jobs, &njobs);
	uint64_t chunks0 = chunkstore_new_chunks(st->cs), bytes0 = chunkstore_new_bytes(st->cs);
	/* Registered before the first chunk is written or touched: GC. */
	bool registered = false;
	if (r == 0) {
		/* An earlier operation on this handle that failed in a batch
		 * flush does not make this one fail. */
		chunkstore_reset_error(st->cs);
		r = writer_register(st);
		if (r < 0)
			store_err(st, r, "registering as a writer: %s", strerror(-r));
		registered = r == 0;
	}
	for (size_t i = 0; r == 0 && i < njobs; i++)
		r = backup_one(st, &jobs[i], opts);
	/* Data first, durably; only then may the catalog point at it. */
	if (r == 0) {
		r = chunkstore_flush(st->cs);
		if (r < 0)
			store_chunk_err(st, r, NULL);
	}
	if (r == 0)
		r = commit_all(st, jobs, njobs, opts);
	if (registered)
		writer_unregister(st);
	opts->chunks_new += chunkstore_new_chunks(st->cs) - chunks0;
	opts->stored_new += chunkstore_new_bytes(st->cs) - bytes0;
	for (size_t i = 0; i < njobs; i++) {
		ds_row_clear(&jobs[i].ds);
		free(jobs[i].snapname);
		buf_free(&jobs[i].tree_roots);
		buf_free(&jobs[i].index_roots);
	}
	free(jobs);
	if (r == 0 && (opts->skipped || opts->skipped_dirs))
		return CAIRN_EPARTIAL;
	return r;
}
