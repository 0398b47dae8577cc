/* verify.c - re-reading every chunk some snapshots reference.
 *
 * 1. The chunk set: every target snapshot's tree and index roots and the
 *    records of its index stream (its tree stream where the index cannot
 *    be read), deduplicated in the bounded range set of gc.h: the digest
 *    space is taken one range of directories at a time, so memory is set
 *    by the gc_cache_capacity and gc_batch settings, not by the store.
 * 2. Each range's chunks are read once, sorted by inode number (read from
 *    the directories they live in) or by digest, by several threads that
 *    take consecutive blocks of the sorted list.  chunkstore_get checks
 *    the blob header, its checksum and the SHA-256 of the plain bytes.
 * 3. A damaged chunk (corrupt, or an I/O error) is renamed <digest>.bad:
 *    the next backup or receive of the same data finds the chunk missing
 *    and writes it anew (chunkstore_put only skips names that exist).  On
 *    a remote store an I/O error sets nothing aside (it is the bucket's or
 *    the network's), and an object the bucket lacks loses its marker.  A
 *    read the bucket refuses (HTTP 403: a wrong or read-less credential)
 *    says nothing about any chunk: the verify stops there and fails with
 *    that refusal, reporting no chunk bad and changing nothing.  Unless
 *    the credential still reads an object it read before: then the 403 is
 *    that object's (S3 answers a missing key so to a credential without
 *    ListBucket), reported as a bad chunk, missing or unreadable, whose
 *    marker stays.
 * 4. Only for the bad chunks: which target snapshots use them (a second
 *    pass over their indexes) and which files (their tree streams).
 * 5. lastverified = the verify's start time on every target snapshot all
 *    of whose chunks were good, in one transaction at the end.
 */
#include "maint/gc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/dataset.h"
#include "crypt/encroot.h"
#include "data/snapio.h"
#include "store/backend.h"

#define PROGRESS_NS 200000000LL
#define BLOCK 16
#define MAX_FILES 3       /* files named per (chunk, snapshot) */
#define MAX_SNAPS_NAMED 20 /* snapshots named per bad chunk */

typedef struct vitem {
	digest_t d;
	uint64_t ino;
	uint32_t stored_len;
} vitem_t;

typedef struct vbad {
	digest_t d;
	int err;
	bool renamed;
	bool unmarked; /* a remote store's marker of a missing object, removed */
	bool gone;     /* missing, and no target snapshot needs it any more */
	/* The bucket answered 403 for this object alone (it read others):
	 * missing, or not readable with this credential; marker kept. */
	bool forbidden;
	bool nomarker; /* forbidden, and it had no marker to keep */
	size_t nusers;
} vbad_t;

/* One (bad chunk, snapshot) pair for the report. */
typedef struct vuse {
	size_t bad;
	int64_t snap;
	const char *what; /* "tree stream", "index stream", NULL = content */
	char *files;      /* "a, b, +3 more" */
	size_t nfiles;
} vuse_t;

typedef struct vctx {
	cairn_store *st;
	cairn_verify_opts *o;
	int chunkfd;
	int64_t *ids; /* targets, sorted; NULL = every snapshot */
	size_t nids;
	int64_t *seen; /* snapshots walked (first range), for lastverified */
	size_t nseen, capseen;
	int64_t *broken; /* snapshots whose chunk lists could not be read */
	size_t nbroken, capbroken;
	vbad_t *bad;
	size_t nbad, capbad;
	int lost; /* -ENOMEM: a bad chunk could not be recorded */
	pthread_mutex_t lock;
	gc_range_t *range;
	gc_source_t *src;
	bool first, sorted;
	int fatal;
	/* The bucket refused a read (-EACCES) and refuses reads of objects it
	 * answered before: every chunk would be refused alike, so no chunk is
	 * judged; refused_what names what it refused (the chunk, and the
	 * stream whose it is when known), refused_msg its request.
	 * unchecked: the check whether the credential reads other objects
	 * failed otherwise (its error; unchecked_msg its request), so the
	 * refusal could be blamed on neither the object nor the credential. */
	int refused;
	char refused_what[400];
	char refused_msg[512];
	int unchecked;
	char unchecked_msg[512];
	/* The refusal was no refusal: the bucket does not exist (a deleted
	 * or misnamed one).  Every chunk would fail alike. */
	bool no_bucket;
	/* A chunk read from the bucket in this verify (have_good): what a
	 * 403 for another object is checked against (credential_reads). */
	bool have_good;
	digest_t good;
	atomic_bool stop;
	/* reading */
	vitem_t *items;
	size_t nitems;
	atomic_size_t next;
	atomic_uint_fast64_t chunks, bytes;
	uint64_t total_bytes;
	int64_t t0, last;
	encroot_keyset_t keys; /* encryption roots' keys that are available */
} vctx_t;

static int push_id(int64_t **v, size_t *n, size_t *cap, int64_t id)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		int64_t *p = realloc(*v, c * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = c;
	}
	(*v)[(*n)++] = id;
	return 0;
}

static int id_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static bool id_in(const int64_t *v, size_t n, int64_t id)
{
	return n && bsearch(&id, v, n, sizeof(*v), id_cmp);
}

static void sort_ids(int64_t *v, size_t *n)
{
	if (!*n)
		return;
	qsort(v, *n, sizeof(*v), id_cmp);
	size_t k = 1;
	for (size_t i = 1; i < *n; i++)
		if (v[i] != v[k - 1])
			v[k++] = v[i];
	*n = k;
}

/* ---- targets ---- */

