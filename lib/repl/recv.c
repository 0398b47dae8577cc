/* recv.c - receiving send streams.
 *
 * The stream is untrusted: records are checksummed and bounded by
 * stream.c; here every name is validated, every chunk's digest is checked
 * before it is stored, and the tree and index of every snapshot are
 * validated in full before it may be committed.
 *
 * The unit of commit is the group: the snapshots one `snapshot -r` made
 * together on the sender (same createtxg there).  A group's snapshots are
 * verified as they arrive, held in memory, and committed in ONE
 * transaction once the GROUPEND record - which carries the SHA-256 of
 * every byte before it - checks out.  What the stream says about datasets
 * (creations, -R renames, -F destroys, properties) is applied in the
 * commit of the first group, never before: a stream refused at any byte
 * changes nothing but the whole groups before the cut.
 *
 * Retrying is safe: snapshots the target already has (same guid) are
 * skipped, so the same stream received again converges. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <xxhash.h>

#include "store/blob.h"
#include "catalog/dataset.h"
#include "repl/recvq.h"
#include "catalog/rprops.h"
#include "crypt/encroot.h"
#include "data/snapio.h"
#include "catalog/snapshot.h"
#include "store/store.h"
#include "repl/stream.h"
#include "repl/token.h"
#include "data/tree.h"
#include "catalog/writer.h"

#define NAME_BUF 512
#define CHECKPOINT_CHUNKS 1024
#define CHECKPOINT_BYTES (256ull << 20)
#define MAX_PROPS 4096
#define PROP_VALUE_MAX 8192
/* Creation times (seconds) outside [0, year 9999] are refused. */
#define CREATION_MAX 253402300799ll
/* No file in a snapshot may claim more than 2^50 bytes (1 PiB). */
#define FILE_SIZE_MAX (1ull << 50)

/* The snapshots a target dataset has, read from the catalog once and then
 * kept up to date by the receive itself: each incoming snapshot looks its
 * guid and name up in two hash tables instead of reading the dataset's
 * whole snapshot list (which made a stream of N snapshots cost N^2). */
typedef struct lsnap {
	int64_t id;
	uint64_t guid;
	char *name;
} lsnap_t;

typedef struct snapcache {
	int64_t dsid; /* the dataset they belong to; 0 = not loaded */
	lsnap_t *v;   /* in createtxg order */
	size_t n, cap;
	size_t *byguid, *byname; /* open addressing: index + 1, 0 = free */
	size_t hcap;		 /* a power of two, at least twice n */
	int64_t dv;		 /* PRAGMA data_version when loaded */
} snapcache_t;

/* A dataset the stream declares (DATASET record, then SNAPLIST with -R). */
typedef struct rds {
	char *name; /* the sender's */
	char local[NAME_BUF];
	uint8_t type;
	uint64_t guid;
	cairn_prop *props; /* owned strings */
	size_t nprops;
	char **snapnames; /* SNAPLIST */
	uint64_t *snapguids;
	uint32_t nsnaps;
	bool has_list;
	/* -F: its snapshots the sender lacks go with the group of its first
	 * snapshot (which may build on one), or at the stream's end. */
	bool drop_due;
	uint64_t group_mark; /* the group (sender's txg) of its last snapshot */
	snapcache_t snaps;   /* of its local dataset (loaded on first use) */
	encroot_wrapped_t *key; /* CRYPTKEY (raw streams): it becomes a root */
	bool crypt_checked;	/* crypt_fits_target passed for it */
} rds_t;

/* A verified snapshot waiting for its group's commit. */
typedef struct psnap {
	char target[NAME_BUF];
	const char *sent_ds; /* the sender's dataset name (owned by its rds) */
	struct rds *rds;     /* its stream dataset (stable once snapshots come) */
	char *name;
	uint64_t guid, fromguid;
	int64_t creation;
	buf_t tree, idx;
	cairn_prop *props;
	size_t nprops;
} psnap_t;

typedef struct rctx {
	cairn_store *st;
	cairn_recv_opts *o;
	sreader_t rd;
	/* BEGIN */
	uint32_t flags;
	uint64_t resume_skip, toguid, fromguid, resume_txg;
	char top[NAME_BUF];
	/* declared datasets, and an open-addressing table of their indexes
	 * (+1, 0 = free) by name: each lookup is O(1), not a scan */
	rds_t *ds;
	size_t nds, dsalloc;
	size_t *dsidx;
	size_t dsidx_cap; /* a power of two, at least twice nds */
	/* apply_meta: (guid, id) of the datasets under the target, by guid */
	struct guidid *local_guids;
	size_t nlocal_guids;
	bool local_guids_loaded;
	bool meta_applied;
	bool at_end; /* the stream's last group is being committed */
	/* the group being received */
	uint64_t group_txg, last_group_txg;
	psnap_t *pend;
	size_t npend, nskipped_in_group;
	bool ready; /* GROUPEND verified, commit due */
	bool any_snap;
	refset_t got; /* chunks received for the group (kept by GC via recvstate) */
	/* The identities of the group's snapshots so far, in stream order
	 * (token_group_add): a checkpoint's token carries the digest of
	 * those up to gcover, so send -t can tell that the group it resumes
	 * still begins with them. */
	buf_t gids;
	/* The part of gids (bytes) up to the snapshot of the last chunk
	 * counted in group_pos: the snapshots whose chunks a token skips,
	 * which its digest covers (count_chunk). */
	size_t gcover;
	/* A resumed stream: the group digest of the token it continues (its
	 * gsnaps, 0 for a "2-" token), kept by a checkpoint that comes before
	 * any chunk of that group (resume_digest_holds). */
	uint32_t resume_gsnaps;
	uint8_t resume_gdigest[DIGEST_LEN];
	uint64_t group_pos, since_checkpoint_chunks, since_checkpoint_bytes;
	/* the snapshot being received */
	psnap_t cur;
	const rds_t *cur_ds;
	bool in_snap, skipping;
	recvq_t *vq; /* chunks being verified on worker threads */
	int64_t last_progress;
	/* -v lines, printed once the commit they describe has happened */
	buf_t items;
	bool state_saved;
	/* A checkpoint of this receive wrote partial state where there was
	 * none (cleared by a commit), and the target refused the group: the
	 * state is discarded then, as zfs refuses before any data moves. */
	bool own_state, refused;
	/* Refused for a cause no resume can remove - a missing incremental
	 * source, a changed group, a target encrypted otherwise than the
	 * stream's data (crypt_refused): a resumed receive's state can then
	 * never complete, and is discarded too (a stream cut before the
	 * check had saved it; sending again, from a source the target has or
	 * raw or not as the target is, is the way on). */
	bool source_gone;
	/* check_complete found a chunk of the snapshot neither in the
	 * stream nor on the receiver. */
	bool chunk_missing;
	/* keep_checked_group: the group keeps its partial state (-s) though
	 * no snapshot of it is open or pending. */
	bool keep_group;
	/* Parents of the top that a checkpoint made (-d, -e), deepest first:
	 * a discarded state takes them back. */
	char **made;
	size_t nmade;
	bool legacy_state; /* see adopt_legacy_state */
	/* -n (dry run): nothing may reach the store.  st->cs is swapped for
	 * a scratch chunk store in a temporary directory (never flushed,
	 * removed at the end) that reads through to the store's: the chunks
	 * the checks must read (each snapshot's tree and index roots) are put
	 * there, data chunks only remembered by digest.  The commits run as
	 * usual, inside one outer transaction that is rolled back, so every
	 * refusal a real receive would make is made here too. */
	chunkstore_t *scratch, *real_cs;
	uint64_t dry_txg;
	char scratch_dir[PATH_MAX];
	refset_t seen; /* every chunk the stream carried */
	refset_t roots; /* tree and index roots of the snapshot being read */
	bool dry_txn;
} rctx_t;

static int bad(rctx_t *c, const char *what)
{
	return store_err(c->st, CAIRN_ECORRUPT, "stream is invalid at byte %llu: %s",
			 (unsigned long long)c->rd.offset, what);
}

/* writer_register, with a failure that names the registry and why (a
 * full disk, a read-only store, a damaged writers/). */
static int register_writer_named(cairn_store *st)
{
	int r = writer_register(st);
	if (r < 0)
		return store_err(st, r, "%s/writers: registering as a writer: %s", st->path,
				 strerror(-r));
	return 0;
}

/* What a dry run says instead of what a receive did. */
static const char *dry_word(const char *what)
{
	static const char *const map[][2] = {{"created", "would create"},
					     {"destroyed", "would destroy"},
					     {"renamed", "would rename"}};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i][0], what))
			return map[i][1];
	return what;
}

static void note(rctx_t *c, const char *what, const char *name)
{
	if (!c->o->item)
		return;
	if (c->o->dryrun)
		what = dry_word(what);
	buf_append(&c->items, what, strlen(what) + 1);
	buf_append(&c->items, name, strlen(name) + 1);
}

/* note() of a rename: "OLD to NEW". */
static void note_rename(rctx_t *c, const char *old, const char *new)
{
	if (!c->o->item)
		return;
	char both[2 * NAME_BUF + 600];
	snprintf(both, sizeof(both), "%s to %s", old, new);
	note(c, "renamed", both);
}

/* note() of DS@SNAP. */
static void note_snapshot(rctx_t *c, const char *what, const char *ds, const char *snap)
{
	if (!c->o->item)
		return;
	char full[NAME_BUF + 300];
	snprintf(full, sizeof(full), "%s@%s", ds, snap);
	note(c, what, full);
}

static void flush_items(rctx_t *c, bool committed)
{
	for (size_t at = 0; committed && at < c->items.len;) {
		const char *what = (const char *)c->items.data + at;
		const char *name = what + strlen(what) + 1;
		c->o->item(what, name, c->o->arg);
		at = name + strlen(name) + 1 - (const char *)c->items.data;
	}
	c->items.len = 0;
}

static void props_free(cairn_prop *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)p[i].name);
		free((char *)p[i].value);
	}
	free(p);
}

static void psnap_clear(psnap_t *p)
{
	free(p->name);
	buf_free(&p->tree);
	buf_free(&p->idx);
	props_free(p->props, p->nprops);
	memset(p, 0, sizeof(*p));
}

static void pend_clear(rctx_t *c)
{
	for (size_t i = 0; i < c->npend; i++)
		psnap_clear(&c->pend[i]);
	c->npend = 0;
	c->nskipped_in_group = 0;
}

/* ---- names ---- */

/* Where the stream's top dataset lands: the target, or with -d or -e the
 * dataset below it (known from the first DATASET record, which every
 * stream has before its first snapshot).  The target's other children are
 * none of this stream's business: guid matches and -F's deletions stay
 * inside this subtree (zfs's "tofs"), and the partial state of a receive
 * lives on this dataset, as zfs keeps it on the received one. */
static const char *local_top(const rctx_t *c)
{
	return c->nds ? c->ds[0].local : c->o->target;
}

/* Maps a sender dataset name to the local name per -d / -e. */
static int map_name(rctx_t *c, const char *sent, char *out)
{
	size_t tl = strlen(c->top);
	if (strncmp(sent, c->top, tl) || (sent[tl] && sent[tl] != '/'))
		return bad(c, "dataset outside the stream's top dataset");
	const char *rel = sent + tl;
	/* -d: all but the first component of the sent name; -e: its last. */
	char base[NAME_BUF + 2] = "";
	if (c->o->naming == 'd' && strchr(c->top, '/'))
		snprintf(base, sizeof(base), "%s", strchr(c->top, '/'));
	else if (c->o->naming == 'e')
		snprintf(base, sizeof(base), "/%s",
			 strrchr(c->top, '/') ? strrchr(c->top, '/') + 1 : c->top);
	int n = snprintf(out, NAME_BUF, "%s%s%s", c->o->target, base, rel);
	char why[256];
	if (n >= NAME_BUF || cairn_name_check(out, false, why, sizeof(why)) < 0)
		return store_err(c->st, CAIRN_EBADNAME, "%s: %s", out,
				 n >= NAME_BUF ? "name too long" : why);
	return 0;
}

static size_t name_slot(const rctx_t *c, const char *name)
{
	return XXH3_64bits(name, strlen(name)) & (c->dsidx_cap - 1);
}

static const rds_t *find_ds(const rctx_t *c, const char *sent)
{
	if (!c->dsidx_cap)
		return NULL;
	for (size_t h = name_slot(c, sent); c->dsidx[h]; h = (h + 1) & (c->dsidx_cap - 1))
		if (!strcmp(c->ds[c->dsidx[h] - 1].name, sent))
			return &c->ds[c->dsidx[h] - 1];
	return NULL;
}

/* Enters c->ds[i] in the name table, growing it to keep it half empty. */
static int index_ds(rctx_t *c, size_t i)
{
	if (2 * (i + 1) > c->dsidx_cap) {
		size_t cap = c->dsidx_cap ? 2 * c->dsidx_cap : 64;
		size_t *t = calloc(cap, sizeof(*t));
		if (!t)
			return -ENOMEM;
		free(c->dsidx);
		c->dsidx = t;
		c->dsidx_cap = cap;
		for (size_t k = 0; k < i; k++) {
			size_t h = name_slot(c, c->ds[k].name);
			while (c->dsidx[h])
				h = (h + 1) & (cap - 1);
			c->dsidx[h] = k + 1;
		}
	}
	size_t h = name_slot(c, c->ds[i].name);
	while (c->dsidx[h])
		h = (h + 1) & (c->dsidx_cap - 1);
	c->dsidx[h] = i + 1;
	return 0;
}

static int truncated(rctx_t *c)
{
	return store_err(c->st, -EPIPE, "stream truncated after %llu bytes",
			 (unsigned long long)(c->rd.offset + c->rd.in.len - c->rd.inpos));
}

/* ---- partial state (recv -s) ---- */

typedef struct rstate {
	bool exists, created;
	resume_token_t tok;
	buf_t idx;
} rstate_t;

static int state_load(cairn_store *st, const char *dataset, rstate_t *s)
{
	memset(s, 0, sizeof(*s));
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT token, state, idx FROM recvstate WHERE dataset=?", -1, &q, NULL))
		return -EIO;
	sqlite3_bind_text(q, 1, dataset, -1, SQLITE_STATIC);
	int r = 0;
	if (sqlite3_step(q) == SQLITE_ROW) {
		s->exists = true;
		s->created = sqlite3_column_bytes(q, 1) == 7 &&
			     !memcmp(sqlite3_column_blob(q, 1), "created", 7);
		if (token_decode((const char *)sqlite3_column_text(q, 0), &s->tok) < 0)
			r = store_err(st, CAIRN_ECORRUPT,
				      "%s: damaged resume state (discard it with cairn recv -A %s)",
				      dataset, dataset);
		else
			r = buf_append(&s->idx, sqlite3_column_blob(q, 2), sqlite3_column_bytes(q, 2));
	}
	sqlite3_finalize(q);
	return r;
}

static int drop_state(cairn_store *st, const char *dataset)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat), "DELETE FROM recvstate WHERE dataset=?", -1, &q,
			       NULL))
		return -EIO;
	sqlite3_bind_text(q, 1, dataset, -1, SQLITE_STATIC);
	int r = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(q);
	return r;
}