static int dataset_snapshots(vctx_t *c, int64_t ds, size_t *cap)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "SELECT id FROM snapshot WHERE dataset = ?1 ORDER BY createtxg", -1, &q,
			       NULL) != SQLITE_OK)
		return store_err(c->st, -EIO, "catalog: %s", catalog_errmsg(c->st->cat));
	sqlite3_bind_int64(q, 1, ds);
	int rc, r = 0;
	while (r == 0 && (rc = sqlite3_step(q)) == SQLITE_ROW)
		r = push_id(&c->ids, &c->nids, cap, sqlite3_column_int64(q, 0));
	sqlite3_finalize(q);
	return r;
}

static int one_snapshot(vctx_t *c, const char *name, size_t *cap)
{
	ds_row_t ds = {0};
	snap_row_t row = {0};
	const char *sn;
	int r = snapshot_split(c->st, name, &ds, &sn);
	if (r == 0) {
		r = catalog_snap_lookup(c->st->cat, ds.id, sn, &row);
		if (r == -ENOENT)
			store_err(c->st, r, "%s: snapshot does not exist", name);
		else if (r < 0)
			store_err(c->st, r, "%s: %s", name, catalog_errmsg(c->st->cat));
	}
	if (r == 0)
		r = push_id(&c->ids, &c->nids, cap, row.id);
	snap_row_clear(&row);
	ds_row_clear(&ds);
	return r;
}

/* A bookmark keeps a snapshot's place for incremental sends but none of
 * its chunks: there is nothing to read.  Said so plainly, rather than the
 * dataset-name check's "invalid character '#'" it would otherwise hit. */
static int bookmark_target(vctx_t *c, const char *t)
{
	char why[256];
	if (cairn_name_check(t, true, why, sizeof(why)) < 0)
		return store_err(c->st, CAIRN_EBADNAME, "%s: %s", t, why);
	return store_err(c->st, -EINVAL,
			 "%s: is a bookmark, which holds no data to verify; name a snapshot or "
			 "a dataset",
			 t);
}

static int resolve_targets(vctx_t *c)
{
	size_t cap = 0;
	int r = catalog_begin_read(c->st->cat);
	if (r < 0)
		return store_err(c->st, r, "catalog: %s", catalog_errmsg(c->st->cat));
	for (size_t i = 0; r == 0 && i < c->o->ntargets; i++) {
		const char *t = c->o->targets[i];
		if (strchr(t, '#')) {
			r = bookmark_target(c, t);
			continue;
		}
		if (strchr(t, '@')) {
			if (!c->o->recursive) {
				r = one_snapshot(c, t, &cap);
				continue;
			}
			char **names = NULL;
			size_t n = 0;
			r = cairn_snapshot_expand(c->st, t, &names, &n);
			for (size_t k = 0; k < n; k++) {
				if (r == 0)
					r = one_snapshot(c, names[k], &cap);
				free(names[k]);
			}
			free(names);
			continue;
		}
		ds_row_t ds = {0};
		r = dataset_lookup(c->st, t, &ds);
		int64_t *sub = NULL;
		size_t nsub = 0;
		if (r == 0 && c->o->recursive)
			r = catalog_ds_subtree(c->st->cat, ds.id, &sub, &nsub);
		if (r == 0 && !c->o->recursive)
			r = dataset_snapshots(c, ds.id, &cap);
		for (size_t k = 0; r == 0 && k < nsub; k++)
			r = dataset_snapshots(c, sub[k], &cap);
		free(sub);
		ds_row_clear(&ds);
	}
	catalog_end_read(c->st->cat);
	sort_ids(c->ids, &c->nids);
	return r;
}

/* ---- collecting the chunk set ---- */

static int collect_refs(const chunk_ref_t *refs, size_t n, void *arg)
{
	vctx_t *c = arg;
	int r = gc_range_add(c->range, refs, n);
	if (r < 0)
		c->fatal = r;
	return r < 0 ? r : (c->sorted ? r : 0);
}