/* Records where the group in flight stopped: the chunks it has (an index
 * stream, so GC keeps them) and a token.  The target is created empty if
 * it does not exist yet (zfs does the same): the token is one of its
 * properties, and recv -A removes it again. */
static int recv_crypt_apply(rctx_t *c, const rds_t *d, bool created);

static void forget_made(rctx_t *c)
{
	for (size_t i = 0; i < c->nmade; i++)
		free(c->made[i]);
	free(c->made);
	c->made = NULL;
	c->nmade = 0;
}

/* Records which ancestors of name do not exist yet, deepest first. */
/* cairn_dataset_create for a receive.  The target's own parent is never
 * made (as in zfs), and recv has no -p: a missing one is refused here,
 * saying what to do, before the library's message (which names create's
 * and rename's -p) could. */
static int recv_create_check_parent(rctx_t *c, const char *name)
{
	const char *slash = strrchr(name, '/');
	if (!slash)
		return 0;
	char *pname = strndup(name, slash - name);
	ds_row_t p = {0};
	int r = pname ? catalog_ds_by_name(c->st->cat, pname, &p) : -ENOMEM;
	if (r == -ENOENT)
		store_err(c->st, r, "%s: parent does not exist (%s; create it first, or "
				    "receive with -d or -e below an existing dataset)",
			  name, pname);
	ds_row_clear(&p);
	free(pname);
	return r == -ENOENT || r == -ENOMEM ? r : 0; /* (a catalog error: the create reports it) */
}

static int recv_create(rctx_t *c, const char *name, int type, const cairn_prop *props,
		       size_t np, bool parents)
{
	int r = parents ? 0 : recv_create_check_parent(c, name);
	return r < 0 ? r : cairn_dataset_create(c->st, name, type, props, np, parents);
}

static int note_missing_parents(rctx_t *c, const char *name)
{
	char buf[NAME_BUF];
	snprintf(buf, sizeof(buf), "%s", name);
	char *slash;
	while ((slash = strrchr(buf, '/'))) {
		*slash = 0;
		ds_row_t d = {0};
		int k = catalog_ds_by_name(c->st->cat, buf, &d);
		ds_row_clear(&d);
		if (k != -ENOENT)
			return k < 0 ? k : 0;
		char **v = realloc(c->made, (c->nmade + 1) * sizeof(*v));
		if (!v || !(v[c->nmade] = strdup(buf))) {
			if (v)
				c->made = v;
			return -ENOMEM;
		}
		c->made = v;
		c->nmade++;
	}
	return 0;
}

/* The token skips the chunks of the group in flight up to group_pos; its
 * digest must cover every snapshot those chunks belong to.  The snapshots
 * the stream has shown do, once a chunk of the group came in this
 * receive: it came after the SNAP records of its snapshot and all before.
 * A resumed stream cut again before any chunk came skips what the token
 * it resumed skipped, perhaps chunks of snapshots it had not shown yet:
 * that token's digest (or none, a "2-" token's) is the one that covers
 * them. */
static bool resume_digest_holds(const rctx_t *c)
{
	return (c->flags & STREAM_F_RESUMED) && !c->last_group_txg &&
	       c->group_txg == c->resume_txg && c->group_pos == c->resume_skip;
}

static int checkpoint(rctx_t *c)
{
	int r = chunkstore_flush(c->st->cs);
	buf_t roots = {0};
	uint64_t ref = 0, logical = 0;
	if (r == 0)
		r = index_write(c->st->cs, &c->got, &roots, &ref, &logical);
	if (r == 0)
		r = chunkstore_flush(c->st->cs);
	if (r < 0)
		store_chunk_err_during(c->st, r, "saving the resume point");
	resume_token_t t = {.toguid = c->toguid, .fromguid = c->fromguid, .group = c->group_txg,
			    .skip = c->group_pos,
			    .flags = c->flags & STREAM_F_PLAN,
			    .gsnaps = c->gcover / TOKEN_GROUP_ID_LEN};
	buf_t covered = {.data = c->gids.data, .len = c->gcover};
	token_group_digest(&covered, t.gdigest);
	if (resume_digest_holds(c)) {
		t.gsnaps = c->resume_gsnaps;
		memcpy(t.gdigest, c->resume_gdigest, DIGEST_LEN);
	}
	char tok[TOKEN_MAX];
	token_encode(&t, tok);
	uint64_t txg;
	if (r == 0)
		r = store_txn_begin(c->st, &txg);
	if (r < 0) {
		buf_free(&roots);
		return r;
	}
	ds_row_t d = {0};
	bool created = false;
	rstate_t old;
	const char *top = local_top(c);
	r = state_load(c->st, top, &old);
	if (r == 0 && old.exists)
		created = old.created;
	bool had_state = old.exists || c->legacy_state; /* an earlier receive's */
	buf_free(&old.idx);
	if (r == 0 && catalog_ds_by_name(c->st->cat, top, &d) == -ENOENT) {
		int type = c->nds ? c->ds[0].type : CAIRN_TYPE_FILESYSTEM;
		encroot_receiving(true);
		/* Below the target (-d, -e), missing parents are made as the
		 * commit would make them. */
		r = note_missing_parents(c, top);
		if (r == 0)
			r = recv_create(c, top, type, NULL, 0, strcmp(top, c->o->target) != 0);
		if (r < 0)
			forget_made(c);
		encroot_receiving(false);
		created = r == 0;
		/* A raw stream's top: encrypted from the start, as it will be. */
		if (r == 0 && c->nds)
			r = recv_crypt_apply(c, &c->ds[0], true);
	}
	ds_row_clear(&d);
	sqlite3_stmt *q;
	if (r == 0 && sqlite3_prepare_v2(catalog_db(c->st->cat),
					 "INSERT OR REPLACE INTO recvstate(dataset, token, state, idx)"
					 " VALUES(?, ?, ?, ?)",
					 -1, &q, NULL))
		r = -EIO;
	else if (r == 0) {
		sqlite3_bind_text(q, 1, top, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 2, tok, -1, SQLITE_STATIC);
		sqlite3_bind_blob(q, 3, created ? "created" : "", created ? 7 : 0, SQLITE_STATIC);
		sqlite3_bind_blob(q, 4, roots.data ? (void *)roots.data : "", roots.len,
				  SQLITE_STATIC);
		r = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
		if (r < 0)
			store_err(c->st, r, "%s: saving the resume token: %s", top,
				  sqlite3_errmsg(catalog_db(c->st->cat)));
		sqlite3_finalize(q);
	}
	if (r == 0 && c->legacy_state)
		r = drop_state(c->st, c->o->target);
	r = store_txn_end(c->st, r);
	buf_free(&roots);
	c->since_checkpoint_bytes = c->since_checkpoint_chunks = 0;
	if (r == 0 && !had_state)
		c->own_state = true;
	if (r == 0)
		c->legacy_state = false;
	return r;
}

/* Whether a saved token's stream was planned as this one (plan: its
 * STREAM_F_PLAN flags).  Versions before tokens recorded send -R -s saved
 * one without STREAM_F_SKIPPED for such a stream: it is still the same. */
static bool same_plan(const resume_token_t *t, uint32_t plan)
{
	return t->flags == plan || t->flags == (plan & ~STREAM_F_SKIPPED);
}

/* A -d or -e receive cut by an earlier version kept its state on the
 * target above the received dataset.  When that state is this stream's,
 * it is taken over: the next checkpoint or commit moves it to the
 * received dataset (legacy_state), so the old token still resumes. */
static int adopt_legacy_state(rctx_t *c, uint32_t plan, rstate_t *s)
{
	rstate_t old;
	int r = state_load(c->st, c->o->target, &old);
	if (r == 0 && old.exists && old.tok.toguid == c->toguid &&
	    old.tok.fromguid == c->fromguid && same_plan(&old.tok, plan)) {
		buf_free(&s->idx);
		*s = old;
		c->legacy_state = true;
		return 0;
	}
	buf_free(&old.idx);
	return r;
}

/* Another stream's partial state is in the way.  The words zfs uses for
 * this ("contains partially-complete state from \"zfs receive -s\"") are
 * kept: syncoid looks for them, then discards the state and sends again. */
static int state_busy(rctx_t *c, const char *name)
{
	return store_err(c->st, -EBUSY,
			 "%s: destination contains partially-complete state from \"zfs receive "
			 "-s\" (another stream's); resume it (send -t with its "
			 "receive_resume_token) or discard it (recv -A %s)",
			 name, name);
}

/* Before anything is read past the top's DATASET record: partial state on
 * the top belongs to this stream (resumed, or the same stream sent again)
 * or the receive is refused - another stream must not silently drop it. */
static int check_state(rctx_t *c)
{
	rstate_t s;
	const char *top = local_top(c);
	int r = state_load(c->st, top, &s);
	/* The state lives with its dataset (a checkpoint creates it); a row
	 * without one was left by an older version's destroy, and counts
	 * for nothing. */
	ds_row_t d = {0};
	if (r == 0 && s.exists && catalog_ds_by_name(c->st->cat, top, &d) == -ENOENT)
		s.exists = false;
	ds_row_clear(&d);
	uint32_t plan = c->flags & STREAM_F_PLAN;
	if (r == 0 && !s.exists && strcmp(top, c->o->target))
		r = adopt_legacy_state(c, plan, &s);
	const resume_token_t *t = &s.tok;
	bool same = s.exists && t->toguid == c->toguid && t->fromguid == c->fromguid &&
		    same_plan(t, plan);
	if (r == 0 && (c->flags & STREAM_F_RESUMED)) {
		if (!s.exists)
			r = store_err(c->st, -ENOENT, "%s: no partial receive to resume", top);
		else if (!same || t->group != c->resume_txg || t->skip != c->resume_skip)
			r = store_err(c->st, -EINVAL,
				      "%s: the stream does not continue the interrupted receive "
				      "(token from another stream?)",
				      top);
	} else if (r == 0 && s.exists && !same) {
		r = state_busy(c, top);
	}
	if (r == 0 && (c->flags & STREAM_F_RESUMED)) {
		c->resume_gsnaps = t->gsnaps;
		memcpy(c->resume_gdigest, t->gdigest, DIGEST_LEN);
	}
	if (r == 0 && (c->flags & STREAM_F_RESUMED) && s.idx.len) {
		/* The chunks it had are listed again so the commit finds them
		 * and GC keeps them. */
		idxrd_t x;
		idxrd_open(&x, c->st->cs, &s.idx);
		chunk_ref_t ref;
		int k;
		while ((k = idxrd_next(&x, &ref)) == 1)
			refset_add(&c->got, &ref);
		idxrd_close(&x);
		if (k < 0)
			r = store_err(c->st, k, "%s: partial receive state lost", top);
	}
	buf_free(&s.idx);
	return r;
}

/* A dataset the stream writes into, other than its top: it must hold no
 * partial state (that can only be another stream's). */
static int check_no_state(rctx_t *c, const char *name)
{
	rstate_t s;
	int r = state_load(c->st, name, &s);
	buf_free(&s.idx);
	ds_row_t d = {0};
	if (r == 0 && s.exists && catalog_ds_by_name(c->st->cat, name, &d) == 0)
		r = state_busy(c, name);
	ds_row_clear(&d);
	return r;
}

/* ---- BEGIN, DATASET, SNAPLIST: remembered, applied with the first group ---- */

static int read_begin(rctx_t *c)
{
	int t = sr_next(&c->rd);
	if (t == -EPIPE)
		return truncated(c);
	if (t != REC_BEGIN)
		return t < 0 && t != CAIRN_ECORRUPT ? t : bad(c, "no BEGIN record");
	c->flags = sr_u32(&c->rd);
	c->resume_skip = sr_u64(&c->rd);
	sr_str(&c->rd, c->top, sizeof(c->top));
	sr_u64(&c->rd);
	c->toguid = sr_u64(&c->rd);
	c->fromguid = sr_u64(&c->rd);
	c->resume_txg = sr_u64(&c->rd);
	char why[256];
	if (sr_done(&c->rd) || (c->flags & ~STREAM_F_ALL))
		return bad(c, "malformed BEGIN record");
	if (cairn_name_check(c->top, false, why, sizeof(why)) < 0)
		return bad(c, why);
	if ((c->resume_skip || c->resume_txg) && !(c->flags & STREAM_F_RESUMED))
		return bad(c, "resume position in a stream that is not resumed");
	if ((c->flags & STREAM_F_RESUMED) && !c->resume_txg)
		return bad(c, "resumed stream without a group");
	return 0;
}

static bool excluded(rctx_t *c, const char *prop, bool top)
{
	/* source is local to each store: a stream never sets it. */
	if (!strcmp(prop, "source"))
		return true;
	for (size_t i = 0; i < c->o->nexclude; i++)
		if (!strcmp(c->o->exclude[i], prop))
			return true;
	/* -o is set on the top dataset only and wins there; below, the
	 * stream's own value gives way so the children inherit it (zfs). */
	for (size_t i = 0; i < c->o->nprops; i++)
		if (!strcmp(c->o->props[i].name, prop))
			return true;
	return false;
}

static int crypt_refused(rctx_t *c, int r);

/* A plain stream never lands below an encryption root (recv_crypt_apply
 * refuses it at the commit: docs/SECURITY.md).  Where the stream's top
 * goes is known from its DATASET record, and no -R rename moves the top:
 * so it is refused there, before any chunk is read, not after all of
 * them (a raw stream, whose top may yet get a CRYPTKEY, at its first
 * snapshot record: sync sends a plain dataset raw).  Judged on the top's
 * dataset or, when it is yet to be made, on its nearest existing
 * ancestor, whose encryption it would inherit.  A -R child is judged the
 * same way on the dataset it writes into (receives_into): when that one,
 * or the ancestor a new child goes below, is encrypted, the commit is
 * sure to refuse it too (a rename never crosses an encryption root, and
 * an encrypted dataset the stream moves is written into, and refused,
 * itself). */
static int plain_fits(rctx_t *c, const char *local)
{
	char up[NAME_BUF];
	snprintf(up, sizeof(up), "%s", local);
	ds_row_t row = {0}, root = {0};
	int r;
	while ((r = catalog_ds_by_name(c->st->cat, up, &row)) == -ENOENT) {
		char *slash = strrchr(up, '/');
		if (!slash)
			return 0;
		*slash = 0;
	}
	if (r == 0 && (r = encroot_find(c->st, &row, &root)) == 1)
		r = crypt_refused(c, store_err(c->st, -EINVAL,
					       "%s: cannot receive unencrypted data below "
					       "encryption root %s",
					       local, root.name));
	ds_row_clear(&row);
	ds_row_clear(&root);
	return r == -EINVAL ? r : 0; /* (a catalog error: the commit reports it) */
}

static int find_by_guid(rctx_t *c, uint64_t guid, char *out);
static int load_local_guids(rctx_t *c);

/* The dataset there that stream dataset d will write into, as named now:
 * with -R, the one with its guid in the stream's scope, which the commit
 * renames to d->local (apply_dataset); else the one named d->local.  So
 * that a check made before the renames looks at the right dataset (the
 * guids are read once, at the first child: nothing changes there before
 * the commit, which reads them again). */