static int collect_roots(vctx_t *c, const buf_t *roots)
{
	chunk_ref_t v[64];
	size_t n = roots->len / CHUNK_REF_WIRE;
	for (size_t i = 0; i < n;) {
		size_t k = 0;
		for (; k < ARRAY_SIZE(v) && i < n; k++, i++)
			chunk_ref_unpack(roots->data + i * CHUNK_REF_WIRE, &v[k]);
		int r = collect_refs(v, k, c);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Whether err, the result of this thread's last chunk read, is the
 * bucket refusing access rather than anything about the chunk: -EACCES
 * that the backend answered (HTTP 403).  The same errno from a local file
 * of a bucket store (a marker holding a blob that this process may not
 * open) is about that file: reported as the chunk's, like a local store's. */
static bool access_refused(const vctx_t *c, int err)
{
	return err == -EACCES && chunkstore_read_failed_remotely(c->st->cs);
}

/* Whether err, the result of this thread's last chunk read, is the
 * bucket not existing: the store out of reach, which no chunk is to be
 * blamed for (each would be reported bad, one line each). */
static bool bucket_missing(const vctx_t *c, int err)
{
	return err < 0 && chunkstore_read_failed_remotely(c->st->cs) &&
	       backend_thread_no_bucket();
}

/* Names a refused read for the error: the chunk d (NULL: not known) and
 * the stream of the snapshot being collected it belongs to (stream: NULL
 * for a content chunk).  A walk that cannot say which chunk it failed on
 * is named by its stream, never by a made-up (all-zero) digest. */
static void refused_what(const vctx_t *c, const digest_t *d, const char *stream, char *out,
			 size_t len)
{
	char hex[DIGEST_HEX_LEN + 1];
	if (d)
		digest_to_hex(d, hex);
	if (d && stream)
		snprintf(out, len, "chunk %s (%s of %s)", hex, stream, c->src->name);
	else if (d)
		snprintf(out, len, "chunk %s", hex);
	else
		snprintf(out, len, "the %s of %s (which of its chunks is not known)", stream,
			 c->src->name);
}

/* Notes the first refused read (what: see refused_what; msg: its request
 * and answer; check, the error of the check after it when that was no
 * answer, why its request), and stops the readers. */
static void note_refused(vctx_t *c, const char *what, int err, const char *msg, int check,
			 const char *why);

/* Notes that the bucket does not exist (bucket_missing), reading what
 * (see refused_what), and stops the readers. */
static void note_no_bucket(vctx_t *c, const char *what, int err)
{
	char msg[512] = "";
	chunkstore_remote_error(c->st->cs, msg, sizeof(msg));
	pthread_mutex_lock(&c->lock);
	c->no_bucket |= !c->refused;
	pthread_mutex_unlock(&c->lock);
	note_refused(c, what, err, msg, 0, "");
}

static void note_refused(vctx_t *c, const char *what, int err, const char *msg, int check,
			 const char *why)
{
	pthread_mutex_lock(&c->lock);
	if (!c->refused) {
		c->refused = err;
		snprintf(c->refused_what, sizeof(c->refused_what), "%s", what);
		snprintf(c->refused_msg, sizeof(c->refused_msg), "%s", msg);
		c->unchecked = check == -EACCES ? 0 : check;
		snprintf(c->unchecked_msg, sizeof(c->unchecked_msg), "%s", why);
	}
	pthread_mutex_unlock(&c->lock);
	atomic_store(&c->stop, true);
}

/* The error of a verify that a refused read ended, with the request and
 * its status. */
static int refused_err(vctx_t *c)
{
	char later[512];
	/* What failed since (credential_reads' own request) is not the news. */
	chunkstore_remote_error(c->st->cs, later, sizeof(later));
	if (c->no_bucket)
		return store_err(c->st, c->refused,
				 "%s.  No chunk was judged, nothing was changed (reading %s)",
				 c->refused_msg, c->refused_what);
	/* A check that failed otherwise (503s past the budget, the bucket
	 * out of reach) says nothing about the credential. */
	if (c->unchecked)
		return store_err(c->st, c->unchecked,
				 "the bucket refused to read %s (bucket: %s), and verify "
				 "could not check whether the credential reads other objects: "
				 "%s.  No chunk was judged, nothing was changed",
				 c->refused_what, c->refused_msg, c->unchecked_msg);
	return store_err(c->st, c->refused,
			 "the bucket refused to read %s: is the credential wrong, or "
			 "without read access?  No chunk was judged, nothing was changed "
			 "(bucket: %s)",
			 c->refused_what, c->refused_msg);
}

/* Notes d for credential_reads. */
static void note_object(vctx_t *c, const digest_t *d)
{
	pthread_mutex_lock(&c->lock);
	if (!c->have_good) {
		c->good = *d;
		c->have_good = true;
	}
	pthread_mutex_unlock(&c->lock);
}

/* Whether a chunk read (from_bucket: its blob came from the bucket, not
 * from its local file) may be what credential_reads asks the bucket for.
 * On S3 only one the bucket answered with: one kept whole locally may
 * have no object, and S3 answers 403 for a missing key to a credential
 * without ListBucket, which would blame the credential (t1531).  A local
 * directory bucket answers a missing object ENOENT, never a refusal, so
 * there any chunk read will do, and must: the bucket's files may be the
 * ones this user may not read, while the prefix's claim is not (t1516). */
static bool probe_worthy(const vctx_t *c, bool from_bucket)
{
	backend_t *be = chunkstore_backend(c->st->cs);
	return be && (from_bucket || strcmp(backend_kind(be), "s3"));
}

/* Notes d, just read by this thread, for credential_reads (probe_worthy). */
static void note_good(vctx_t *c, const digest_t *d)
{
	if (probe_worthy(c, chunkstore_read_from_bucket(c->st->cs)))
		note_object(c, d);
}

/* Whether d's local file is a bare marker (no data blocks: its blob can
 * only have come from the bucket; verify bypasses the chunk cache).  For
 * a chunk read in a walk, whose reads note_good does not see one by one. */
static bool only_in_bucket(const vctx_t *c, const digest_t *d)
{
	char hex[DIGEST_HEX_LEN + 1], name[70];
	digest_to_hex(d, hex);
	snprintf(name, sizeof(name), "%.4s/%s", hex, hex);
	struct stat st;
	return chunkstore_backend(c->st->cs) &&
	       fstatat(c->chunkfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       st.st_blocks == 0;
}

/* After a 403 for one object: whether this credential still reads the
 * bucket, asked with an object it read before (else the prefix's claim,
 * meta/store-id).  S3 answers 403, not 404, for a missing key to a
 * credential without the ListBucket right; so a 403 for one object
 * while others read is that object's: missing, or not readable with this
 * credential.  A 404 here is the bucket answering this credential too
 * (only one that may list and read gets a NoSuchKey): that object went
 * since (a gc), or the prefix has no claim (a store made before claims).
 * Returns 0 when it reads, -EACCES when it is refused here too, another
 * error when the check failed otherwise (why: its request and answer). */
static int credential_reads(vctx_t *c, char *why, size_t whylen)
{
	backend_t *be = chunkstore_backend(c->st->cs);
	pthread_mutex_lock(&c->lock);
	bool have = c->have_good;
	digest_t d = c->good;
	pthread_mutex_unlock(&c->lock);
	/* On S3 a HEAD asks the same question as a GET (the same
	 * s3:GetObject right) without moving the object's body: with many
	 * missing chunks, each 403 costs one request and no chunk's worth
	 * of traffic.  A local directory bucket's "HEAD" is a stat, which
	 * needs no right to read the file: there the object is read again.
	 * (The claim is a few bytes; the backend has no HEAD for meta
	 * objects.) */
	bool exists, head = have && !strcmp(backend_kind(be), "s3");
	buf_t b = {0};
	int r = head   ? backend_have_many(be, 1, &d, &exists)
		: have ? backend_get(be, &d, &b)
		       : backend_get_meta(be, "store-id", &b, 4096);
	buf_free(&b);
	if (r == 0 || r == -ENOENT)
		return 0;
	snprintf(why, whylen, "%s", backend_thread_errmsg());
	return r;
}

/* A read of d the bucket answered 403 (err): either that object's alone
 * (with record, a bad chunk; the verify goes on) or the credential's (the
 * verify stops judging nothing).  stream: the stream d is a chunk of, for
 * the message (NULL: content); d may be NULL when a stream walk could not
 * say which chunk failed (then not recorded).  Returns whether it was the
 * credential's. */
static bool judge_refusal(vctx_t *c, const digest_t *d, const char *stream, int err,
			  bool record);

/* The same for a stream walk's failed ref: a ref without a plain length
 * is one the walk did not record. */
static bool judge_stream_refusal(vctx_t *c, const chunk_ref_t *failed, const char *stream,
				 int err)
{
	return judge_refusal(c, failed->plain_len ? &failed->digest : NULL, stream, err, false);
}

static void warn_snapshot(vctx_t *c, const char *what, int err)
{
	if (!c->o->warn)
		return;
	char obj[600];
	snprintf(obj, sizeof(obj), "snapshot %s: %s", c->src->name, what);
	c->o->warn(obj, err, c->o->arg);
}

/* A stream walk that failed on a missing bucket: the verify's error. */
static int stream_no_bucket(vctx_t *c, const chunk_ref_t *failed, const char *stream, int err)
{
	char what[400];
	refused_what(c, failed->plain_len ? &failed->digest : NULL, stream, what, sizeof(what));
	note_no_bucket(c, what, err);
	return refused_err(c);
}

static int collect_source(vctx_t *c, gc_idxwalk_t *w)
{
	gc_source_t *src = c->src;
	int r = collect_roots(c, &src->tree);
	if (r == 0)
		r = collect_roots(c, &src->idx);
	if (r < 0)
		return r;
	chunk_ref_t failed;
	c->sorted = true;
	size_t nroots = src->idx.len / CHUNK_REF_WIRE;
	r = nroots ? gc_idxwalk_stream(w, c->st->cs, src->idx.data, nroots, collect_refs, c,
				       &failed)
		   : CAIRN_ECORRUPT;
	c->sorted = false;
	if (c->fatal)
		return c->fatal;
	if (r == 0) {
		chunk_ref_t first;
		chunk_ref_unpack(src->idx.data, &first);
		if (probe_worthy(c, only_in_bucket(c, &first.digest)))
			note_object(c, &first.digest);
		return 0;
	}
	if (bucket_missing(c, r))
		return stream_no_bucket(c, &failed, "index stream", r);
	/* A 403 for one index chunk is judged with the others (read_range
	 * reads it again); one the credential gets everywhere ends it here. */
	if (access_refused(c, r) && judge_stream_refusal(c, &failed, "index stream", r))
		return refused_err(c);
	/* The index cannot be read (its bad chunk is reported as such): the
	 * tree still lists the content. */
	r = gc_tree_refs(c->st->cs, &src->tree, collect_refs, c, &failed);
	if (c->fatal)
		return c->fatal;
	if (bucket_missing(c, r))
		return stream_no_bucket(c, &failed, "tree stream", r);
	if (access_refused(c, r) && judge_stream_refusal(c, &failed, "tree stream", r))
		return refused_err(c);
	if (r < 0 && c->first) {
		warn_snapshot(c, "neither its index nor its tree stream can be read; its content "
				 "chunks cannot be listed",
			      r);
		if (push_id(&c->broken, &c->nbroken, &c->capbroken, src->owner) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int collect(vctx_t *c, gc_idxwalk_t *w)
{
	gc_srciter_t it;
	gc_srciter_init(&it, c->st, c->ids, c->nids, false);
	int r;
	while ((r = gc_srciter_next(&it, &c->src)) == 1) {
		if (c->first && push_id(&c->seen, &c->nseen, &c->capseen, c->src->owner) < 0) {
			r = -ENOMEM;
			break;
		}
		r = collect_source(c, w);
		if (r < 0)
			break;
	}
	c->src = NULL;
	gc_srciter_free(&it);
	return r;
}

/* ---- reading ---- */

/* Records d as bad (forbidden: see vbad_t). */
static void record_bad(vctx_t *c, const digest_t *d, int err, bool forbidden)
{
	pthread_mutex_lock(&c->lock);
	if (c->nbad == c->capbad) {
		size_t n = c->capbad ? c->capbad * 2 : 16;
		vbad_t *v = realloc(c->bad, n * sizeof(*v));
		if (!v) {
			/* Unrecorded, it would pass as good: the verify fails. */
			c->lost = -ENOMEM;
			pthread_mutex_unlock(&c->lock);
			return;
		}
		c->bad = v;
		c->capbad = n;
	}
	c->bad[c->nbad++] = (vbad_t){.d = *d, .err = err, .forbidden = forbidden};
	pthread_mutex_unlock(&c->lock);
}

static bool judge_refusal(vctx_t *c, const digest_t *d, const char *stream, int err,
			  bool record)
{
	char msg[512] = "";
	chunkstore_remote_error(c->st->cs, msg, sizeof(msg));
	char why[512] = "";
	int check = credential_reads(c, why, sizeof(why));
	if (check < 0) {
		char what[400];
		refused_what(c, d, stream, what, sizeof(what));
		note_refused(c, what, err, msg, check, why);
		return true;
	}
	if (record && d)
		record_bad(c, d, err, true);
	return false;
}

static int read_one(vctx_t *c, const vitem_t *it, buf_t *out)
{
	int r = encroot_verify_chunk(c->st->cs, &c->keys, &it->d, out);
	if (r != -ENOENT)
		return r;
	/* A sweep killed mid-removal may have left it as "<hex>.gc". */
	char hex[DIGEST_HEX_LEN + 1], dn[5];
	digest_to_hex(&it->d, hex);
	gc_dir_name(gc_dir_of(&it->d), dn);
	int fd = openat(c->chunkfd, dn, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return r;
	int q = chunk_unquarantine(fd, hex);
	close(fd);
	return q == 1 ? encroot_verify_chunk(c->st->cs, &c->keys, &it->d, out) : r;
}

typedef struct vrun {
	vctx_t *c;
	bool main;
} vrun_t;

static void *reader(void *arg)
{
	vrun_t *run = arg;
	vctx_t *c = run->c;
	buf_t out = {0};
	/* The bypass is per thread: each reader sets its own (the main
	 * one's is set for the whole verify). */
	if (!run->main)
		chunkstore_cache_bypass(c->st->cs, true);
	for (;;) {
		size_t i = atomic_fetch_add(&c->next, BLOCK);
		if (i >= c->nitems || atomic_load(&c->stop))
			break;
		size_t end = MIN(c->nitems, i + BLOCK);
		for (; i < end && !atomic_load(&c->stop); i++) {
			const vitem_t *it = &c->items[i];
			int r = read_one(c, it, &out);
			if (bucket_missing(c, r)) {
				char what[400];
				refused_what(c, &it->d, NULL, what, sizeof(what));
				note_no_bucket(c, what, r);
			} else if (access_refused(c, r))
				judge_refusal(c, &it->d, NULL, r, true);
			else if (r < 0)
				record_bad(c, &it->d, r, false);
			else
				note_good(c, &it->d);
			atomic_fetch_add(&c->chunks, 1);
			atomic_fetch_add(&c->bytes, it->stored_len);
		}
		if (run->main && c->o->progress && mono_ns() - c->last > PROGRESS_NS) {
			c->last = mono_ns();
			cairn_progress p = {.phase = "verify", .object = "chunks",
					    .files = atomic_load(&c->chunks),
					    .bytes = atomic_load(&c->bytes),
					    .bytes_total = c->total_bytes, .elapsed_ns = c->last - c->t0};
			c->o->progress(&p, c->o->arg);
		}
	}
	buf_free(&out);
	if (!run->main)
		chunkstore_cache_bypass(c->st->cs, false);
	return NULL;
}

static int item_ino_cmp(const void *a, const void *b)
{
	const vitem_t *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* Reads this range's chunks (c->range->set) in the chosen order. */
static int read_range(vctx_t *c, int threads)
{
	chunk_ref_t *refs;
	size_t n;
	int r = refset_sorted(&c->range->set, &refs, &n);
	if (r < 0)
		return r;
	vitem_t *items = malloc((n ? n : 1) * sizeof(*items));
	if (!items) {
		free(refs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		items[i] = (vitem_t){.d = refs[i].digest, .stored_len = refs[i].stored_len};
		c->total_bytes += refs[i].stored_len;
	}
	free(refs);
	if (c->o->order == CAIRN_GC_ORDER_INODE) {
		/* Inode numbers from each needed directory, read once. */
		for (size_t a = 0; a < n;) {
			unsigned d = gc_dir_of(&items[a].d);
			size_t b = a;
			while (b < n && gc_dir_of(&items[b].d) == d)
				b++;
			char dn[5];
			gc_dir_name(d, dn);
			int fd = openat(c->chunkfd, dn, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0) {
				gc_dir_inodes(fd, items + a, sizeof(vitem_t), b - a,
					      offsetof(vitem_t, ino));
				close(fd);
			}
			a = b;
		}
		qsort(items, n, sizeof(*items), item_ino_cmp);
	}
	c->items = items;
	c->nitems = n;
	atomic_store(&c->next, 0);
	pthread_t tid[64];
	vrun_t runs[64];
	int started = 0;
	for (int i = 1; i < threads && i < 64; i++) {
		runs[i] = (vrun_t){.c = c};
		if (thread_start(&tid[started + 1], reader, &runs[i]) == 0)
			started++;
	}
	runs[0] = (vrun_t){.c = c, .main = true};
	reader(&runs[0]);
	for (int i = 1; i <= started; i++)
		pthread_join(tid[i], NULL);
	free(items);
	c->items = NULL;
	c->nitems = 0;
	if (c->refused)
		return refused_err(c);
	if (c->lost)
		return store_err(c->st, c->lost,
				 "verify: out of memory recording a bad chunk; not every bad "
				 "chunk is named");
	return 0;
}

/* ---- the report ---- */

static int bad_cmp(const void *a, const void *b)
{
	return digest_cmp(&((const vbad_t *)a)->d, &((const vbad_t *)b)->d);
}

static vbad_t *bad_find(vctx_t *c, const digest_t *d)
{
	vbad_t key = {.d = *d};
	return bsearch(&key, c->bad, c->nbad, sizeof(vbad_t), bad_cmp);
}

typedef struct usectx {
	vctx_t *c;
	vuse_t *uses;
	size_t nuses, capuses;
	size_t first_of_snap; /* uses of the current snapshot start here */
	bool incomplete;      /* some use may not be listed (no memory, unreadable) */
} usectx_t;

static vuse_t *use_add(usectx_t *u, size_t bad, int64_t snap, const char *what)
{
	for (size_t i = u->first_of_snap; i < u->nuses; i++)
		if (u->uses[i].bad == bad)
			return &u->uses[i];
	if (u->nuses == u->capuses) {
		size_t n = u->capuses ? u->capuses * 2 : 16;
		vuse_t *v = realloc(u->uses, n * sizeof(*v));
		if (!v)
			return NULL;
		u->uses = v;
		u->capuses = n;
	}
	vuse_t *x = &u->uses[u->nuses++];
	*x = (vuse_t){.bad = bad, .snap = snap, .what = what};
	return x;
}

static int find_uses(const chunk_ref_t *refs, size_t n, void *arg)
{
	usectx_t *u = arg;
	for (size_t i = 0; i < n; i++) {
		vbad_t *b = bad_find(u->c, &refs[i].digest);
		if (b && !use_add(u, b - u->c->bad, u->c->src->owner, NULL)) {
			u->incomplete = true;
			return -ENOMEM;
		}
	}
	return 0;
}

static void roots_uses(usectx_t *u, const buf_t *roots, const char *what)
{
	for (size_t i = 0; i < roots->len / CHUNK_REF_WIRE; i++) {
		chunk_ref_t r;
		chunk_ref_unpack(roots->data + i * CHUNK_REF_WIRE, &r);
		vbad_t *b = bad_find(u->c, &r.digest);
		if (b && !use_add(u, b - u->c->bad, u->c->src->owner, what))
			u->incomplete = true;
	}
}

static void file_add(vuse_t *x, const char *path)
{
	x->nfiles++;
	if (x->nfiles > MAX_FILES)
		return;
	char *s = NULL;
	if (asprintf(&s, "%s%s%s", x->files ? x->files : "", x->files ? ", " : "",
		     *path ? path : "(volume image)") < 0)
		return;
	free(x->files);
	x->files = s;
}

/* Names the files of this snapshot that use its bad content chunks. */
static void map_files(usectx_t *u)
{
	vctx_t *c = u->c;
	snaptree_t t;
	crypt_keys_t *key = NULL;
	/* Files of an encrypted snapshot can be named only with its key. */
	if (encroot_keys_for_snapshot(c->st, c->src->owner, &key) < 0 ||
	    snaptree_open_key(&t, c->st->cs, key, &c->src->tree) < 0) {
		crypt_keys_free(key);
		return;
	}
	tree_entry_t e = {0};
	while (snaptree_next(&t, &e) == 1) {
		for (size_t i = u->first_of_snap; i < u->nuses; i++) {
			vuse_t *x = &u->uses[i];
			if (x->what)
				continue;
			const digest_t *d = &c->bad[x->bad].d;
			bool hit = e.content == TREE_CONTENT_BUNDLE && !digest_cmp(&e.bundle.digest, d);
			for (uint32_t k = 0; !hit && e.content == TREE_CONTENT_EXTENTS && k < e.nextent;
			     k++)
				hit = e.extents[k].kind == TREE_EXT_CHUNK &&
				      !digest_cmp(&e.extents[k].ref.digest, d);
			if (hit)
				file_add(x, e.path ? e.path : "");
		}
		tree_entry_clear(&e);
	}
	snaptree_close(&t);
	crypt_keys_free(key);
}

/* Finds which target snapshots (and files) use the bad chunks.  Without
 * memory for the walk the chunks are still named, without their users:
 * a verify that ran out of memory must not hide what it found. */
static void collect_uses(vctx_t *c, usectx_t *u)
{
	gc_idxwalk_t *w = NULL;
	if (gc_idxwalk_new(0, &w) < 0) {
		u->incomplete = true;
		return;
	}
	gc_srciter_t it;
	gc_srciter_init(&it, c->st, c->ids, c->nids, false);
	int more;
	while ((more = gc_srciter_next(&it, &c->src)) == 1) {
		u->first_of_snap = u->nuses;
		roots_uses(u, &c->src->tree, "tree stream");
		roots_uses(u, &c->src->idx, "index stream");
		chunk_ref_t failed;
		size_t nroots = c->src->idx.len / CHUNK_REF_WIRE;
		int r = nroots ? gc_idxwalk_stream(w, c->st->cs, c->src->idx.data, nroots,
						   find_uses, u, &failed)
			       : CAIRN_ECORRUPT;
		if (r < 0 &&
		    gc_tree_refs(c->st->cs, &c->src->tree, find_uses, u, &failed) < 0)
			u->incomplete = true;
		bool content = false;
		for (size_t i = u->first_of_snap; i < u->nuses; i++) {
			u->uses[i].snap = c->src->owner;
			content |= !u->uses[i].what;
		}
		if (content)
			map_files(u);
	}
	if (more < 0)
		u->incomplete = true;
	c->src = NULL;
	gc_srciter_free(&it);
	gc_idxwalk_free(w);
}

/* What was found and done about a bad chunk, after its marker's path.  Of
 * one the bucket answered 403 for, only its marker: the reason is the
 * warning's error (CAIRN_EFORBIDDEN), which says the rest. */
static const char *bad_note(const vbad_t *bd)
{
	if (bd->renamed)
		return ", renamed to .bad";
	if (bd->unmarked)
		return ", not in the bucket: marker removed, the next backup of the data stores it "
		       "again";
	if (bd->forbidden && bd->nomarker)
		return ", no marker (removed before)";
	if (bd->forbidden)
		return ", marker kept";
	return "";
}

/* The error a bad chunk is reported with: the bucket's 403 for its
 * object alone has an error of its own, not EACCES, whose "Permission
 * denied" would repeat half of it and drop that the object may as well
 * be missing. */
static int bad_err(const vbad_t *bd)
{
	return bd->forbidden ? CAIRN_EFORBIDDEN : bd->err;
}

/* Reports the bad chunks with the snapshots and files that use them.
 * Returns how many of them no longer matter: missing chunks that no target
 * snapshot uses now (its snapshots were destroyed after the chunk set was
 * collected, and a GC then removed them, as it may: verify holds nothing).
 * Those are not damage, and are not reported. */
static size_t report(vctx_t *c)
{
	usectx_t u = {.c = c};
	collect_uses(c, &u);

	/* Missing chunks (or answered 403, see vbad_t) that no target
	 * snapshot uses now: see above.  (One
	 * that a snapshot needs is found here through its index, or its tree
	 * where the index cannot be read, or as a root of either; if a list
	 * could not be read to the end, every one is reported.) */
	size_t gone = 0;
	for (size_t b = 0; !u.incomplete && b < c->nbad; b++) {
		vbad_t *bd = &c->bad[b];
		/* (A 403 for one object is a missing one, to a credential
		 * without ListBucket: gone as well when no target uses it.) */
		if ((bd->err != -ENOENT && !bd->forbidden) || bd->unmarked)
			continue;
		bd->gone = true;
		for (size_t i = 0; bd->gone && i < u.nuses; i++)
			bd->gone = u.uses[i].bad != b;
		gone += bd->gone;
	}

	/* One warning per (chunk, snapshot), chunk by chunk. */
	char *path = NULL;
	for (size_t b = 0; b < c->nbad; b++) {
		vbad_t *bd = &c->bad[b];
		if (bd->gone)
			continue;
		char hex[DIGEST_HEX_LEN + 1];
		digest_to_hex(&bd->d, hex);
		free(path);
		if (asprintf(&path, "%s/.chunks/%.4s/%s%s", c->st->path, hex, hex, bad_note(bd)) < 0)
			path = NULL;
		size_t named = 0, more = 0;
		for (size_t i = 0; i < u.nuses; i++) {
			vuse_t *x = &u.uses[i];
			if (x->bad != b)
				continue;
			if (named == MAX_SNAPS_NAMED) {
				more++;
				continue;
			}
			named++;
			char *sname = gc_snapshot_name(c->st, x->snap);
			char files[1024] = "";
			if (x->what)
				snprintf(files, sizeof(files), ", %s", x->what);
			else if (x->files)
				snprintf(files, sizeof(files), ", file %s%s", x->files,
					 x->nfiles > MAX_FILES ? ", ..." : "");
			char obj[2048];
			snprintf(obj, sizeof(obj), "chunk %s (snapshot %s%s): %s", hex,
				 sname ? sname : "?", files, path ? path : "");
			if (c->o->warn)
				c->o->warn(obj, bad_err(bd), c->o->arg);
			free(sname);
		}
		if (!named && c->o->warn) {
			char obj[512];
			snprintf(obj, sizeof(obj), "chunk %s: %s", hex, path ? path : "");
			c->o->warn(obj, bad_err(bd), c->o->arg);
		}
		if (more && c->o->warn) {
			char obj[512];
			snprintf(obj, sizeof(obj), "chunk %s: also used by %zu more snapshots", hex,
				 more);
			c->o->warn(obj, bad_err(bd), c->o->arg);
		}
	}
	free(path);
	/* The snapshots that use a bad chunk are not verified. */
	for (size_t i = 0; i < u.nuses; i++) {
		push_id(&c->broken, &c->nbroken, &c->capbroken, u.uses[i].snap);
		free(u.uses[i].files);
	}
	free(u.uses);
	return gone;
}

static int record_verified(vctx_t *c, int64_t when)
{
	sort_ids(c->broken, &c->nbroken);
	uint64_t txg;
	int r = catalog_begin_write(c->st->cat, &txg);
	if (r < 0)
		return r;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "UPDATE snapshot SET lastverified = ?1 WHERE id = ?2", -1, &q,
			       NULL) != SQLITE_OK) {
		catalog_rollback(c->st->cat);
		return -EIO;
	}
	for (size_t i = 0; r == 0 && i < c->nseen; i++) {
		if (id_in(c->broken, c->nbroken, c->seen[i]))
			continue;
		sqlite3_bind_int64(q, 1, when);
		sqlite3_bind_int64(q, 2, c->seen[i]);
		if (sqlite3_step(q) != SQLITE_DONE)
			r = catalog_error(c->st->cat);
		sqlite3_reset(q);
	}
	sqlite3_finalize(q);
	if (r < 0) {
		catalog_rollback(c->st->cat);
		return r;
	}
	return catalog_commit(c->st->cat);
}

/* On a remote store an I/O error is the bucket's or the network's, not
 * the object's: nothing is set aside for it.  An object the bucket does
 * not have loses its marker, so the next backup stores it again instead
 * of deduplicating.  Locally a damaged chunk becomes <digest>.bad. */
static void set_aside(vctx_t *c)
{
	bool remote = chunkstore_backend(c->st->cs) != NULL;
	for (size_t i = 0; i < c->nbad; i++) {
		vbad_t *b = &c->bad[i];
		char hex[DIGEST_HEX_LEN + 1], from[70], to[74];
		digest_to_hex(&b->d, hex);
		snprintf(from, sizeof(from), "%.4s/%s", hex, hex);
		snprintf(to, sizeof(to), "%.4s/%s.bad", hex, hex);
		if (remote && b->err == -ENOENT)
			b->unmarked = unlinkat(c->chunkfd, from, 0) == 0;
		else if (remote && b->forbidden)
			/* The report says "marker kept" only of one there is
			 * (a gc or an earlier verify may have removed it). */
			b->nomarker = faccessat(c->chunkfd, from, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
				      errno == ENOENT;
		else if (b->err == CAIRN_ECORRUPT || (b->err == -EIO && !remote))
			b->renamed = renameat(c->chunkfd, from, c->chunkfd, to) == 0;
	}
}

int cairn_verify(cairn_store *st, cairn_verify_opts *opts)
{
	int r = STORE_ENTER(st);
	cairn_verify_opts none = {0};
	if (!opts)
		opts = &none;
	if (r == 0)
		r = store_check_names(st, __func__, "opts->targets", opts->targets, opts->ntargets);
	if (r < 0)
		return r;
	opts->chunks = opts->bytes = opts->bad = 0;
	if (opts->order != CAIRN_GC_ORDER_INODE && opts->order != CAIRN_GC_ORDER_DIGEST)
		return store_err(st, -EINVAL, "verify: order must be inode or digest");
	vctx_t c = {.st = st, .o = opts, .first = true, .t0 = mono_ns()};
	pthread_mutex_init(&c.lock, NULL);
	int64_t start = time(NULL);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int threads = opts->threads > 0 ? opts->threads : (ncpu > 0 ? (int)ncpu : 1);
	/* A remote store's chunk cache would answer for the bucket: skip it
	 * (in this thread and in the readers, not in the caller's others). */
	if (st->cs)
		chunkstore_cache_bypass(st->cs, true);
	c.chunkfd = openat(st->dirfd, ".chunks", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.chunkfd < 0)
		r = store_err(st, -errno, ".chunks: %s", strerror(errno));
	if (r == 0)
		r = encroot_keyset_load(st, &c.keys);
	if (r == 0 && opts->ntargets) {
		r = resolve_targets(&c);
		if (r == 0 && !c.nids) {
			/* Datasets without snapshots: nothing to do. */
			if (st->cs)
				chunkstore_cache_bypass(st->cs, false);
			close(c.chunkfd);
			encroot_keyset_free(&c.keys);
			pthread_mutex_destroy(&c.lock);
			free(c.ids);
			return 0;
		}
	}
	int64_t cap = store_setting(st, "gc_cache_capacity");
	int64_t batch = store_setting(st, "gc_batch");
	size_t budget = MAX((size_t)(cap + batch), (size_t)65536);
	gc_idxwalk_t *w = NULL;
	if (r == 0)
		r = gc_idxwalk_new(MAX((size_t)cap / 16, 256), &w);
	if (r == 0)
		gc_idxwalk_set_prefetch(w, c.chunkfd, GC_IO_THREADS / 2);
	unsigned lo = 0;
	while (r == 0 && lo < GC_NDIRS) {
		gc_range_t range;
		r = gc_range_init(&range, lo, budget);
		if (r < 0)
			break;
		c.range = &range;
		gc_idxwalk_reset(w);
		r = collect(&c, w);
		c.first = false;
		if (r == 0)
			r = read_range(&c, threads);
		lo = range.hi;
		c.range = NULL;
		gc_range_free(&range);
	}
	gc_idxwalk_free(w);
	opts->chunks = atomic_load(&c.chunks);
	opts->bytes = atomic_load(&c.bytes);
	/* A refused read ends the verify judging nothing: chunks found bad
	 * before it (a credential that stopped working part way) are neither
	 * set aside nor reported, as its error says; the next verify with a
	 * working credential finds them again. */
	if (c.refused)
		c.nbad = 0;
	size_t nbad = c.nbad; /* less those that no longer matter (report) */
	/* Named even when a later phase failed: they were found damaged, and
	 * the error (kept as it was) says nothing about which. */
	if (c.nbad) {
		char why[sizeof(st->errdetail)];
		snprintf(why, sizeof(why), "%s", st->errdetail);
		qsort(c.bad, c.nbad, sizeof(vbad_t), bad_cmp);
		set_aside(&c);
		nbad -= report(&c);
		if (r < 0)
			snprintf(st->errdetail, sizeof(st->errdetail), "%s", why);
	}
	opts->bad = nbad;
	if (r == 0 && c.nseen) {
		int e = record_verified(&c, start);
		/* A read-only store can be verified; it just cannot remember it. */
		if (e == -EROFS)
			e = 0;
		if (e < 0)
			r = store_err(st, e, "recording lastverified: %s", catalog_errmsg(st->cat));
	}
	if (r == 0 && (nbad || c.nbroken))
		r = store_err(st, CAIRN_ECORRUPT, "%zu bad chunks%s", nbad,
			      c.nbroken ? " (the snapshots using them were not marked verified)"
					: "");
	if (c.chunkfd >= 0)
		close(c.chunkfd);
	if (st->cs)
		chunkstore_cache_bypass(st->cs, false);
	pthread_mutex_destroy(&c.lock);
	encroot_keyset_free(&c.keys);
	free(c.ids);
	free(c.seen);
	free(c.broken);
	free(c.bad);
	return r;
}