static const char *receives_into(rctx_t *c, const rds_t *d, char old[NAME_BUF])
{
	if ((c->flags & STREAM_F_RECURSIVE) &&
	    (c->local_guids_loaded || load_local_guids(c) == 0) &&
	    find_by_guid(c, d->guid, old) == 0)
		return old;
	return d->local;
}

/* A child d of the stream must find no partial state in the dataset it
 * writes into (receives_into), nor in one that stays in the way at its
 * new name, which the commit cannot rename it over ("dataset already
 * exists" there, once every chunk has come).  A dataset at the new name
 * that the stream moves away is one of its own, checked by its guid. */
static int check_no_state_child(rctx_t *c, const rds_t *d, char old[NAME_BUF])
{
	const char *into = receives_into(c, d, old);
	int r = check_no_state(c, into);
	if (r == 0 && into != d->local)
		r = check_no_state(c, d->local);
	return r;
}

static int read_dataset(rctx_t *c)
{
	if (c->any_snap)
		return bad(c, "DATASET record after the first snapshot");
	char why[256], old[NAME_BUF];
	char *name = sr_strdup(&c->rd, NAME_BUF - 1);
	int type = sr_u8(&c->rd);
	uint64_t guid = sr_u64(&c->rd);
	uint32_t np = sr_u32(&c->rd);
	/* Each property takes at least 4 bytes: bound np by the payload. */
	if (!name || c->rd.bad || np > MAX_PROPS || np > (c->rd.rec.len - c->rd.pos) / 4 ||
	    (type != CAIRN_TYPE_FILESYSTEM && type != CAIRN_TYPE_VOLUME)) {
		free(name);
		return bad(c, "malformed DATASET record");
	}
	const char *err = cairn_name_check(name, false, why, sizeof(why)) < 0 ? why
			  : c->nds == 0 && strcmp(name, c->top)	       ? "first dataset is not the top"
			  : find_ds(c, name)			       ? "dataset declared twice"
								       : NULL;
	if (err) {
		free(name);
		return bad(c, err);
	}
	if (c->nds == STREAM_MAX_DATASETS) {
		free(name);
		return store_err(c->st, CAIRN_ECORRUPT,
				 "stream is invalid at byte %llu: more than %d datasets (the limit of a "
				 "stream)",
				 (unsigned long long)c->rd.offset, STREAM_MAX_DATASETS);
	}
	if (c->nds == c->dsalloc) {
		size_t n = c->dsalloc ? 2 * c->dsalloc : 16;
		rds_t *v = realloc(c->ds, n * sizeof(*v));
		if (!v) {
			free(name);
			return -ENOMEM;
		}
		c->ds = v;
		c->dsalloc = n;
	}
	rds_t *d = &c->ds[c->nds++];
	memset(d, 0, sizeof(*d));
	d->name = name;
	d->type = type;
	d->guid = guid;
	int r = index_ds(c, c->nds - 1);
	if (r == 0)
		r = map_name(c, name, d->local);
	/* The top's local name is known now: its partial state, if any,
	 * must belong to this stream (before anything is read past it).
	 * Any other dataset the stream writes into must hold none: that is
	 * another stream's, as zfs refuses a dataset with %recv state. */
	if (r == 0 && c->nds == 1)
		r = check_state(c);
	else if (r == 0)
		r = check_no_state_child(c, d, old);
	/* A parent must be declared before its children. */
	const char *slash = strrchr(name, '/');
	if (r == 0 && c->nds > 1 && slash) {
		char parent[NAME_BUF];
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - name), name);
		const rds_t *p = find_ds(c, parent);
		if (!p || p->type != CAIRN_TYPE_FILESYSTEM)
			r = bad(c, "dataset declared before its parent (or under a volume)");
	}
	d->props = np ? calloc(np, sizeof(*d->props)) : NULL;
	if (r == 0 && np && !d->props)
		r = -ENOMEM;
	bool top = c->nds == 1;
	for (uint32_t i = 0; r == 0 && i < np; i++) {
		char *k = sr_strdup(&c->rd, 255), *val = sr_strdup(&c->rd, PROP_VALUE_MAX);
		if (!k || !val || !k[0]) {
			free(k);
			free(val);
			r = bad(c, "malformed property in a DATASET record");
		} else if (excluded(c, k, top) || encroot_prop_is_key(k)) {
			/* the key's properties come with its CRYPTKEY record */
			free(k);
			free(val);
		} else {
			d->props[d->nprops++] = (cairn_prop){k, val};
		}
	}
	if (r == 0 && sr_done(&c->rd))
		r = bad(c, "malformed DATASET record");
	/* Refused before any data moves (nothing is changed here). */
	ds_row_t row = {0};
	if (r == 0 && !(c->flags & STREAM_F_RECURSIVE) &&
	    catalog_ds_by_name(c->st->cat, d->local, &row) == 0 && row.type != d->type)
		r = store_err(c->st, -EINVAL, "%s: exists as a %s, the stream has a %s", d->local,
			      row.type == CAIRN_TYPE_VOLUME ? "volume" : "filesystem",
			      d->type == CAIRN_TYPE_VOLUME ? "volume" : "filesystem");
	ds_row_clear(&row);
	/* The target's own parent is never made (recv_create): when neither
	 * the target nor its parent exists, no receive into it can succeed
	 * (nor can a -R rename into it), so it is refused now, before a
	 * chunk is read, not after all of them. */
	if (r == 0 && top && !strcmp(d->local, c->o->target) && strchr(d->local, '/') &&
	    catalog_ds_by_name(c->st->cat, d->local, &row) == -ENOENT)
		r = recv_create_check_parent(c, d->local);
	ds_row_clear(&row);
	if (r == 0 && !(c->flags & STREAM_F_RAW))
		r = plain_fits(c, top ? d->local : receives_into(c, d, old));
	return r;
}

static int read_snaplist(rctx_t *c)
{
	char name[NAME_BUF];
	sr_str(&c->rd, name, sizeof(name));
	uint32_t n = sr_u32(&c->rd);
	/* Each entry takes at least 10 bytes: bound n by the payload first. */
	if (c->rd.bad || n > (c->rd.rec.len - c->rd.pos) / 10)
		return bad(c, "malformed SNAPLIST record");
	rds_t *d = (rds_t *)find_ds(c, name);
	if (!d || d->has_list || c->any_snap || !(c->flags & STREAM_F_RECURSIVE))
		return bad(c, "SNAPLIST for an undeclared dataset, twice, or out of place");
	d->has_list = true;
	d->snapguids = calloc(n + 1, sizeof(*d->snapguids));
	d->snapnames = calloc(n + 1, sizeof(char *));
	if (!d->snapguids || !d->snapnames)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && !c->rd.bad; i++) {
		char *s = sr_strdup(&c->rd, 255);
		if (!s)
			break;
		d->snapnames[d->nsnaps] = s;
		d->snapguids[d->nsnaps++] = sr_u64(&c->rd);
		char full[NAME_BUF + 300], why[256];
		snprintf(full, sizeof(full), "%s@%s", d->local, s);
		if (cairn_name_check(full, true, why, sizeof(why)) < 0)
			return bad(c, why);
	}
	if (sr_done(&c->rd))
		return bad(c, "malformed SNAPLIST record");
	return 0;
}

/* ---- applying what the stream says about datasets (inside a commit) ---- */

typedef struct guidid {
	uint64_t guid;
	int64_t id;
} guidid_t;

static int cmp_guidid(const void *a, const void *b)
{
	uint64_t x = ((const guidid_t *)a)->guid, y = ((const guidid_t *)b)->guid;
	return x < y ? -1 : x > y;
}

/* The (guid, id) of every dataset in the stream's scope, sorted by guid,
 * read once per commit: ids survive the renames apply_meta makes. */
static int load_local_guids(rctx_t *c)
{
	free(c->local_guids);
	c->local_guids = NULL;
	c->nlocal_guids = 0;
	c->local_guids_loaded = false;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "SELECT guid, id FROM dataset WHERE name = ?1 OR"
			       " (name > ?1 || '/' AND name < ?1 || '0')",
			       -1, &q, NULL))
		return -EIO;
	sqlite3_bind_text(q, 1, local_top(c), -1, SQLITE_STATIC);
	size_t cap = 0;
	int r = 0;
	while (r == 0 && sqlite3_step(q) == SQLITE_ROW) {
		if (c->nlocal_guids == cap) {
			cap = cap ? 2 * cap : 64;
			guidid_t *v = realloc(c->local_guids, cap * sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			c->local_guids = v;
		}
		c->local_guids[c->nlocal_guids++] =
			(guidid_t){sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1)};
	}
	sqlite3_finalize(q);
	if (r == 0 && c->nlocal_guids) /* qsort and bsearch want a base, even for 0 */
		qsort(c->local_guids, c->nlocal_guids, sizeof(guidid_t), cmp_guidid);
	c->local_guids_loaded = r == 0;
	return r;
}

/* Datasets are matched by guid inside the stream's scope: a dataset the
 * sender renamed is renamed here too (-R).  Its current name (a parent's
 * rename may have moved it) comes by id. */
static int find_by_guid(rctx_t *c, uint64_t guid, char *out)
{
	guidid_t key = {.guid = guid};
	if (!c->nlocal_guids)
		return -ENOENT;
	const guidid_t *e = bsearch(&key, c->local_guids, c->nlocal_guids, sizeof(key), cmp_guidid);
	if (!e)
		return -ENOENT;
	ds_row_t row = {0};
	int r = catalog_ds_by_id(c->st->cat, e->id, &row);
	if (r == 0)
		snprintf(out, NAME_BUF, "%s", row.name);
	ds_row_clear(&row);
	return r;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int exec_bind(rctx_t *c, const char *sql, int64_t a, const char *b)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat), sql, -1, &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, a);
	sqlite3_bind_text(q, 2, b, -1, SQLITE_STATIC);
	int r = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(q);
	return r;
}

static int cmp_cstrp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* With -R -F: the datasets under the stream's top that the sender no
 * longer has go.  A local dataset is one of the sender's when it has the
 * guid of a dataset the stream declares or, as zfs recv tells them apart,
 * when it holds a snapshot or bookmark with the guid of a snapshot the
 * stream lists, or when the stream receives into it by name: a copy made
 * by a receive without -R (a plain sync or send|recv) has a dataset guid
 * of its own.  A dataset with such a one
 * below it stays as well (a parent made by hand for the copy to go in):
 * destroying it would take the copy along.  cairn sync's dest_extra
 * applies the same rules to decide whether a stream has anything to
 * destroy. */
static int reconcile(rctx_t *c)
{
	sqlite3 *db = catalog_db(c->st->cat);
	sqlite3_stmt *q, *own;
	if (sqlite3_prepare_v2(db,
			       "SELECT name, guid, id FROM dataset WHERE name > ?1 || '/' AND"
			       " name < ?1 || '0' ORDER BY name",
			       -1, &q, NULL))
		return -EIO;
	if (sqlite3_prepare_v2(db,
			       "SELECT guid FROM snapshot WHERE dataset=?1"
			       " UNION ALL SELECT guid FROM bookmark WHERE dataset=?1",
			       -1, &own, NULL)) {
		sqlite3_finalize(q);
		return -EIO;
	}
	sqlite3_bind_text(q, 1, local_top(c), -1, SQLITE_STATIC);
	char **name = NULL;
	bool *kept = NULL;
	size_t n = 0, nsnaps = 0;
	int r = 0;
	for (size_t i = 0; i < c->nds; i++)
		nsnaps += c->ds[i].nsnaps;
	uint64_t *sent = malloc((c->nds + 1) * sizeof(*sent));
	uint64_t *snaps = malloc((nsnaps + 1) * sizeof(*snaps));
	if (!sent || !snaps)
		r = -ENOMEM;
	nsnaps = 0;
	for (size_t i = 0; r == 0 && i < c->nds; i++) {
		sent[i] = c->ds[i].guid;
		for (uint32_t k = 0; k < c->ds[i].nsnaps; k++)
			snaps[nsnaps++] = c->ds[i].snapguids[k];
	}
	if (r == 0) {
		qsort(sent, c->nds, sizeof(*sent), cmp_u64);
		qsort(snaps, nsnaps, sizeof(*snaps), cmp_u64);
	}
	/* The stream's datasets' local names too: one received into by name
	 * is the sender's, whatever its guids. */
	const char **here = r == 0 ? malloc((c->nds + 1) * sizeof(*here)) : NULL;
	if (r == 0 && !here)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < c->nds; i++)
		here[i] = c->ds[i].local;
	if (r == 0)
		qsort(here, c->nds, sizeof(*here), cmp_cstrp);
	while (r == 0 && sqlite3_step(q) == SQLITE_ROW) {
		uint64_t g = sqlite3_column_int64(q, 1);
		const char *dsname = (const char *)sqlite3_column_text(q, 0);
		bool keep = bsearch(&g, sent, c->nds, sizeof(g), cmp_u64) ||
			    bsearch(&dsname, here, c->nds, sizeof(*here), cmp_cstrp);
		sqlite3_bind_int64(own, 1, sqlite3_column_int64(q, 2));
		while (!keep && sqlite3_step(own) == SQLITE_ROW) {
			uint64_t s = sqlite3_column_int64(own, 0);
			keep = bsearch(&s, snaps, nsnaps, sizeof(s), cmp_u64) != NULL;
		}
		sqlite3_reset(own);
		char **p = realloc(name, (n + 1) * sizeof(*name));
		bool *k = p ? realloc(kept, (n + 1) * sizeof(*kept)) : NULL;
		name = p ? p : name;
		kept = k ? k : kept;
		if (!k || !(name[n] = strdup(dsname))) {
			r = -ENOMEM;
			break;
		}
		kept[n++] = keep;
	}
	sqlite3_finalize(q);
	sqlite3_finalize(own);
	free(sent);
	free(snaps);
	free(here);
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (kept[i])
			continue;
		/* by name, what begins with name[i] follows it */
		size_t l = strlen(name[i]);
		bool below = false;
		for (size_t j = i + 1; !below && j < n && !strncmp(name[j], name[i], l); j++)
			below = name[j][l] == '/' && kept[j];
		if (below)
			continue;
		ds_row_t d = {0};
		if (catalog_ds_by_name(c->st->cat, name[i], &d) < 0)
			continue; /* went with its parent */
		ds_row_clear(&d);
		cairn_destroy_opts dop = {.recursive = true};
		r = cairn_destroy(c->st, name[i], &dop);
		if (r == 0)
			note(c, "destroyed", name[i]);
	}
	for (size_t i = 0; i < n; i++)
		free(name[i]);
	free(name);
	free(kept);
	return r;
}

/* A SNAPLIST entry by guid: (guid, index) pairs sorted by guid, so each
 * local snapshot finds its entry by binary search, not by a scan. */
typedef struct guidix {
	uint64_t guid;
	uint32_t i;
} guidix_t;

static int cmp_guidix(const void *a, const void *b)
{
	uint64_t x = ((const guidix_t *)a)->guid, y = ((const guidix_t *)b)->guid;
	return x < y ? -1 : x > y;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A temporary name for a rename: one that no snapshot of the dataset has
 * right now and that no rename will end on, so it can never collide
 * whatever the sender's or the target's snapshots are called. */
static int temp_name(rctx_t *c, int64_t dsid, char **targets, size_t ntargets, uint64_t *next,
		     char *out, size_t outlen)
{
	for (;;) {
		snprintf(out, outlen, "recv-rename-%llu", (unsigned long long)(*next)++);
		snap_row_t row = {0};
		int r = catalog_snap_lookup(c->st->cat, dsid, out, &row);
		snap_row_clear(&row);
		if (r == 0)
			continue;
		if (r != -ENOENT)
			return r;
		const char *key = out;
		if (!bsearch(&key, targets, ntargets, sizeof(char *), cmp_strp))
			return 0;
	}
}

/* Whether -F destroys what the sender no longer has.  Only an incremental
 * replication stream (-R from a source the target's top holds) says what
 * the sender no longer has, as in zfs (recv_incremental_replication runs
 * only for a stream with a fromsnap; zfs-receive(8) -F).  A full -R
 * stream lists the sender's subtree, not the target's: what the target
 * holds besides it is unrelated, and stays. */
static int destroys_missing(rctx_t *c)
{
	if (!(c->flags & STREAM_F_RECURSIVE) || !c->o->force || !c->fromguid)
		return 0;
	/* The target's top must hold the source (a stream with no snapshot
	 * of the top, as sync sends, has no commit that would check it). */
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "SELECT 1 FROM dataset d WHERE d.name=?1 AND (EXISTS(SELECT 1 FROM"
			       " snapshot WHERE +dataset=d.id AND guid=?2) OR EXISTS(SELECT 1 FROM"
			       " bookmark WHERE dataset=d.id AND guid=?2))",
			       -1, &q, NULL))
		return -EIO;
	sqlite3_bind_text(q, 1, local_top(c), -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, (int64_t)c->fromguid);
	int r = sqlite3_step(q);
	sqlite3_finalize(q);
	return r == SQLITE_ROW ? 1 : r == SQLITE_DONE ? 0 : -EIO;
}

/* Whether a snapshot of d in the group being committed builds on guid.
 * The sender may list no snapshot of that guid and still send from it,
 * through a bookmark of it (sync, send -i #b): such a base is not "gone
 * from the sender", and destroying it would refuse that very snapshot. */
static bool group_builds_on(const rctx_t *c, const rds_t *d, uint64_t guid)
{
	for (size_t i = 0; i < c->npend; i++)
		if (c->pend[i].rds == d && c->pend[i].fromguid == guid)
			return true;
	return false;
}

/* Whether the group being committed has a snapshot of d. */
static bool group_has(const rctx_t *c, const rds_t *d)
{
	for (size_t i = 0; i < c->npend; i++)
		if (c->pend[i].rds == d)
			return true;
	return false;
}

/* Whether guid is one of the snapshots the sender lists for d. */
static bool listed(const rds_t *d, uint64_t guid)
{
	for (uint32_t k = 0; k < d->nsnaps; k++)
		if (d->snapguids[k] == guid)
			return true;
	return false;
}

/* -F: destroys left for a later group (drop_due) must not be refused
 * there, after the groups before it were committed: a held snapshot among
 * them refuses the receive now, as apply_snaplist's own destroys do.  Of
 * d's snapshots the sender lacks, only the one its stream builds on stays
 * (not known before its group), so with two of them held one goes: both
 * are named. */
static int due_drops_held(rctx_t *c, const rds_t *d)
{
	ds_row_t row = {0};
	if (catalog_ds_by_name(c->st->cat, d->local, &row) < 0)
		return 0;
	sqlite3_stmt *q = NULL;
	int r = sqlite3_prepare_v2(catalog_db(c->st->cat),
				   "SELECT name, guid FROM snapshot WHERE dataset=? AND userrefs>0 "
				   "ORDER BY createtxg",
				   -1, &q, NULL)
			? -EIO
			: 0;
	if (r == 0)
		sqlite3_bind_int64(q, 1, row.id);
	char first[NAME_BUF * 2] = "";
	while (r == 0 && sqlite3_step(q) == SQLITE_ROW) {
		if (listed(d, (uint64_t)sqlite3_column_int64(q, 1)))
			continue;
		if (first[0]) {
			r = store_err(c->st, CAIRN_EHELD,
				      "%s, %s@%s: snapshots held, of which -F destroys all but "
				      "the one %s's stream builds on; release them",
				      first, d->local, sqlite3_column_text(q, 0), d->local);
			break;
		}
		snprintf(first, sizeof(first), "%s@%s", d->local, sqlite3_column_text(q, 0));
	}
	if (q)
		sqlite3_finalize(q);
	ds_row_clear(&row);
	return r;
}

/* -R: snapshot renames (same guid, other name) and, when drop (-F, see
 * destroys_missing), destroys of the snapshots the sender no longer has. */
static int apply_snaplist(rctx_t *c, const rds_t *d, bool drop_missing)
{
	ds_row_t row = {0};
	if (catalog_ds_by_name(c->st->cat, d->local, &row) < 0)
		return 0;
	guidix_t *byguid = calloc(d->nsnaps + 1, sizeof(*byguid));
	if (!byguid) {
		ds_row_clear(&row);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < d->nsnaps; k++)
		byguid[k] = (guidix_t){d->snapguids[k], k};
	qsort(byguid, d->nsnaps, sizeof(*byguid), cmp_guidix);
	sqlite3_stmt *q = NULL;
	int r = 0;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "SELECT name, guid FROM snapshot WHERE dataset=? ORDER BY createtxg", -1,
			       &q, NULL))
		r = -EIO;
	else
		sqlite3_bind_int64(q, 1, row.id);
	char **from = NULL, **to = NULL;
	size_t n = 0, nren = 0;
	while (r == 0 && sqlite3_step(q) == SQLITE_ROW) {
		const char *ln = (const char *)sqlite3_column_text(q, 0);
		guidix_t key = {.guid = sqlite3_column_int64(q, 1)};
		const guidix_t *e = bsearch(&key, byguid, d->nsnaps, sizeof(*byguid), cmp_guidix);
		bool ren = e && strcmp(d->snapnames[e->i], ln);
		bool drop = !e && drop_missing && !group_builds_on(c, d, key.guid);
		if (!ren && !drop)
			continue;
		char **a = realloc(from, (n + 1) * sizeof(char *)), **b = realloc(to, (n + 1) * sizeof(char *));
		from = a ? a : from;
		to = b ? b : to;
		if (!a || !b || asprintf(&from[n], "%s@%s", d->local, ln) < 0) {
			r = -ENOMEM;
			break;
		}
		to[n] = ren ? strdup(d->snapnames[e->i]) : NULL;
		nren += ren;
		n++;
	}
	if (q)
		sqlite3_finalize(q);
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (!to[i]) {
			cairn_destroy_opts dop = {0};
			r = cairn_destroy(c->st, from[i], &dop);
			if (r == 0)
				note(c, "destroyed", from[i]);
		}
	}
	/* The names renames end on, sorted: temporary names avoid them. */
	char **targets = calloc(nren + 1, sizeof(char *));
	size_t nt = 0;
	if (!targets && r == 0)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++)
		if (to[i])
			targets[nt++] = to[i];
	if (r == 0)
		qsort(targets, nt, sizeof(char *), cmp_strp);
	/* Renames go through a temporary name first, so swapped names work. */
	uint64_t next = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (!to[i])
			continue;
		char tmp[64], final[NAME_BUF + 300];
		r = temp_name(c, row.id, targets, nt, &next, tmp, sizeof(tmp));
		if (r == 0)
			r = cairn_rename(c->st, from[i], tmp, false, false);
		/* Said now, under the old name; shown only if the group commits. */
		snprintf(final, sizeof(final), "%s@%s", d->local, to[i]);
		if (r == 0)
			note_rename(c, from[i], final);
		char *t2 = NULL;
		if (r == 0 && asprintf(&t2, "%s@%s", d->local, tmp) < 0)
			r = -ENOMEM;
		free(from[i]);
		from[i] = t2;
	}
	free(targets);
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (!to[i])
			continue;
		r = cairn_rename(c->st, from[i], to[i], false, false);
	}
	for (size_t i = 0; i < n; i++) {
		free(from[i]);
		free(to[i]);
	}
	free(from);
	free(to);
	free(byguid);
	ds_row_clear(&row);
	return r;
}

/* The key a stream dataset is encrypted with: its own CRYPTKEY, or that of
 * the nearest declared ancestor that has one; NULL for plain data. */
static const encroot_wrapped_t *stream_key(const rctx_t *c, const rds_t *d)
{
	if (d->key)
		return d->key;
	char up[NAME_BUF];
	snprintf(up, sizeof(up), "%s", d->name);
	for (char *slash; (slash = strrchr(up, '/'));) {
		*slash = 0;
		const rds_t *a = find_ds(c, up);
		if (a && a->key)
			return a->key;
	}
	return NULL;
}

/* The target is encrypted otherwise than the stream's data (encroot_recv_check
 * said -EINVAL): chunk ids are keyed per encryption root, so the stream
 * names chunks the target can never hold, and a resume of it could never
 * complete.  A refusal by the target, whose partial state goes (cairn_recv). */
static int crypt_refused(rctx_t *c, int r)
{
	if (r == -EINVAL)
		c->refused = c->source_gone = true;
	return r;
}

/* A raw stream's encrypted dataset becomes (or already is) encrypted with
 * the key it carries; plain data never lands below an encryption root. */
static int recv_crypt_apply(rctx_t *c, const rds_t *d, bool created)
{
	ds_row_t row = {0};
	int r = catalog_ds_by_name(c->st->cat, d->local, &row);
	if (r < 0)
		return store_err(c->st, r, "%s: %s", d->local, catalog_errmsg(c->st->cat));
	/* An existing root takes the stream's wrapping (same master keys,
	 * checked first): a change-key on the sender travels with the data. */
	bool rewrap = !created && d->key && encroot_is_root(c->st, &row) == 1;
	if (created && d->key)
		r = encroot_recv_root_in_txn(c->st, row.id, d->local, d->key);
	if (r == 0)
		r = crypt_refused(c, encroot_recv_check(c->st, &row, stream_key(c, d)));
	if (r == 0 && rewrap)
		r = encroot_recv_root_in_txn(c->st, row.id, d->local, d->key);
	ds_row_clear(&row);
	return r;
}

/* recv -o keylocation= on the encryption root a raw stream brings. */
static int recv_keylocation(rctx_t *c, const rds_t *d, const char *value)
{
	return cairn_dataset_set(c->st, d->local,
				 &(cairn_prop){.name = "keylocation", .value = value}, 1);
}

/* The stream dataset that takes the dataset there named name elsewhere
 * (the sender has it under another name: it leaves name in this
 * receive), or NULL: the one find_by_guid takes for it, by id.  (Two datasets
 * there can have one guid, a copy received below the first: the one the
 * stream does not take stays where it is, in the way as before.) */
static const rds_t *leaves_name(rctx_t *c, const char *name)
{
	ds_row_t row = {0};
	const rds_t *leaves = NULL;
	if ((c->local_guids_loaded || load_local_guids(c) == 0) &&
	    catalog_ds_by_name(c->st->cat, name, &row) == 0)
		for (size_t i = 0; i < c->nds; i++) {
			if (c->ds[i].guid != row.guid)
				continue;
			guidid_t key = {.guid = row.guid};
			const guidid_t *e = c->nlocal_guids
				? bsearch(&key, c->local_guids, c->nlocal_guids, sizeof(key), cmp_guidid)
				: NULL;
			if (e && e->id == row.id && strcmp(c->ds[i].local, name))
				leaves = &c->ds[i];
			break;
		}
	ds_row_clear(&row);
	return leaves;
}

/* -R: moves the dataset at name, which the stream renames elsewhere, to a
 * temporary name beside it, so that another of the stream's datasets can
 * be renamed to name first.  (A swap, or a chain a -> b, b -> c taken in
 * that order, cannot be made one rename at a time; zfs receive parks
 * such a dataset under a temporary name too.)  Its own rename, later in
 * the stream, finds it there by id. */
static int park_leaving(rctx_t *c, const char *name, const rds_t *to)
{
	char tmp[NAME_BUF];
	const char *slash = strrchr(name, '/');
	if (!slash) /* the target's top: nothing beside it to park it in */
		return store_err(c->st, -EEXIST,
				 "%s: dataset already exists, and the stream moves it to %s: a"
				 " receive cannot move its target aside (receive into a new name)",
				 name, to->local);
	int plen = (int)(slash - name), r;
	for (unsigned n = 0;; n++) {
		snprintf(tmp, sizeof(tmp), "%.*s/recv-rename-%u", plen, name, n);
		ds_row_t row = {0};
		r = catalog_ds_by_name(c->st->cat, tmp, &row);
		ds_row_clear(&row);
		bool streams = false;
		for (size_t i = 0; i < c->nds && !streams; i++)
			streams = !strcmp(c->ds[i].local, tmp);
		if (r == -ENOENT && !streams)
			break;
		if (r < 0 && r != -ENOENT)
			return store_err(c->st, r, "%s: %s", tmp, catalog_errmsg(c->st->cat));
	}
	r = cairn_rename(c->st, name, tmp, false, false);
	if (r == 0)
		note_rename(c, name, tmp);
	return r;
}

/* Creates (or checks) the local dataset of a stream dataset and sets its
 * properties: the stream's with -R, and -o on the top dataset only (the
 * children inherit, as in zfs). */
static int apply_dataset(rctx_t *c, const rds_t *d, bool top)
{
	char old[NAME_BUF];
	int r = 0;
	/* The dataset there under this name may go elsewhere in this stream
	 * (a swap, a chain, an old name taken by a new dataset): it makes
	 * way first. */
	const rds_t *to = c->flags & STREAM_F_RECURSIVE ? leaves_name(c, d->local) : NULL;
	if (to)
		r = park_leaving(c, d->local, to);
	if (r == 0 && (c->flags & STREAM_F_RECURSIVE) && find_by_guid(c, d->guid, old) == 0 &&
	    strcmp(old, d->local)) {
		r = cairn_rename(c->st, old, d->local, false, true);
		if (r == 0)
			note_rename(c, old, d->local);
	}
	/* read_dataset checked before the renames; another command may have
	 * left a partial state since (only the top's can be this stream's). */
	if (r == 0 && !top)
		r = check_no_state(c, d->local);
	/* -o is a local value; the stream's are received values (below).
	 * keylocation for the root a raw stream brings is set once it is
	 * one (recv_crypt_apply), as zfs allows. */
	const char *keyloc = NULL;
	cairn_prop *props = calloc((top ? c->o->nprops : 0) + 1, sizeof(*props));
	if (!props)
		return -ENOMEM;
	size_t np = 0;
	for (size_t i = 0; top && i < c->o->nprops; i++) {
		if (d->key && !strcmp(c->o->props[i].name, "keylocation"))
			keyloc = c->o->props[i].value;
		else
			props[np++] = c->o->props[i];
	}
	ds_row_t row = {0};
	bool created = false;
	encroot_receiving(true);
	int k = r ? r : catalog_ds_by_name(c->st->cat, d->local, &row);
	if (k == 0) {
		if (row.type != d->type)
			r = store_err(c->st, -EINVAL, "%s: exists as a %s", d->local,
				      row.type == CAIRN_TYPE_VOLUME ? "volume" : "filesystem");
		if (r == 0 && np)
			r = cairn_dataset_set(c->st, d->local, props, np);
	} else if (k == -ENOENT) {
		/* Below the target, missing parents come from the stream's own tree. */
		r = recv_create(c, d->local, d->type, props, np,
				strcmp(d->local, c->o->target) != 0);
		if (r == 0 && (c->flags & STREAM_F_RECURSIVE))
			r = exec_bind(c, "UPDATE dataset SET guid=? WHERE name=?", (int64_t)d->guid,
				      d->local);
		if (r == 0)
			note(c, "created", d->local);
		created = true;
	} else {
		r = k;
	}
	if (r == 0 && (c->flags & STREAM_F_RECURSIVE))
		r = props_receive(c->st, d->local, d->props, d->nprops);
	encroot_receiving(false);
	ds_row_clear(&row);
	free(props);
	if (r == 0)
		r = recv_crypt_apply(c, d, created);
	if (r == 0 && keyloc)
		r = recv_keylocation(c, d, keyloc);
	return r;
}

static int apply_meta(rctx_t *c)
{
	int r = load_local_guids(c);
	for (size_t i = 0; r == 0 && i < c->nds; i++)
		r = apply_dataset(c, &c->ds[i], i == 0);
	/* After the renames: the top may have just got its name. */
	int drop = r == 0 ? destroys_missing(c) : 0;
	if (drop < 0)
		r = store_err(c->st, drop, "%s: looking up the stream's source", local_top(c));
	/* A dataset's first snapshot may come in a later group, built on one
	 * the sender lists none of (a bookmark's): its destroys wait for it. */
	for (size_t i = 0; r == 0 && i < c->nds; i++) {
		rds_t *d = &c->ds[i];
		bool now = drop > 0 && (c->at_end || group_has(c, d));
		if (d->has_list)
			r = apply_snaplist(c, d, now);
		d->drop_due = d->has_list && drop > 0 && !now;
		if (r == 0 && d->drop_due)
			r = due_drops_held(c, d);
	}
	/* A stream that skipped datasets (send -R -s) does not list all the
	 * sender's: what it lacks may still be there, so nothing goes. */
	if (r == 0 && drop > 0 && !(c->flags & STREAM_F_SKIPPED))
		r = reconcile(c);
	return r;
}

/* ---- one snapshot ---- */

static int read_refs(rctx_t *c, buf_t *out)
{
	uint32_t n = sr_u32(&c->rd);
	if (n > (1u << 20))
		return bad(c, "too many root chunks");
	const uint8_t *p = sr_bytes(&c->rd, (size_t)n * CHUNK_REF_WIRE);
	out->len = 0;
	if (!p)
		return bad(c, "truncated root list");
	for (uint32_t i = 0; i < n; i++) {
		chunk_ref_t ref;
		chunk_ref_unpack(p + i * CHUNK_REF_WIRE, &ref);
		if (!ref.plain_len || ref.plain_len > CHUNK_MAX_PLAIN)
			return bad(c, "root chunk with an impossible length");
	}
	return buf_append(out, p, (size_t)n * CHUNK_REF_WIRE);
}

/* ---- the target's snapshots, per dataset ---- */

static void snapcache_clear(snapcache_t *sc)
{
	for (size_t i = 0; i < sc->n; i++)
		free(sc->v[i].name);
	free(sc->v);
	free(sc->byguid);
	free(sc->byname);
	memset(sc, 0, sizeof(*sc));
}

/* Forgets every dataset's snapshots: after apply_meta (renames, destroys)
 * and after a commit that failed (its inserts were rolled back). */
static void snapcaches_drop(rctx_t *c)
{
	for (size_t i = 0; i < c->nds; i++)
		snapcache_clear(&c->ds[i].snaps);
}

static size_t guid_slot(const snapcache_t *sc, uint64_t g)
{
	return XXH3_64bits(&g, sizeof(g)) & (sc->hcap - 1);
}

static size_t sname_slot(const snapcache_t *sc, const char *name)
{
	return XXH3_64bits(name, strlen(name)) & (sc->hcap - 1);
}

static void snapcache_index(snapcache_t *sc, size_t i)
{
	size_t h = guid_slot(sc, sc->v[i].guid);
	while (sc->byguid[h])
		h = (h + 1) & (sc->hcap - 1);
	sc->byguid[h] = i + 1;
	h = sname_slot(sc, sc->v[i].name);
	while (sc->byname[h])
		h = (h + 1) & (sc->hcap - 1);
	sc->byname[h] = i + 1;
}

/* Appends a snapshot (the newest), growing the tables to stay half empty. */
static int snapcache_add(snapcache_t *sc, int64_t id, uint64_t guid, const char *name)
{
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? 2 * sc->cap : 64;
		lsnap_t *v = realloc(sc->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		sc->v = v;
		sc->cap = cap;
	}
	char *dup = strdup(name);
	if (!dup)
		return -ENOMEM;
	sc->v[sc->n++] = (lsnap_t){id, guid, dup};
	if (2 * sc->n > sc->hcap) {
		size_t hcap = sc->hcap ? 2 * sc->hcap : 128;
		size_t *a = calloc(hcap, sizeof(*a)), *b = calloc(hcap, sizeof(*b));
		if (!a || !b) {
			free(a);
			free(b);
			free(sc->v[--sc->n].name);
			return -ENOMEM;
		}
		free(sc->byguid);
		free(sc->byname);
		sc->byguid = a;
		sc->byname = b;
		sc->hcap = hcap;
		for (size_t i = 0; i + 1 < sc->n; i++)
			snapcache_index(sc, i);
	}
	snapcache_index(sc, sc->n - 1);
	return 0;
}

/* The index of the snapshot with this guid, or SIZE_MAX. */
static size_t snapcache_guid(const snapcache_t *sc, uint64_t g)
{
	if (!sc->hcap)
		return SIZE_MAX;
	for (size_t h = guid_slot(sc, g); sc->byguid[h]; h = (h + 1) & (sc->hcap - 1))
		if (sc->v[sc->byguid[h] - 1].guid == g)
			return sc->byguid[h] - 1;
	return SIZE_MAX;
}

static size_t snapcache_name(const snapcache_t *sc, const char *name)
{
	if (!sc->hcap)
		return SIZE_MAX;
	for (size_t h = sname_slot(sc, name); sc->byname[h]; h = (h + 1) & (sc->hcap - 1))
		if (!strcmp(sc->v[sc->byname[h] - 1].name, name))
			return sc->byname[h] - 1;
	return SIZE_MAX;
}

/* The catalog's data_version: it changes when another process commits
 * (a snapshot taken, destroyed or renamed between two of our groups),
 * never for this connection's own writes. */
static int64_t data_version(rctx_t *c)
{
	sqlite3_stmt *q;
	int64_t v = -1;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat), "PRAGMA data_version", -1, &q, NULL))
		return -1;
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

/* The snapshots of dataset dsid (the local dataset of d), read once and
 * again only after another process changed the catalog. */
static int snapcache_get(rctx_t *c, rds_t *d, int64_t dsid, snapcache_t **out)
{
	snapcache_t *sc = &d->snaps;
	*out = sc;
	int64_t dv = data_version(c);
	if (sc->dsid == dsid && dv >= 0 && sc->dv == dv)
		return 0;
	snapcache_clear(sc);
	sc->dv = dv;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "SELECT id, name, guid FROM snapshot WHERE dataset=? ORDER BY createtxg",
			       -1, &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, dsid);
	int r = 0, k;
	while (r == 0 && (k = sqlite3_step(q)) == SQLITE_ROW)
		r = snapcache_add(sc, sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 2),
				  (const char *)sqlite3_column_text(q, 1));
	if (r == 0 && k != SQLITE_DONE)
		r = -EIO;
	sqlite3_finalize(q);
	if (r < 0)
		snapcache_clear(sc);
	else
		sc->dsid = dsid;
	return r;
}

/* What the target has of this snapshot: 1 = the same guid is there (skip
 * it), 0 = nothing in the way; an error for the same name with another
 * guid (without -F) or a full stream onto a dataset with snapshots. */
static int target_has(rctx_t *c, const psnap_t *s)
{
	ds_row_t d = {0};
	if (catalog_ds_by_name(c->st->cat, s->target, &d) < 0)
		return 0;
	/* The dataset there now goes elsewhere in this stream before the
	 * snapshot lands (park_leaving): what it holds is not in the way.
	 * Only until the first commit, which makes every rename (asking at
	 * every snapshot cost a full receive of 18,000 snapshots 5-9 %). */
	if ((c->flags & STREAM_F_RECURSIVE) && !c->meta_applied && leaves_name(c, s->target)) {
		ds_row_clear(&d);
		return 0;
	}
	snapcache_t *sc;
	int r = snapcache_get(c, s->rds, d.id, &sc);
	if (r < 0) {
		ds_row_clear(&d);
		return r;
	}
	size_t same = snapcache_guid(sc, s->guid), named = snapcache_name(sc, s->name);
	uint64_t other = named != SIZE_MAX ? sc->v[named].guid : 0;
	c->refused = same == SIZE_MAX && ((other && !c->o->force) || (!s->fromguid && sc->n));
	if (same != SIZE_MAX)
		r = 1;
	else if (other && !c->o->force)
		r = store_err(c->st, -EEXIST,
			      "%s@%s: exists with guid %llu, the stream's %s@%s has guid %llu "
			      "(not the same snapshot)",
			      s->target, s->name, (unsigned long long)other, s->target, s->name,
			      (unsigned long long)s->guid);
	/* zfs refuses this even with -F: a full stream never overwrites
	 * a dataset that has snapshots. */
	else if (!s->fromguid && sc->n)
		r = store_err(c->st, -EEXIST,
			      "destination has snapshots (eg. %s@%s)\nmust destroy them to overwrite it",
			      s->target, sc->v[0].name);
	ds_row_clear(&d);
	return r;
}

static int source_not_on_target(rctx_t *c, const char *dsname, uint64_t fromguid)
{
	c->refused = true;
	c->source_gone = true;
	return store_err(c->st, -ENOENT,
			 "%s: the stream's incremental source (guid %llu) is not on the target",
			 dsname, (unsigned long long)fromguid);
}

/* An incremental snapshot whose source is neither on the target nor earlier
 * in this group.  Its chunks that the source holds are then missing too;
 * the missing source is the cause to name, as zfs names it. */
static bool source_missing(rctx_t *c, const psnap_t *s)
{
	if (!s->fromguid)
		return false;
	for (size_t i = 0; i < c->npend; i++)
		if (c->pend[i].rds == s->rds && c->pend[i].guid == s->fromguid)
			return false;
	ds_row_t ds = {0};
	snapcache_t *sc;
	bool missing = dataset_lookup(c->st, s->target, &ds) < 0 ||
		       (snapcache_get(c, s->rds, ds.id, &sc) == 0 &&
			snapcache_guid(sc, s->fromguid) == SIZE_MAX);
	ds_row_clear(&ds);
	return missing;
}

/* A resumed stream skips the chunks of the group in flight that the
 * interrupted receive had stored, by position in the group.  A chunk so
 * skipped that is not here means the sender's group is not the one that
 * was cut (a snapshot of it destroyed there, a dataset renamed, which
 * moves the positions): this state can never complete, and is discarded
 * (as for a source gone), so that sending again starts the group anew. */
static int group_changed(rctx_t *c, const psnap_t *s)
{
	c->refused = true;
	c->source_gone = true;
	/* A dry run discards nothing (recv -n changes nothing). */
	return store_err(c->st, -ESTALE,
			 "%s@%s: the resumed stream does not continue the interrupted receive "
			 "(the group in flight changed on the sender since the cut: a snapshot "
			 "destroyed or a dataset renamed there?): %s",
			 s->target, s->name,
			 c->o->dryrun ? "a receive would discard its partial state (this dry run "
					"keeps it)"
				      : "its partial state is discarded; send again");
}

/* Whether the dataset s goes into, if it exists, is encrypted as the
 * stream's data is (recv_crypt_apply checks again at the commit).  Asked
 * when the snapshot's record comes, before any of its chunks, so that a
 * plain incremental onto a raw-received copy (or a raw one onto a plain
 * copy) is refused before data moves, as zfs checks before it receives,
 * and not as chunks "neither sent nor present" once all came.  Once per
 * dataset; with -R only after the first commit (before it, pending renames
 * may yet change which dataset a name is, and the commit checks), unless
 * anyway (read_snapend: a chunk is missing, and this may be why). */
static int crypt_fits_target(rctx_t *c, const psnap_t *s, bool anyway)
{
	if (s->rds->crypt_checked ||
	    (!anyway && (c->flags & STREAM_F_RECURSIVE) && !c->meta_applied))
		return 0;
	ds_row_t row = {0};
	if (catalog_ds_by_name(c->st->cat, s->target, &row) < 0)
		return 0; /* created by the commit, which checks it */
	int r = crypt_refused(c, encroot_recv_check(c->st, &row, stream_key(c, s->rds)));
	ds_row_clear(&row);
	s->rds->crypt_checked = r == 0;
	return r;
}

/* A raw stream's datasets that no CRYPTKEY gave a key (they all come
 * before the first snapshot) are plain: plain_fits, at that first
 * snapshot record, before any chunk. */
static int raw_plain_fit(rctx_t *c)
{
	char old[NAME_BUF];
	int r = 0;
	for (size_t i = 0; r == 0 && i < c->nds; i++)
		if (!stream_key(c, &c->ds[i]))
			r = plain_fits(c, i ? receives_into(c, &c->ds[i], old) : c->ds[i].local);
	return r;
}

static int read_snap(rctx_t *c)
{
	char why[256], dsname[NAME_BUF], full[NAME_BUF * 2];
	psnap_t *s = &c->cur;
	psnap_clear(s);
	sr_str(&c->rd, dsname, sizeof(dsname));
	s->name = sr_strdup(&c->rd, 255);
	s->guid = sr_u64(&c->rd);
	s->fromguid = sr_u64(&c->rd);
	uint64_t txg = sr_u64(&c->rd);
	s->creation = (int64_t)sr_u64(&c->rd);
	sr_u64(&c->rd); /* referenced and logical: recomputed from the index */
	sr_u64(&c->rd);
	uint32_t np = sr_u32(&c->rd);
	if (!s->name || c->rd.bad || np > MAX_PROPS || np > (c->rd.rec.len - c->rd.pos) / 4)
		return bad(c, "malformed SNAP record");
	s->props = np ? calloc(np, sizeof(*s->props)) : NULL;
	if (np && !s->props)
		return -ENOMEM;
	for (uint32_t i = 0; i < np; i++) {
		char *k = sr_strdup(&c->rd, 255), *v = sr_strdup(&c->rd, PROP_VALUE_MAX);
		if (k && v)
			s->props[s->nprops++] = (cairn_prop){k, v};
		if (!k || !v || !strchr(k, ':')) {
			if (!(k && v)) {
				free(k);
				free(v);
			}
			return bad(c, "snapshot property is not a user property");
		}
	}
	int r = read_refs(c, &s->tree);
	if (r == 0)
		r = read_refs(c, &s->idx);
	if (r == 0 && sr_done(&c->rd))
		r = bad(c, "malformed SNAP record");
	if (r < 0)
		return r;
	snprintf(full, sizeof(full), "%s@%s", dsname, s->name);
	if (cairn_name_check(full, true, why, sizeof(why)) < 0)
		return bad(c, why);
	if (!s->guid || !txg)
		return bad(c, "snapshot guid or createtxg 0");
	if (s->creation < 0 || s->creation > CREATION_MAX)
		return bad(c, "snapshot creation time out of range");
	c->cur_ds = find_ds(c, dsname);
	if (!c->cur_ds)
		return bad(c, "snapshot of a dataset the stream did not declare");
	snprintf(s->target, sizeof(s->target), "%s", c->cur_ds->local);
	s->sent_ds = c->cur_ds->name;
	s->rds = (rds_t *)c->cur_ds;
	/* Groups come in increasing createtxg; a new one starts here. */
	if (c->npend || c->nskipped_in_group) {
		if (txg != c->group_txg)
			return bad(c, "group ends without GROUPEND");
	} else {
		if (txg <= c->last_group_txg)
			return bad(c, "groups out of order");
		if (!c->any_snap && (c->flags & STREAM_F_RESUMED) && txg != c->resume_txg)
			return bad(c, "resumed stream starts at another group");
		if (c->any_snap || !(c->flags & STREAM_F_RESUMED)) {
			refset_free(&c->got);
			c->group_pos = 0;
		} else {
			c->group_pos = c->resume_skip;
		}
		c->group_txg = txg;
		c->gids.len = 0;
		c->gcover = 0;
	}
	rds_t *cur = (rds_t *)c->cur_ds;
	if (cur->group_mark == txg)
		return bad(c, "two snapshots of one dataset in a group");
	cur->group_mark = txg;
	if (token_group_add(&c->gids, s->guid, s->fromguid) < 0)
		return -ENOMEM;
	if (!c->any_snap && (c->flags & STREAM_F_RAW) && (r = raw_plain_fit(c)) < 0)
		return r;
	c->any_snap = true;
	r = target_has(c, s);
	if (r < 0)
		return r;
	c->skipping = r == 1;
	if (!c->skipping && (r = crypt_fits_target(c, s, false)) < 0)
		return r;
	if (c->skipping) {
		snprintf(full, sizeof(full), "%s@%s", s->target, s->name);
		if (c->o->item)
			c->o->item(c->o->dryrun ? "would skip (already present)"
						: "skipped (already present)",
				   full, c->o->arg);
	}
	if (c->scratch && !c->skipping) {
		/* the chunks to keep in the scratch store when they come */
		refset_free(&c->roots);
		for (int pass = 0; pass < 2; pass++) {
			const buf_t *b = pass ? &s->idx : &s->tree;
			for (size_t i = 0; i < b->len / CHUNK_REF_WIRE; i++) {
				chunk_ref_t ref;
				chunk_ref_unpack(b->data + i * CHUNK_REF_WIRE, &ref);
				if (refset_add(&c->roots, &ref) < 0)
					return -ENOMEM;
			}
		}
	}
	/* Only a snapshot that passed its checks may leave partial state. */
	c->in_snap = true;
	return 0;
}

/* One more chunk position of the group is on the receiver (stored, or
 * in a snapshot the target has): a token may skip it.  Every position
 * the count covers lies in this snapshot or one before it (chunks come
 * after their SNAP record, and a position is never counted twice), so
 * the token's digest covers the snapshots up to this one - not one the
 * stream has only begun, whose loss on the sender moves no skipped
 * position (t0848). */
static void count_chunk(rctx_t *c)
{
	c->group_pos++;
	c->gcover = c->gids.len;
}

/* A verified chunk in a dry run: counted, remembered, and kept (in the
 * scratch store) only when it is a tree or index root the checks read. */
static int dry_chunk(rctx_t *c, chunk_ref_t *ref, const void *blob, size_t len)
{
	ref->stored_len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	if (!refset_has(&c->seen, &ref->digest) && chunkstore_has(c->real_cs, &ref->digest) < 0)
		c->o->chunks_new++;
	int r = 0;
	if (refset_has(&c->roots, &ref->digest)) {
		uint32_t stored;
		bool isnew;
		r = chunkstore_put_blob(c->st->cs, &ref->digest, blob, len, &stored, &isnew);
		if (r < 0)
			return store_err(c->st, r, "scratch chunk store: %s", strerror(-r));
	}
	if (refset_add(&c->seen, ref) < 0)
		return -ENOMEM;
	count_chunk(c);
	if (c->o->progress && mono_ns() - c->last_progress > 200000000) {
		c->last_progress = mono_ns();
		cairn_progress p = {.phase = "recv", .object = c->cur.target, .bytes = c->rd.offset};
		c->o->progress(&p, c->o->arg);
	}
	return r;
}

/* Stores a chunk the queue verified, in stream order: what read_chunk did
 * after the check before the checks moved to worker threads. */
static int finish_chunk(rctx_t *c, const rchunk_t *k)
{
	digest_t dg;
	memcpy(dg.b, k->rec.data, DIGEST_LEN);
	const uint8_t *blob = k->rec.data + DIGEST_LEN;
	size_t len = k->rec.len - DIGEST_LEN;
	if (k->err == -ENOMEM)
		return -ENOMEM;
	if (k->err < 0) {
		char hex[DIGEST_HEX_LEN + 1];
		digest_to_hex(&dg, hex);
		return store_err(c->st, CAIRN_ECORRUPT,
				 "stream is invalid at byte %llu: chunk %s does not match its digest",
				 (unsigned long long)k->offset, hex);
	}
	chunk_ref_t ref = {.digest = dg, .plain_len = k->plain_len};
	if (c->scratch)
		return dry_chunk(c, &ref, blob, len);
	bool isnew;
	int r = chunkstore_put_blob(c->st->cs, &dg, blob, len, &ref.stored_len, &isnew);
	if (r < 0)
		return store_chunk_err(c->st, r, &dg);
	if (isnew)
		c->o->chunks_new++;
	if (refset_add(&c->got, &ref) < 0)
		return -ENOMEM;
	/* Counted once stored: a resume token never skips a chunk we lack. */
	count_chunk(c);
	c->since_checkpoint_chunks++;
	c->since_checkpoint_bytes += len;
	if (c->o->resumable && (c->since_checkpoint_chunks >= CHECKPOINT_CHUNKS ||
				c->since_checkpoint_bytes >= CHECKPOINT_BYTES))
		r = checkpoint(c);
	if (c->o->progress && mono_ns() - c->last_progress > 200000000) {
		c->last_progress = mono_ns();
		cairn_progress p = {.phase = "recv", .object = c->cur.target, .bytes = c->rd.offset};
		c->o->progress(&p, c->o->arg);
	}
	return r;
}

/* Takes the oldest queued chunk back from the workers and stores it. */
static int finish_oldest(rctx_t *c)
{
	int r = finish_chunk(c, recvq_oldest(c->vq));
	recvq_release(c->vq);
	return r;
}

/* Every queued chunk stored, in order, or the first one's error: done
 * before any record other than a chunk acts, and before any error of the
 * stream is reported, so the outcome is the one-at-a-time receive's. */
static int drain_chunks(rctx_t *c)
{
	int r = 0;
	while (r == 0 && recvq_pending(c->vq))
		r = finish_oldest(c);
	return r;
}

/* Verifying workers: CAIRN_RECV_THREADS (for tests and benchmarks), else
 * one per CPU. */
static int recv_threads(void)
{
	const char *s = getenv("CAIRN_RECV_THREADS");
	return s && *s ? atoi(s) : 0;
}

/* Queues the chunk for verification on the workers; it is stored when it
 * comes back, in stream order (finish_chunk). */
static int read_chunk(rctx_t *c)
{
	if (!c->in_snap)
		return bad(c, "chunk outside a snapshot");
	const uint8_t *d = sr_bytes(&c->rd, DIGEST_LEN);
	size_t len = c->rd.rec.len - c->rd.pos;
	const uint8_t *blob = sr_bytes(&c->rd, len);
	if (!d || !blob) {
		int r = drain_chunks(c);
		return r < 0 ? r : bad(c, "malformed CHUNK record");
	}
	if (c->skipping) {
		count_chunk(c);
		return 0; /* the target has this snapshot already */
	}
	int r = 0;
	if (!c->vq && (r = recvq_open(&c->vq, recv_threads(), 0)) < 0)
		return store_err(c->st, r, "starting the chunk-verifying threads: %s", strerror(-r));
	rchunk_t *k;
	while (!(k = recvq_slot(c->vq)))
		if ((r = finish_oldest(c)) < 0)
			return r;
	/* The record's buffer goes with the job; the reader takes the slot's
	 * spare one for the next record (no copy). */
	buf_t spare = k->rec;
	k->rec = c->rd.rec;
	c->rd.rec = spare;
	k->offset = c->rd.offset;
	k->raw = c->flags & STREAM_F_RAW;
	recvq_submit(c->vq, k);
	return 0;
}

/* The tree must describe something restore can rebuild: one root of the
 * dataset's type first, paths strictly increasing in traversal order (so
 * unique), every entry's parent a directory met before it, sizes and the
 * extents covering them within sane limits, and every chunk or bundle it
 * names listed in the index (checked by the caller's set). */
typedef struct treecheck {
	char **dirs; /* the directories enclosing the current entry */
	size_t ndirs, cap;
	char *prev;
	uint64_t covered, size; /* extents of the current regular file */
	bool any, in_reg;
} treecheck_t;

static const char *tree_entry_check(treecheck_t *t, const tree_entry_t *e, int dstype)
{
	if (e->type == TREE_CONT) {
		if (!t->in_reg)
			return "extent continuation without a file";
	} else {
		const char *p = e->path ? e->path : "";
		if (!t->any) {
			if (p[0])
				return "tree does not start with its root";
			if (dstype == CAIRN_TYPE_VOLUME ? e->type != TREE_REG : e->type != TREE_DIR)
				return "tree root has the wrong type for the dataset";
		} else {
			if (!p[0])
				return "a second root in the tree";
			if (dstype == CAIRN_TYPE_VOLUME)
				return "a volume with more than one entry";
			if (tree_path_cmp(t->prev, p) >= 0)
				return "tree paths out of order or duplicated";
			/* Pop to the entry's parent directory, which must be open. */
			const char *slash = strrchr(p, '/');
			size_t plen = slash ? (size_t)(slash - p) : 0;
			while (t->ndirs && (strlen(t->dirs[t->ndirs - 1]) != plen ||
					    strncmp(t->dirs[t->ndirs - 1], p, plen)))
				free(t->dirs[--t->ndirs]);
			if (!t->ndirs)
				return "tree entry before (or without) its parent directory";
		}
		if (e->type == TREE_DIR) {
			if (t->ndirs == t->cap) {
				size_t n = t->cap ? t->cap * 2 : 16;
				char **d = realloc(t->dirs, n * sizeof(*d));
				if (!d)
					return "out of memory";
				t->dirs = d;
				t->cap = n;
			}
			if (!(t->dirs[t->ndirs] = strdup(p)))
				return "out of memory";
			t->ndirs++;
		}
		free(t->prev);
		if (!(t->prev = strdup(p)))
			return "out of memory";
		t->any = true;
		t->in_reg = e->type == TREE_REG;
		t->covered = 0;
		t->size = e->size;
		if (e->size > FILE_SIZE_MAX)
			return "file size beyond any sane limit";
		if (e->content == TREE_CONTENT_BUNDLE &&
		    (uint64_t)e->bundle_off + e->size > e->bundle.plain_len)
			return "file extends beyond its bundle";
	}
	for (uint32_t i = 0; i < e->nextent; i++) {
		uint64_t l = e->extents[i].length;
		if (l > FILE_SIZE_MAX || t->covered + l > t->size)
			return "extents or holes beyond the file's size";
		t->covered += l;
	}
	return NULL;
}

static void treecheck_free(treecheck_t *t)
{
	while (t->ndirs)
		free(t->dirs[--t->ndirs]);
	free(t->dirs);
	free(t->prev);
}

/* Every chunk the snapshot lists must be here (the stream carried it, or
 * the target had it); touching it also tells GC it is used.  The tree must
 * parse, pass tree_entry_check and reference only chunks its index lists,
 * so a committed snapshot always restores. */
/* 0 when the chunk was sent or the store has it.  A real receive
 * touches it (GC then keeps it); a dry run reads through its scratch
 * store, whose touch only looks at the store. */
static int have_chunk(rctx_t *c, const digest_t *d)
{
	if (refset_has(&c->seen, d))
		return 0;
	return chunkstore_touch(c->st->cs, d);
}

/* A plain snapshot's chunk that the stream did not send (the receiver
 * said it had it) must not be a sealed blob: only a raw stream can have
 * filed one under a plain chunk's SHA-256, and the snapshot would not
 * restore.  Each one found is set aside as <digest>.bad (counted in
 * *nsealed, the first in *first), so sending again (or sync) stores the
 * plain chunks and converges. */
static void plain_on_disk(rctx_t *c, const digest_t *d, size_t *nsealed, digest_t *first)
{
	/* A dry run's store is its scratch one: the blobs are in the real one. */
	if (refset_has(&c->seen, d) || !chunkstore_sealed_at(c->scratch ? c->real_cs : c->st->cs, d))
		return;
	if (!(*nsealed)++)
		*first = *d;
	if (!c->scratch)
		chunkstore_set_aside(c->st->cs, d);
}

static int sealed_found(rctx_t *c, const psnap_t *s, size_t n, const digest_t *first)
{
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(first, hex);
	return store_err(c->st, CAIRN_ECORRUPT,
			 "%s@%s: %zu chunk(s) on the receiver, the first %s, are encrypted blobs "
			 "where plain chunks belong (filed by a raw stream?)%s",
			 s->target, s->name, n, hex,
			 c->scratch ? "" : "; set aside as .bad: send again to store the chunks");
}

static int chunk_not_found(rctx_t *c, const psnap_t *s, const digest_t *d, int h,
			   const char *kind);

/* 1 when the snapshot's tree chunks are encrypted (allowed only in a raw
 * stream), 0 when plain. */
static int tree_sealed(rctx_t *c, const psnap_t *s)
{
	if (s->tree.len < CHUNK_REF_WIRE)
		return 0;
	chunk_ref_t ref;
	chunk_ref_unpack(s->tree.data, &ref);
	buf_t raw = {0};
	int r = chunkstore_get_raw(c->st->cs, &ref.digest, &raw);
	bool sealed = r == 0 && blob_is_encrypted(raw.data, raw.len);
	buf_free(&raw);
	/* A read that failed (EIO from the disk) says nothing about the
	 * stream: reported as itself, naming the snapshot and the chunk. */
	if (r < 0 && r != CAIRN_ECORRUPT)
		return chunk_not_found(c, s, &ref.digest, r, "tree ");
	if (r < 0)
		return bad(c, "tree chunk unreadable");
	if (sealed && !(c->flags & STREAM_F_RAW))
		return bad(c, "encrypted tree in a stream that is not raw");
	return sealed;
}

/* A chunk snapshot s names that have_chunk or the index reader did not
 * confirm (h < 0); kind says which ("tree ", "index " or "" for data).
 * Missing (-ENOENT): the stream should have carried it; chunk_missing
 * tells read_snapend, which may blame a changed group, or keeps the
 * group's state with a token that skips none of it.  Any other error
 * (EIO from the disk or NFS while touching it) says nothing about the
 * stream: it is reported as itself, with its own code, so the message
 * points at the receiver's store and the partial state stays for a
 * retry (t0847). */
static int chunk_not_found(rctx_t *c, const psnap_t *s, const digest_t *d, int h,
			   const char *kind)
{
	c->chunk_missing = h == -ENOENT;
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(d, hex);
	if (h != -ENOENT)
		return store_err(c->st, h,
				 "%s@%s: %schunk %s: cannot check that it is on the receiver: %s",
				 s->target, s->name, kind, hex, cairn_strerror(h));
	return store_err(c->st, CAIRN_ECORRUPT,
			 "%s@%s: %schunk %s was neither sent nor present on the receiver",
			 s->target, s->name, kind, hex);
}

static int check_complete(rctx_t *c, const psnap_t *s, int dstype)
{
	for (size_t i = 0; i < s->tree.len / CHUNK_REF_WIRE; i++) {
		chunk_ref_t ref;
		chunk_ref_unpack(s->tree.data + i * CHUNK_REF_WIRE, &ref);
		int h = have_chunk(c, &ref.digest);
		if (h < 0)
			return chunk_not_found(c, s, &ref.digest, h, "tree ");
	}
	/* An encrypted tree (raw stream) cannot be read here: its chunks are
	 * checked for structure, its index for completeness.  A plain one's
	 * chunks must all be plain. */
	int sealed = tree_sealed(c, s);
	if (sealed < 0)
		return sealed;
	size_t nsealed = 0;
	digest_t first;
	for (size_t i = 0; !sealed && i < s->tree.len / CHUNK_REF_WIRE; i++) {
		chunk_ref_t ref;
		chunk_ref_unpack(s->tree.data + i * CHUNK_REF_WIRE, &ref);
		plain_on_disk(c, &ref.digest, &nsealed, &first);
	}
	int r = 0;
	refset_t listed = {0};
	idxrd_t x;
	idxrd_open(&x, c->st->cs, &s->idx);
	chunk_ref_t ref;
	int k;
	while (r == 0 && (k = idxrd_next(&x, &ref)) == 1) {
		int h = have_chunk(c, &ref.digest);
		if (h < 0) {
			r = chunk_not_found(c, s, &ref.digest, h, "");
		} else if (refset_add(&listed, &ref) < 0) {
			r = -ENOMEM;
		} else if (!sealed) {
			plain_on_disk(c, &ref.digest, &nsealed, &first);
		}
	}
	/* An index chunk the stream left out is a missing chunk like any
	 * other, not a damaged index: a retry must be able to fill it.  One
	 * that could not be read (EIO from the disk) is reported as itself,
	 * as a data chunk's is (t0847), not as a damaged stream. */
	if (r == 0 && k < 0 && k != CAIRN_ECORRUPT && idxrd_failed(&x, &ref))
		r = chunk_not_found(c, s, &ref.digest, k, "index ");
	idxrd_close(&x);
	if (r == 0 && k < 0)
		r = bad(c, "snapshot index unreadable or incomplete");
	if (r == 0 && nsealed)
		r = sealed_found(c, s, nsealed, &first);
	snaptree_t t = {0};
	tree_entry_t e = {0};
	treecheck_t tc = {0};
	bool opened = false;
	if (r == 0 && sealed)
		goto out;
	if (r == 0) {
		r = snaptree_open(&t, c->st->cs, &s->tree);
		opened = true;
	}
	while (r == 0 && (k = snaptree_next(&t, &e)) == 1) {
		const char *why = tree_entry_check(&tc, &e, dstype);
		if (why)
			r = bad(c, why);
		for (uint32_t i = 0; r == 0 && i < e.nextent; i++)
			if (e.extents[i].kind == TREE_EXT_CHUNK &&
			    !refset_has(&listed, &e.extents[i].ref.digest))
				r = bad(c, "tree references a chunk its index does not list");
		if (r == 0 && e.content == TREE_CONTENT_BUNDLE && !refset_has(&listed, &e.bundle.digest))
			r = bad(c, "tree references a bundle its index does not list");
		tree_entry_clear(&e);
	}
	if (r == 0 && k < 0)
		r = bad(c, "snapshot tree stream is not valid");
	/* An empty tree (no root) is a container's snapshot (source=none,
	 * lib/data/backup.c): taken as the sender's store holds it.  A
	 * volume always has its image. */
	if (r == 0 && !tc.any && dstype == CAIRN_TYPE_VOLUME)
		r = bad(c, "volume tree is empty");
out:
	treecheck_free(&tc);
	if (opened)
		snaptree_close(&t);
	refset_free(&listed);
	return r;
}

/* A snapshot failed its completeness check for a chunk the stream left
 * out (not in a resumed group, where that means the group changed and the
 * state is discarded).  Like any damaged stream, it leaves its group's
 * partial state (-s), also when it is the group's first snapshot (in_snap
 * is cleared by then).  A chunk left out was not counted, but the sender
 * counts its position: a token skipping by the count would skip it
 * again, and that resume would find it missing in the resumed group and
 * discard the state as a changed group.  So that token skips nothing of
 * the group: the resume sends all of it again (sync only what the
 * receiver lacks), and the gap is filled. */
static void keep_checked_group(rctx_t *c)
{
	c->keep_group = true;
	c->group_pos = 0;
	c->gcover = 0;
}

static int read_snapend(rctx_t *c)
{
	uint64_t g = sr_u64(&c->rd);
	if (sr_done(&c->rd) || !c->in_snap || g != c->cur.guid)
		return bad(c, "SNAPEND does not close the open snapshot");
	c->in_snap = false;
	if (c->skipping) {
		c->nskipped_in_group++;
		psnap_clear(&c->cur);
		return 0;
	}
	int r = c->scratch ? 0 : chunkstore_flush(c->st->cs);
	if (r < 0)
		return store_chunk_err(c->st, r, NULL);
	c->chunk_missing = false;
	r = check_complete(c, &c->cur, c->cur_ds->type);
	int why;
	if (r < 0 && source_missing(c, &c->cur))
		r = source_not_on_target(c, c->cur.target, c->cur.fromguid);
	else if (r < 0 && c->chunk_missing && (why = crypt_fits_target(c, &c->cur, true)) < 0)
		r = why;
	else if (r < 0 && c->chunk_missing && (c->flags & STREAM_F_RESUMED) &&
		 !c->last_group_txg && c->group_txg == c->resume_txg)
		r = group_changed(c, &c->cur);
	else if (r < 0 && c->chunk_missing)
		keep_checked_group(c);
	if (r < 0)
		return r;
	psnap_t *p = realloc(c->pend, (c->npend + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	c->pend = p;
	c->pend[c->npend++] = c->cur;
	memset(&c->cur, 0, sizeof(c->cur));
	return 0;
}

/* ---- the commit of a group ---- */

/* The snapshot the stream builds on must be the newest of the dataset;
 * -F rolls back to it: only snapshots newer than the source go. */
static int check_base(rctx_t *c, const ds_row_t *ds, const psnap_t *s, int64_t **drop,
		      size_t *ndrop)
{
	snapcache_t *sc;
	int r = snapcache_get(c, s->rds, ds->id, &sc);
	if (r < 0)
		return r;
	size_t n = sc->n, base = s->fromguid ? snapcache_guid(sc, s->fromguid) : SIZE_MAX;
	c->refused = !s->fromguid && n;
	if (c->refused)
		return store_err(c->st, -EEXIST,
				 "destination has snapshots (eg. %s@%s)\nmust destroy them to overwrite it",
				 ds->name, sc->v[0].name);
	if (s->fromguid && base == SIZE_MAX)
		return source_not_on_target(c, ds->name, s->fromguid);
	size_t keep = s->fromguid ? base + 1 : 0;
	c->refused = keep < n && !c->o->force;
	if (c->refused)
		return store_err(c->st, -EEXIST,
				 "%s: has %zu snapshot(s) newer than the stream's source (use -F to "
				 "roll back)",
				 ds->name, n - keep);
	if (keep < n) {
		*drop = malloc((n - keep) * sizeof(int64_t));
		if (!*drop)
			return -ENOMEM;
		for (size_t i = keep; i < n; i++) {
			(*drop)[i - keep] = sc->v[i].id;
			note_snapshot(c, "destroyed", ds->name, sc->v[i].name);
		}
		*ndrop = n - keep;
	}
	return 0;
}

static int insert_snap(rctx_t *c, psnap_t *s, uint64_t txg)
{
	ds_row_t ds = {0};
	int64_t *drop = NULL;
	size_t ndrop = 0;
	int r = dataset_lookup(c->st, s->target, &ds);
	if (r == 0)
		r = check_base(c, &ds, s, &drop, &ndrop);
	if (r == 0 && ndrop) {
		r = destroy_snapshots_in_txn(c->st, drop, ndrop, NULL);
		snapcache_clear(&s->rds->snaps); /* read again when next needed */
	}
	uint64_t referenced = 0, logical = 0;
	if (r == 0) {
		/* Space is recomputed from the index, not taken from the stream. */
		idxrd_t x;
		idxrd_open(&x, c->st->cs, &s->idx);
		chunk_ref_t ref;
		int k;
		while ((k = idxrd_next(&x, &ref)) == 1) {
			referenced += ref.stored_len;
			logical += ref.plain_len;
		}
		idxrd_close(&x);
		r = k;
	}
	snapnew_t sn = {.ds = ds.id, .dsname = ds.name, .name = s->name, .guid = s->guid,
			.creation = s->creation, .tree = &s->tree, .idx = &s->idx,
			.referenced = referenced, .logical = logical, .props = s->props,
			.nprops = s->nprops};
	if (r == 0)
		r = snapshot_insert(c->st, &sn, txg);
	/* The newest snapshot now: appended while the list is the dataset's. */
	snapcache_t *sc = &s->rds->snaps;
	if (r == 0 && sc->dsid == ds.id && snapcache_add(sc, sn.id, s->guid, s->name) < 0)
		snapcache_clear(sc);
	if (r == -EEXIST && !c->st->errdetail[0])
		r = store_err(c->st, r, "%s@%s: snapshot already exists", s->target, s->name);
	char full[NAME_BUF + 300];
	snprintf(full, sizeof(full), "%s@%s", s->target, s->name);
	if (r == 0 && !c->o->dryrun) {
		note(c, "received", full);
	} else if (r == 0) {
		/* zfs's wording for receive -nv */
		char what[NAME_BUF + 400];
		snprintf(what, sizeof(what), "would receive %s stream of %s@%s into",
			 s->fromguid ? "incremental" : "full", s->sent_ds, s->name);
		note(c, what, full);
	}
	free(drop);
	ds_row_clear(&ds);
	return r;
}

/* The destroys apply_meta left for a later group (drop_due): those of
 * the datasets with a snapshot in this one, all at the stream's end. */
static int apply_due_drops(rctx_t *c)
{
	int r = 0;
	bool any = false;
	for (size_t i = 0; r == 0 && i < c->nds; i++) {
		rds_t *d = &c->ds[i];
		if (!d->drop_due || !(c->at_end || group_has(c, d)))
			continue;
		d->drop_due = false;
		any = true;
		r = apply_snaplist(c, d, true);
	}
	if (any)
		snapcaches_drop(c);
	return r;
}

/* Metadata (first time), every snapshot of the group, and the end of any
 * partial state: one transaction. */
static int commit_group(rctx_t *c)
{
	c->ready = false;
	uint64_t txg;
	int r = 0;
	if (c->o->dryrun && !c->dry_txn) {
		/* rolled back by cairn_recv: the groups below are savepoints */
		r = catalog_begin_write(c->st->cat, &c->dry_txg);
		c->dry_txn = r == 0;
		if (c->dry_txn)
			catalog_set_rehearsal(c->st->cat); /* a -F destroy claims nothing for long */
	}
	if (r < 0)
		return store_err(c->st, r, "catalog: %s", catalog_errmsg(c->st->cat));
	r = store_txn_begin(c->st, &txg);
	if (r < 0)
		return r;
	/* A savepoint shares the outer transaction's txg: each group of a dry
	 * run takes the next one, as each commit of a real receive would. */
	if (c->o->dryrun)
		txg = c->dry_txg++;
	if (!c->meta_applied) {
		r = apply_meta(c);
		snapcaches_drop(c); /* renames and destroys: read again */
	} else {
		r = apply_due_drops(c);
	}
	for (size_t i = 0; r == 0 && i < c->npend; i++)
		r = insert_snap(c, &c->pend[i], txg);
	if (r == 0)
		r = drop_state(c->st, local_top(c));
	if (r == 0 && c->legacy_state)
		r = drop_state(c->st, c->o->target);
	r = store_txn_end(c->st, r);
	if (r < 0)
		snapcaches_drop(c); /* the inserts are gone with the transaction */
	flush_items(c, r == 0);
	if (r == 0) {
		c->meta_applied = true;
		c->o->snapshots += c->npend;
		c->state_saved = c->own_state = c->legacy_state = false;
		forget_made(c);
	}
	c->last_group_txg = c->group_txg;
	pend_clear(c);
	return r;
}

static int read_groupend(rctx_t *c)
{
	uint64_t txg = sr_u64(&c->rd);
	uint32_t n = sr_u32(&c->rd);
	const uint8_t *sum = sr_bytes(&c->rd, DIGEST_LEN);
	if (sr_done(&c->rd) || c->in_snap || txg != c->group_txg ||
	    n != c->npend + c->nskipped_in_group || !n)
		return bad(c, "GROUPEND does not close the open group");
	if (memcmp(sum, c->rd.prior, DIGEST_LEN))
		return bad(c, "stream checksum mismatch at the end of a group");
	c->ready = true;
	return 0;
}

/* ---- the stream ---- */

static int read_end(rctx_t *c)
{
	if (c->in_snap || (c->npend && !c->ready) || (c->nskipped_in_group && !c->ready))
		return bad(c, "stream ends inside a group");
	if (sr_check_end(&c->rd) < 0)
		return bad(c, "stream checksum mismatch");
	int e = sr_at_eof(&c->rd);
	if (e < 0)
		return store_err(c->st, e, "reading the stream: %s", strerror(-e));
	if (!e)
		return store_err(c->st, CAIRN_ECORRUPT,
				 "bytes follow the end of the stream at byte %llu (several streams "
				 "concatenated? receive each one separately)",
				 (unsigned long long)c->rd.offset);
	c->at_end = true;
	if (c->ready || !c->meta_applied)
		return commit_group(c);
	return 0;
}

/* A wrapped key for a declared dataset, before any snapshot. */
static int read_cryptkey(rctx_t *c)
{
	char name[NAME_BUF];
	encroot_wrapped_t *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	sr_str(&c->rd, name, sizeof(name));
	w->keyformat = sr_strdup(&c->rd, 64);
	w->keylocation = sr_strdup(&c->rd, 4096);
	const uint8_t *b = sr_bytes(&c->rd, CRYPT_KEYBLOB_LEN);
	rds_t *d = (rds_t *)find_ds(c, name);
	int r = 0;
	if (sr_done(&c->rd) || !b || !w->keyformat || !w->keylocation)
		r = bad(c, "malformed CRYPTKEY record");
	else if (!(c->flags & STREAM_F_RAW) || !d || d->key || c->any_snap)
		r = bad(c, "unexpected CRYPTKEY record");
	if (r == 0) {
		memcpy(w->blob, b, CRYPT_KEYBLOB_LEN);
		d->key = w;
	} else {
		encroot_wrapped_clear(w);
		free(w);
	}
	return r;
}

static int run(rctx_t *c)
{
	int r = read_begin(c);
	while (r == 0) {
		int t = sr_next(&c->rd);
		if (t != REC_CHUNK && (r = drain_chunks(c)) < 0)
			return r;
		/* A verified group is committed before anything after it acts,
		 * and also when the stream breaks right after it. */
		if (c->ready && t != REC_END) {
			r = commit_group(c);
			if (r < 0)
				return r;
		}
		if (t < 0)
			return t == -EPIPE ? truncated(c)
					   : t == CAIRN_ECORRUPT ? bad(c, "damaged record") : t;
		switch (t) {
		case REC_DATASET:
			r = read_dataset(c);
			break;
		case REC_SNAPLIST:
			r = read_snaplist(c);
			break;
		case REC_SNAP:
			if (c->in_snap)
				return bad(c, "snapshot inside a snapshot");
			if (!c->nds)
				return bad(c, "snapshot before any DATASET record");
			r = read_snap(c);
			break;
		case REC_CHUNK:
			r = read_chunk(c);
			break;
		case REC_SNAPEND:
			r = read_snapend(c);
			break;
		case REC_GROUPEND:
			r = read_groupend(c);
			break;
		case REC_CRYPTKEY:
			r = read_cryptkey(c);
			break;
		case REC_END:
			return read_end(c);
		default:
			return bad(c, "unexpected record");
		}
	}
	return r;
}

static void ctx_free(rctx_t *c)
{
	sr_free(&c->rd);
	refset_free(&c->got);
	buf_free(&c->gids);
	refset_free(&c->seen);
	refset_free(&c->roots);
	recvq_close(c->vq);
	buf_free(&c->items);
	pend_clear(c);
	free(c->pend);
	psnap_clear(&c->cur);
	for (size_t i = 0; i < c->nds; i++) {
		rds_t *d = &c->ds[i];
		free(d->name);
		props_free(d->props, d->nprops);
		if (d->key) {
			encroot_wrapped_clear(d->key);
			free(d->key);
		}
		snapcache_clear(&d->snaps);
		for (uint32_t k = 0; k < d->nsnaps; k++)
			free(d->snapnames[k]);
		free(d->snapnames);
		free(d->snapguids);
	}
	free(c->ds);
	free(c->dsidx);
	free(c->local_guids);
	forget_made(c);
}

/* ---- the scratch chunk store of a dry run ---- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static int scratch_open(rctx_t *c)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(c->scratch_dir, sizeof(c->scratch_dir), "%s/cairn-recv-n.XXXXXX",
		 tmp && tmp[0] ? tmp : "/tmp");
	if (!mkdtemp(c->scratch_dir)) {
		int e = -errno;
		c->scratch_dir[0] = 0;
		return store_err(c->st, e, "dry run: scratch directory: %s", strerror(-e));
	}
	char dir[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/chunks", c->scratch_dir);
	int r = chunkstore_create(dir);
	if (r == 0)
		r = chunkstore_open(dir, &c->scratch);
	if (r < 0) {
		nftw(c->scratch_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		c->scratch_dir[0] = 0;
		return store_err(c->st, r, "dry run: scratch chunk store: %s", strerror(-r));
	}
	/* Never flushed: its chunks stay temporary files, so nothing syncs. */
	chunkstore_set_batch(c->scratch, UINT32_MAX, UINT64_MAX);
	return 0;
}

static void scratch_close(rctx_t *c)
{
	if (c->scratch)
		chunkstore_close(c->scratch);
	c->scratch = NULL;
	if (c->scratch_dir[0])
		nftw(c->scratch_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	c->scratch_dir[0] = 0;
}

/* Set by recv_on_signal, read by the receiving thread (the stream reader,
 * the catalog's writer wait, release_signals); see stop_flag_t. */
static stop_flag_t g_recv_stop;
#define RECV_STOPPED() STOP_FLAG_GET(g_recv_stop)
static int g_recv_wake[2] = {-1, -1}; /* the handler writes here to wake a poll */
static const int recv_sigs[] = {SIGINT, SIGTERM, SIGHUP};
static bool g_recv_caught[3]; /* which of recv_sigs have our handler */

/* The first signal stops the receive; from then on any of the three has
 * its default action, so a second one (Ctrl-C, then a kill) ends the
 * process at once. */
static void recv_on_signal(int sig)
{
	(void)sig;
	int saved = errno;
	STOP_FLAG_SET(g_recv_stop, 1);
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	for (int i = 0; i < 3; i++)
		if (g_recv_caught[i])
			sigaction(recv_sigs[i], &dfl, NULL);
	if (g_recv_wake[1] >= 0 && write(g_recv_wake[1], "", 1) < 0) {
		/* full or closed: the flag alone is enough then */
	}
	errno = saved;
}

/* A receive stops on SIGINT, SIGTERM or SIGHUP as on a cut stream: a dry
 * run removes its scratch directory, a resumable one (-s) saves where it
 * stopped for the token, any other rolls back.  The reader waits in poll
 * for the stream or the handler's pipe, so even a signal that comes just
 * before a read ends it.  The handlers stay until the partial state is
 * saved. */
static void catch_signals(rctx_t *c, struct sigaction old[3])
{
	struct sigaction sa = {.sa_handler = recv_on_signal};
	/* While the handler runs, the others wait: it resets all three. */
	for (int i = 0; i < 3; i++)
		sigaddset(&sa.sa_mask, recv_sigs[i]);
	STOP_FLAG_SET(g_recv_stop, 0);
	if (pipe2(g_recv_wake, O_CLOEXEC | O_NONBLOCK) < 0)
		g_recv_wake[0] = g_recv_wake[1] = -1; /* the flag alone, as before */
	for (int i = 0; i < 3; i++) {
		/* One ignored by whoever started us stays ignored: nohup, or a
		 * script's background job (SIGINT), must not be stopped by it. */
		sigaction(recv_sigs[i], NULL, &old[i]);
		g_recv_caught[i] = old[i].sa_handler != SIG_IGN;
		if (g_recv_caught[i])
			sigaction(recv_sigs[i], &sa, NULL);
	}
	c->rd.stop = &g_recv_stop;
	c->rd.stop_fd = g_recv_wake[0];
	catalog_stop_waits_on(&g_recv_stop);
}

static int release_signals(rctx_t *c, const struct sigaction old[3], int r)
{
	if (RECV_STOPPED() && r == -EINTR)
		store_err(c->st, r, "%s: interrupted", c->o->target);
	c->rd.stop = NULL;
	c->rd.stop_fd = -1;
	catalog_stop_waits_on(NULL);
	for (int i = 0; i < 3; i++) {
		sigaction(recv_sigs[i], &old[i], NULL);
		g_recv_caught[i] = false;
	}
	for (int i = 0; i < 2; i++) {
		if (g_recv_wake[i] >= 0)
			close(g_recv_wake[i]);
		g_recv_wake[i] = -1;
	}
	return r;
}

static int dry_run(rctx_t *c)
{
	int r = scratch_open(c);
	if (r == 0) {
		c->real_cs = c->st->cs;
		chunkstore_set_fallback(c->scratch, c->st->cs);
		c->st->cs = c->scratch;
		r = run(c);
		c->st->cs = c->real_cs;
		if (c->dry_txn)
			catalog_rollback(c->st->cat);
		scratch_close(c);
	}
	return r;
}

/* The target refused a group after a checkpoint of this receive had saved
 * partial state for it: that state (and the dataset it created) goes, so
 * the refusal leaves the store as it was.  The refusal's message stays. */
static void discard_own_state(rctx_t *c)
{
	char saved[sizeof(c->st->errdetail)];
	memcpy(saved, c->st->errdetail, sizeof(saved));
	catalog_stop_waits_on(NULL);
	cairn_recv_abort(c->st, local_top(c));
	/* Refused (and kept) if something else was put in them by now. */
	cairn_destroy_opts dop = {0};
	for (size_t i = 0; i < c->nmade; i++)
		cairn_destroy(c->st, c->made[i], &dop);
	memcpy(c->st->errdetail, saved, sizeof(saved));
}

int cairn_recv(cairn_store *st, cairn_recv_opts *o)
{
	int e = STORE_ENTER(st);
	if (e < 0)
		return e;
	if (!o)
		return store_err(st, -EINVAL, "receive: no options (target and fd are required)");
	e = store_check_props(st, __func__, "opts->props", o->props, o->nprops);
	if (e == 0)
		e = store_check_names(st, __func__, "opts->exclude", o->exclude, o->nexclude);
	if (e < 0)
		return e;
	char why[256];
	if (!o->target || cairn_name_check(o->target, false, why, sizeof(why)) < 0)
		return store_err(st, CAIRN_EBADNAME, "%s: %s", o->target ? o->target : "",
				 o->target ? why : "no target");
	/* -o encryption/keyformat would make the target a new encryption
	 * root (and load its fresh key) while the chunks arrive as the stream
	 * has them: a plain stream would land unencrypted below it, and a raw
	 * stream keeps the sender's keys (zfs refuses these for raw streams
	 * too).  Refused before anything is read or created. */
	for (size_t i = 0; i < o->nprops; i++)
		if (!strcmp(o->props[i].name, "encryption") || !strcmp(o->props[i].name, "keyformat"))
			return store_err(st, CAIRN_EBADPROP,
					 "%s: -o %s: a receive cannot encrypt: a plain stream is "
					 "stored as sent, a raw one keeps its sender's keys (receive "
					 "into an unencrypted place, or send -w from an encrypted one)",
					 o->target, o->props[i].name);
	rctx_t c = {.st = st, .o = o};
	int r = sr_init(&c.rd, o->fd);
	if (r < 0) {
		sr_free(&c.rd);
		return store_err(st, r == CAIRN_EVERSION ? r : CAIRN_ECORRUPT, "%s",
				 r == CAIRN_EVERSION ? "stream has an unknown version"
						     : "input is not a cairn send stream");
	}
	int64_t changes_before = sqlite3_total_changes(catalog_db(st->cat));
	struct sigaction old_sigs[3];
	catch_signals(&c, old_sigs);
	/* An earlier operation on this handle that failed in a batch flush
	 * does not make this one fail. */
	if (!o->dryrun)
		chunkstore_reset_error(st->cs);
	r = o->dryrun ? dry_run(&c) : register_writer_named(st);
	if (o->dryrun) {
		/* Nothing changed: nothing for the store's close to publish. */
		if (st->published_changes == changes_before)
			st->published_changes = sqlite3_total_changes(catalog_db(st->cat));
	} else if (r == 0) {
		r = run(&c);
		/* A group in flight keeps its chunks and a token (-s); a group
		 * refused by the target (-EEXIST) can never commit: no token. */
		bool in_group = c.in_snap || c.npend || c.nskipped_in_group || c.keep_group;
		/* Only an interrupted or damaged stream leaves partial state,
		 * not a refusal (another guid, no source, a busy target...). */
		bool cut = r == -EPIPE || r == -EINTR || r == -EIO || r == CAIRN_ECORRUPT;
		if (r < 0 && in_group && o->resumable && cut) {
			/* Recording the token is worth waiting for another
			 * writer: the first signal ended only the receive, and
			 * a second one still ends the process at once. */
			catalog_stop_waits_on(NULL);
			char saved[sizeof(st->errdetail)];
			memcpy(saved, st->errdetail, sizeof(saved));
			c.state_saved = checkpoint(&c) == 0;
			memcpy(st->errdetail, saved, sizeof(saved));
		}
		bool dead = c.source_gone && (c.flags & STREAM_F_RESUMED);
		if (r < 0 && c.refused && (c.own_state || dead))
			discard_own_state(&c);
		o->partial_kept = c.state_saved;
		if (c.state_saved)
			snprintf(o->partial_dataset, sizeof(o->partial_dataset), "%s", local_top(&c));
		writer_unregister(st);
	}
	r = release_signals(&c, old_sigs, r);
	o->bytes = c.rd.offset;
	ctx_free(&c);
	return r;
}

/* Discards the partial state and, if that receive created the dataset and
 * nothing else has been put in it, the dataset too. */
int cairn_recv_abort(cairn_store *st, const char *dataset)
{
	int r = STORE_ENTER(st, dataset);
	if (r < 0)
		return r;
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	rstate_t s;
	r = state_load(st, dataset, &s);
	buf_free(&s.idx);
	if (r == 0 && !s.exists)
		r = store_err(st, -ENOENT, "%s: no partial receive", dataset);
	if (r == 0)
		r = drop_state(st, dataset);
	if (r == 0 && s.created) {
		cairn_destroy_opts d = {0};
		char saved[sizeof(st->errdetail)];
		memcpy(saved, st->errdetail, sizeof(saved));
		/* Refused (and kept) if it has snapshots or children by now. */
		if (cairn_destroy(st, dataset, &d) < 0)
			memcpy(st->errdetail, saved, sizeof(saved));
	}
	return store_txn_end(st, r);
}

/* present[i] = whether the store has digests[i]; touched (kept by GC
 * for the receive that relies on it) or only looked at.  fn: the API
 * call, entered by the caller (errors name it). */
static int chunks_present(cairn_store *st, const char *fn, const uint8_t (*digests)[32],
			  size_t n, uint8_t *present, bool touch)
{
	if (n && (!digests || !present))
		return store_err(st, -EINVAL, "%s: %s is NULL", fn, digests ? "present" : "digests");
	for (size_t i = 0; i < n; i++) {
		digest_t d;
		memcpy(d.b, digests[i], DIGEST_LEN);
		present[i] = (touch ? chunkstore_touch(st->cs, &d) : chunkstore_has(st->cs, &d)) == 0;
	}
	return 0;
}

/* A touch protects a chunk from GC only if a writer registered before it
 * is still running when GC sweeps: GC removes what is older than the
 * oldest live writer's start.  The receive that relies on the answer
 * registers only when it starts, which may be after a GC that began
 * after the touch (sync asks before its receiver is up; t0670 saw such
 * a chunk removed).  So the handle that touches registers first, and
 * stays registered until it is closed, after that receive. */
static int touch_as_writer(cairn_store *st)
{
	if (st->touch_writer)
		return 0;
	int r = register_writer_named(st);
	if (r == 0)
		st->touch_writer = true;
	return r;
}

int cairn_chunks_present(cairn_store *st, const uint8_t (*digests)[32], size_t n,
			 uint8_t *present)
{
	int r = STORE_ENTER(st);
	if (r == 0)
		r = touch_as_writer(st);
	return r < 0 ? r : chunks_present(st, __func__, digests, n, present, true);
}

int cairn_chunks_peek(cairn_store *st, const uint8_t (*digests)[32], size_t n,
		      uint8_t *present)
{
	int r = STORE_ENTER(st);
	return r < 0 ? r : chunks_present(st, __func__, digests, n, present, false);
}
