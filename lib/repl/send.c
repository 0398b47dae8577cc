/* send.c - writing send streams: full, incremental, recursive, resumed.
 *
 * Every snapshot the stream reads (and every incremental source snapshot)
 * is held with a temporary hold, all in one transaction before anything
 * is read, and released in one transaction at the end: the batched form of
 * illumos' fix, so a send of N snapshots costs two catalog syncs, not 2N.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "catalog/dataset.h"
#include "crypt/encroot.h"
#include "repl/plainsend.h"
#include "data/snapio.h"
#include "store/store.h"
#include "repl/stream.h"
#include "repl/token.h"

typedef struct sendsnap {
	int64_t ds, id;
	int dstype;
	char *dsname, *name;
	uint64_t guid, createtxg, referenced, logical;
	int64_t creation;
	/* incremental source: a snapshot id or a bookmark id (0 = full) */
	int64_t from_snap, from_bm;
	uint64_t from_guid;
	char *from_name;
	size_t order; /* position in the plan before sorting into groups */
} sendsnap_t;

typedef struct splan {
	sendsnap_t *v;
	size_t n, cap;
	char **dsnames; /* datasets in the stream, parents first */
	int64_t *dsids;
	size_t nds;
	char *top;
	uint64_t skip; /* resumed: chunks of the first group the receiver has */
	uint64_t resume_txg; /* resumed: the group in flight */
	uint64_t toguid, fromguid; /* the top's last snapshot and its source */
	uint32_t flags;
	/* A plain stream of an encrypted dataset (never -R, so only one):
	 * its keys and compression level, for the decrypting layer. */
	crypt_keys_t *plain_key;
	int plain_level;
} splan_t;

/* Set by on_signal; read by the writer (stream.h's stop) and the chunk
 * loops; see stop_flag_t. */
static stop_flag_t g_stop;
#define SEND_STOPPED() STOP_FLAG_GET(g_stop)

static void plan_free(splan_t *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].dsname);
		free(p->v[i].name);
		free(p->v[i].from_name);
	}
	for (size_t i = 0; i < p->nds; i++)
		free(p->dsnames[i]);
	free(p->v);
	free(p->dsnames);
	free(p->dsids);
	free(p->top);
	crypt_keys_free(p->plain_key);
}

static sendsnap_t *plan_push(splan_t *p)
{
	if (p->n == p->cap) {
		size_t n = p->cap ? p->cap * 2 : 16;
		sendsnap_t *q = realloc(p->v, n * sizeof(*q));
		if (!q)
			return NULL;
		p->v = q;
		p->cap = n;
	}
	sendsnap_t *s = &p->v[p->n++];
	memset(s, 0, sizeof(*s));
	return s;
}

static int add_snap(splan_t *p, const ds_row_t *ds, const snap_row_t *row, int64_t from_snap,
		    int64_t from_bm, uint64_t from_guid, const char *from_name)
{
	sendsnap_t *s = plan_push(p);
	if (!s)
		return -ENOMEM;
	s->ds = ds->id;
	s->dstype = ds->type;
	s->dsname = strdup(ds->name);
	s->name = strdup(row->name);
	s->id = row->id;
	s->guid = row->guid;
	s->createtxg = row->createtxg;
	s->creation = row->creation;
	s->referenced = row->referenced;
	s->logical = row->logicalreferenced;
	s->from_snap = from_snap;
	s->from_bm = from_bm;
	s->from_guid = from_guid;
	s->from_name = from_name ? strdup(from_name) : NULL;
	return s->dsname && s->name ? 0 : -ENOMEM;
}

/* Snapshots of ds with createtxg in (lo, hi], in order, each incremental
 * from its predecessor (the first from `first_from`). */
static int add_run(cairn_store *st, splan_t *p, const ds_row_t *ds, uint64_t lo, uint64_t hi,
		   const snap_row_t *first_from, int64_t first_bm, uint64_t bm_guid,
		   const char *bm_name)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT id, name, guid, createtxg, creation, referenced,"
			       " logicalreferenced FROM snapshot WHERE dataset=? AND createtxg > ?"
			       " AND createtxg <= ? ORDER BY createtxg",
			       -1, &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, ds->id);
	sqlite3_bind_int64(q, 2, (int64_t)lo);
	sqlite3_bind_int64(q, 3, (int64_t)hi);
	int r = 0;
	int64_t from_id = first_from ? first_from->id : 0, from_bm = first_bm;
	uint64_t from_guid = first_from ? first_from->guid : first_bm ? bm_guid : 0;
	char from_name[300];
	snprintf(from_name, sizeof(from_name), "%s",
		 first_from ? first_from->name : first_bm ? bm_name : "");
	while (r == 0 && sqlite3_step(q) == SQLITE_ROW) {
		snap_row_t row = {.id = sqlite3_column_int64(q, 0),
				  .name = (char *)sqlite3_column_text(q, 1),
				  .guid = sqlite3_column_int64(q, 2),
				  .createtxg = sqlite3_column_int64(q, 3),
				  .creation = sqlite3_column_int64(q, 4),
				  .referenced = sqlite3_column_int64(q, 5),
				  .logicalreferenced = sqlite3_column_int64(q, 6)};
		r = add_snap(p, ds, &row, from_id, from_bm, from_guid,
			     from_id || from_bm ? from_name : NULL);
		from_id = row.id;
		from_bm = 0;
		from_guid = row.guid;
		snprintf(from_name, sizeof(from_name), "%s", row.name);
	}
	sqlite3_finalize(q);
	return r;
}

/* The incremental source inside dataset ds: "@snap" or "#bm" short names. */
static int find_source(cairn_store *st, const ds_row_t *ds, const char *from, snap_row_t *snap,
		       int64_t *bm_id, uint64_t *bm_guid, uint64_t *bm_txg)
{
	*bm_id = 0;
	if (from[0] == '@')
		return catalog_snap_lookup(st->cat, ds->id, from + 1, snap);
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT id, guid, createtxg FROM bookmark WHERE dataset=? AND name=?",
			       -1, &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, ds->id);
	sqlite3_bind_text(q, 2, from + 1, -1, SQLITE_STATIC);
	int r = -ENOENT;
	if (sqlite3_step(q) == SQLITE_ROW) {
		*bm_id = sqlite3_column_int64(q, 0);
		*bm_guid = sqlite3_column_int64(q, 1);
		*bm_txg = sqlite3_column_int64(q, 2);
		r = 0;
	}
	sqlite3_finalize(q);
	return r;
}

/* Whether the receiver has guid in the dataset that ds (in the subtree
 * of topds) maps to there.  base_guids is sorted, and one guid may be in
 * several of the receiver's datasets (a copy made by another receive):
 * every entry with it is looked at, from the first. */
static bool receiver_has(const cairn_send_opts *o, const ds_row_t *topds, const ds_row_t *ds,
			 uint64_t guid)
{
	const char *rel = ds->name + strlen(topds->name);
	size_t lo = 0, hi = o->nbase_guids;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (o->base_guids[mid] < guid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < o->nbase_guids && o->base_guids[lo] == guid; lo++)
		if (!o->base_datasets || !o->base_datasets[lo] || !strcmp(o->base_datasets[lo], rel))
			return true;
	return false;
}

/* sync: this dataset's newest snapshot or bookmark (not newer than the
 * target snapshot) that the receiver has, as "@name" / "#name" in from. */
static int pick_base(cairn_store *st, const ds_row_t *topds, const ds_row_t *ds,
		     uint64_t to_txg, const cairn_send_opts *o, char *from, size_t fromlen)
{
	static const char *sql[] = {
		"SELECT name, guid, createtxg FROM snapshot WHERE dataset=?1 AND createtxg<=?2"
		" ORDER BY createtxg DESC",
		"SELECT name, guid, createtxg FROM bookmark WHERE dataset=?1 AND createtxg<=?2"
		" ORDER BY createtxg DESC"};
	uint64_t best_txg = 0;
	from[0] = 0;
	for (int k = 0; k < 2; k++) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(catalog_db(st->cat), sql[k], -1, &q, NULL))
			return -EIO;
		sqlite3_bind_int64(q, 1, ds->id);
		sqlite3_bind_int64(q, 2, (int64_t)to_txg);
		while (sqlite3_step(q) == SQLITE_ROW) {
			uint64_t txg = sqlite3_column_int64(q, 2);
			if (!receiver_has(o, topds, ds, sqlite3_column_int64(q, 1)))
				continue;
			if (!from[0] || txg > best_txg) {
				snprintf(from, fromlen, "%c%s", k ? '#' : '@', sqlite3_column_text(q, 0));
				best_txg = txg;
			}
			break;
		}
		sqlite3_finalize(q);
	}
	return 0;
}

/* A plain (not raw) send of an encrypted dataset goes out decrypted, as
 * zfs does: that needs its key, and, as in zfs, never with -R (a
 * replication stream of encrypted datasets must be raw). */
static int plan_decrypted(cairn_store *st, splan_t *p, const ds_row_t *ds,
			  const cairn_send_opts *o)
{
	ds_row_t root = {0};
	int r = encroot_find(st, ds, &root);
	if (r <= 0)
		return r;
	r = 0;
	if (o->recursive)
		r = store_err(st, -EINVAL,
			      "%s: encrypted dataset (encryption root %s) may not be sent with -R "
			      "(replicate) unless the stream is raw: use send -R -w",
			      ds->name, root.name);
	else if (p->plain_key)
		r = store_err(st, -EINVAL, "%s: only one encrypted dataset per plain stream",
			      ds->name);
	if (r == 0) {
		r = encroot_keys(st, ds, &p->plain_key);
		if (r == CAIRN_ENOKEY)
			r = store_err(st, r,
				      "%s: encryption key not loaded (encryption root %s): a plain "
				      "send decrypts, so run 'cairn load-key %s' first, or send it "
				      "raw with send -w",
				      ds->name, root.name, root.name);
	}
	if (r == 0)
		r = dataset_compression(st, ds, &p->plain_level);
	ds_row_clear(&root);
	return r;
}

/* Where a descendant of send -R DS@to (not sync) stands; see descendant_in. */
enum { DS_IN, DS_BELOW_OUT, DS_NEWER, DS_MISSING };

/* send -R DS@to (not sync): whether descendant ds goes in the stream.
 * DS_IN when it has @to; DS_BELOW_OUT when its parent lacks @to: the
 * parent was left out (one that existed and lacked it would have refused
 * the send already, or been skipped), and so is everything below it.
 * DS_NEWER: made after DS@to was taken, left out as zfs does.
 * DS_MISSING: there already when DS@to was taken, yet without @to: the
 * whole send is refused (as zfs), unless -s skips it.  (Before, such a
 * descendant went in as an empty DATASET record, and the receiver
 * created it empty although the sender had data for it.)  "Made after"
 * compares createtxgs; a dataset made in the very transaction of its
 * parent's @to is one a receive created, and a zfs receive also creates
 * children after their parent's snapshots. */
static int descendant_in(cairn_store *st, const ds_row_t *ds, const char *to)
{
	snap_row_t own = {0}, up = {0};
	int r = catalog_snap_lookup(st->cat, ds->parent, to, &up);
	if (r == -ENOENT)
		return DS_BELOW_OUT;
	if (r == 0)
		r = catalog_snap_lookup(st->cat, ds->id, to, &own);
	if (r == 0)
		r = DS_IN;
	else if (r == -ENOENT)
		r = ds->createtxg >= up.createtxg ? DS_NEWER : DS_MISSING;
	snap_row_clear(&own);
	snap_row_clear(&up);
	return r;
}

/* Decides on a descendant that descendant_in placed: 0 when it goes in,
 * 1 when it is left out with its subtree (telling o->skipped about the
 * top of each subtree left out), or the refusal naming it.  A stream
 * that skipped a dataset the sender had at @to's time says so, so that
 * recv -F does not destroy the receiver's copy of it. */
static int place_descendant(cairn_store *st, splan_t *p, const ds_row_t *ds, const char *to,
			    const char *top, const cairn_send_opts *o)
{
	int k = descendant_in(st, ds, to);
	if (k < 0 || k == DS_IN)
		return k < 0 ? k : 0;
	/* zfs mode (cli/cmd_send.c) recognises "CHILD@S: no such snapshot," */
	if (k == DS_MISSING && !o->skip_missing)
		return store_err(st, -ENOENT,
				 "%s@%s: no such snapshot, though %s is older than %s@%s: "
				 "send -R needs it in every dataset of the subtree made "
				 "before it (snapshot -r takes it in each; send -R -s skips "
				 "such datasets)",
				 ds->name, to, ds->name, top, to);
	if (k == DS_MISSING)
		p->flags |= STREAM_F_SKIPPED;
	if (k != DS_BELOW_OUT && o->skipped)
		o->skipped(ds->name, to, k == DS_MISSING, o->arg);
	return 1;
}

/* Plans one dataset of the stream: 0, 1 when it is left out (not even
 * its DATASET record goes), or an error. */
static int plan_dataset(cairn_store *st, splan_t *p, const ds_row_t *ds, const char *to,
			const char *from, const cairn_send_opts *o, const ds_row_t *topds)
{
	snap_row_t tos = {0}, froms = {0};
	bool top = ds->id == topds->id;
	/* Before the encryption checks: zfs refuses nothing it leaves out. */
	if (!top && !o->base_guids) {
		int k = place_descendant(st, p, ds, to, topds->name, o);
		if (k != 0)
			return k;
	}
	int r = o->raw ? 0 : plan_decrypted(st, p, ds, o);
	if (r < 0)
		return r;
	/* sync (base_guids) brings every dataset of the subtree to its own
	 * newest snapshot, as syncoid -r does.  By the top's snapshot name
	 * alone, a descendant that lacks that name would arrive empty, and one
	 * with newer snapshots would stop short; sync would then find it
	 * behind and send again on every run, never catching up. */
	if (o->base_guids && !top)
		r = catalog_snap_prev(st->cat, ds->id, UINT64_MAX, &tos);
	else
		r = catalog_snap_lookup(st->cat, ds->id, to, &tos);
	if (r == -ENOENT && !top)
		return 0; /* sync: a descendant without any snapshot (no data to send) */
	if (r == -ENOENT)
		return store_err(st, r, "%s@%s: snapshot does not exist", ds->name, to);
	char base[300];
	if (r == 0 && o->base_guids) {
		/* sync: each dataset from its own newest common snapshot. */
		if (receiver_has(o, topds, ds, tos.guid)) {
			/* The receiver's top holds it: the stream is incremental
			 * from it, and so recv -R -F reconciles the subtree (it
			 * does for an incremental stream only, as zfs). */
			if (top)
				p->toguid = p->fromguid = tos.guid;
			snap_row_clear(&tos);
			return 0; /* up to date */
		}
		r = pick_base(st, topds, ds, tos.createtxg, o, base, sizeof(base));
		from = base[0] ? base : NULL;
	}
	int64_t bm = 0;
	uint64_t bm_guid = 0, bm_txg = 0;
	if (r == 0 && from) {
		int q = find_source(st, ds, from, &froms, &bm, &bm_guid, &bm_txg);
		if (q == -ENOENT && top)
			r = store_err(st, q, "%s%s: incremental source does not exist", ds->name, from);
		else if (q == -ENOENT)
			from = NULL; /* new in this subtree: send it whole (below) */
		else
			r = q;
	}
	/* Whole: a full -R sends every snapshot up to @to, as -I does; a
	 * descendant that lacks -i's source gets @to alone (zfs: -R -i sends
	 * no intermediate snapshots, not even for a new dataset). */
	bool every = o->intermediates || (o->recursive && !o->from);
	uint64_t from_txg = bm ? bm_txg : froms.createtxg;
	if (r == 0 && from && from_txg >= tos.createtxg)
		r = store_err(st, -EINVAL, "%s%s: incremental source is not older than %s@%s",
			      ds->name, from, ds->name, to);
	if (r == 0 && from && bm && o->intermediates && !o->base_guids)
		r = store_err(st, -EINVAL, "%s%s: -I needs a snapshot, not a bookmark", ds->name,
			      from);
	if (r == 0 && top) {
		p->toguid = tos.guid;
		p->fromguid = !from ? 0 : bm ? bm_guid : froms.guid;
	}
	if (r == 0) {
		if (!from && every)
			r = add_run(st, p, ds, 0, tos.createtxg, NULL, 0, 0, NULL);
		else if (!from)
			r = add_snap(p, ds, &tos, 0, 0, 0, NULL);
		else if (o->intermediates && bm)
			r = add_run(st, p, ds, bm_txg, tos.createtxg, NULL, bm, bm_guid, from + 1);
		else if (o->intermediates)
			r = add_run(st, p, ds, froms.createtxg, tos.createtxg, &froms, 0, 0, NULL);
		else
			r = add_snap(p, ds, &tos, bm ? 0 : froms.id, bm, bm ? bm_guid : froms.guid,
				     from + 1);
	}
	snap_row_clear(&tos);
	snap_row_clear(&froms);
	return r;
}

static int ds_push(splan_t *p, const ds_row_t *ds)
{
	char **n = realloc(p->dsnames, (p->nds + 1) * sizeof(*n));
	int64_t *i = n ? realloc(p->dsids, (p->nds + 1) * sizeof(*i)) : NULL;
	if (n)
		p->dsnames = n;
	if (!i)
		return -ENOMEM;
	p->dsids = i;
	p->dsnames[p->nds] = strdup(ds->name);
	p->dsids[p->nds++] = ds->id;
	return 0;
}

static int by_group(const void *a, const void *b)
{
	const sendsnap_t *x = a, *y = b;
	if (x->createtxg != y->createtxg)
		return x->createtxg < y->createtxg ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Groups: the snapshots of one createtxg (one `snapshot -r`) go together,
 * oldest group first, datasets in plan order (parents first) inside. */
static void sort_groups(splan_t *p)
{
	for (size_t i = 0; i < p->n; i++)
		p->v[i].order = i;
	if (p->n)
		qsort(p->v, p->n, sizeof(*p->v), by_group);
}

static int plan_send(cairn_store *st, const char *snap, const cairn_send_opts *o, splan_t *p)
{
	/* zfs's rule: without -R there is no subtree to skip in. */
	if (o->skip_missing && !o->recursive)
		return store_err(st, -EINVAL, "%s: -s (skip missing snapshots) needs -R", snap);
	ds_row_t ds = {0};
	const char *to;
	int r = snapshot_split(st, snap, &ds, &to);
	if (r < 0)
		return r;
	p->top = strdup(ds.name);
	char from[600] = "";
	if (o->from) {
		/* "ds@x" / "ds#x" must be in the same dataset; keep the short form. */
		const char *sep = o->from + strcspn(o->from, "@#");
		if (!*sep)
			r = store_err(st, CAIRN_EBADNAME, "%s: not a snapshot or bookmark", o->from);
		else if (sep != o->from &&
			 ((size_t)(sep - o->from) != strlen(ds.name) ||
			  strncmp(o->from, ds.name, sep - o->from)))
			r = store_err(st, -EINVAL, "%s: incremental source must be in %s", o->from,
				      ds.name);
		snprintf(from, sizeof(from), "%s", sep);
	}
	int64_t *ids = NULL;
	size_t n = 1;
	if (r == 0 && o->recursive) {
		r = catalog_ds_subtree(st->cat, ds.id, &ids, &n);
		p->flags |= STREAM_F_RECURSIVE;
	}
	if (r == 0 && n > STREAM_MAX_DATASETS)
		r = store_err(st, -E2BIG,
			      "%s: the stream would carry %zu datasets, more than the limit of %d "
			      "per stream (send parts of the subtree separately)",
			      ds.name, n, STREAM_MAX_DATASETS);
	for (size_t i = 0; r == 0 && i < n; i++) {
		ds_row_t d = {0};
		r = o->recursive ? catalog_ds_by_id(st->cat, ids[i], &d) : 0;
		const ds_row_t *cur = o->recursive ? &d : &ds;
		size_t before = p->n;
		int k = r ? r : plan_dataset(st, p, cur, to, o->from ? from : NULL, o, &ds);
		r = k < 0 ? k : 0;
		/* -R carries every dataset it does not leave out (parents of the
		 * ones with snapshots, properties, renames), not only those with
		 * something to send. */
		if (k == 0 && (p->n > before || cur->id == ds.id || o->recursive))
			r = ds_push(p, cur);
		ds_row_clear(&d);
	}
	free(ids);
	ds_row_clear(&ds);
	if (o->intermediates || (o->recursive && !o->from))
		p->flags |= STREAM_F_INTERMEDIATES;
	if (o->raw)
		p->flags |= STREAM_F_RAW;
	if (r == 0)
		sort_groups(p);
	return r;
}

/* sync: whether the receiver's target itself has guid. */
static bool top_current(const cairn_send_opts *o, uint64_t guid)
{
	for (size_t i = 0; i < o->nbase_guids; i++)
		if (o->base_guids[i] == guid &&
		    (!o->base_datasets || !o->base_datasets[i] || !o->base_datasets[i][0]))
			return true;
	return false;
}

/* The group in flight must still begin with the snapshots the receiver
 * saw before the cut (the token's gsnaps and their digest): chunks are
 * skipped by their position in the group, so a group that changed since
 * (a snapshot of it destroyed here, another base planned for one) would
 * skip chunks the receiver lacks, and the receive could never complete.
 * Refused before any byte is sent; -ESTALE tells sync to discard the
 * partial receive and send the group again.  A "2-" token (gsnaps 0)
 * carries no digest: the receiver's missing-chunk check is all there is.
 * Not called for a token that skips nothing (t0848). */
static int group_unchanged(cairn_store *st, const resume_token_t *t, const splan_t *p)
{
	buf_t ids = {0};
	size_t n = 0;
	int r = 0;
	for (; r == 0 && n < p->n && n < t->gsnaps && p->v[n].createtxg == t->group; n++)
		r = token_group_add(&ids, p->v[n].guid, p->v[n].from_guid);
	uint8_t md[DIGEST_LEN];
	token_group_digest(&ids, md);
	buf_free(&ids);
	if (r < 0 || (n == t->gsnaps && !memcmp(md, t->gdigest, DIGEST_LEN)))
		return r;
	return store_err(st, -ESTALE,
			 "%s@%s: the group in flight changed on the sender since the cut (a "
			 "snapshot of it destroyed, a dataset renamed?): the resumed stream does "
			 "not continue the interrupted receive; discard it (recv -A) and send again",
			 p->v[0].dsname, p->v[0].name);
}

/* The resumed stream planned from one snapshot that has the token's
 * toguid (snap, in dataset dsid): the same stream again, starting at the
 * group in flight.  -ENOENT when that group is not in this plan.  With
 * o->base_guids it is planned as sync plans (each dataset to its own
 * newest snapshot, from what the receiver has now): a stream sync sent
 * was planned so, and planned as send -R -I instead it may lack the
 * group in flight or be refused outright (a descendant without the top's
 * snapshot name). */
static int plan_resume_from(cairn_store *st, const resume_token_t *t, const char *snap,
			    int64_t dsid, const cairn_send_opts *o, splan_t *p)
{
	char from[300] = "";
	int r = 0;
	if (t->fromguid) {
		/* The source may be a snapshot or a bookmark of the same dataset.
		 * "+dataset": found by guid, not by scanning the dataset's
		 * snapshots in snapshot_list. */
		const char *sqls[] = {"SELECT name FROM snapshot WHERE +dataset=? AND guid=?",
				      "SELECT name FROM bookmark WHERE dataset=? AND guid=?"};
		for (int k = 0; k < 2 && !from[0]; k++) {
			sqlite3_stmt *q;
			if (sqlite3_prepare_v2(catalog_db(st->cat), sqls[k], -1, &q, NULL))
				return -EIO;
			sqlite3_bind_int64(q, 1, dsid);
			sqlite3_bind_int64(q, 2, (int64_t)t->fromguid);
			if (sqlite3_step(q) == SQLITE_ROW)
				snprintf(from, sizeof(from), "%c%s", k ? '#' : '@',
					 sqlite3_column_text(q, 0));
			sqlite3_finalize(q);
		}
		/* Planned as sync plans, each dataset's base is what the
		 * receiver has now (from is ignored): the token's source may be
		 * gone here, the groups from the one in flight on are the same. */
		if (!from[0] && !o->base_guids)
			return store_err(st, -ENOENT, "resume token's incremental source is gone");
	}
	cairn_send_opts again = {.from = from[0] ? from : NULL,
				 .recursive = t->flags & STREAM_F_RECURSIVE,
				 .intermediates = t->flags & STREAM_F_INTERMEDIATES,
				 .raw = t->flags & STREAM_F_RAW,
				 /* send -R -s: the same datasets are left out again */
				 .skip_missing = t->flags & STREAM_F_SKIPPED,
				 .skipped = o->skipped,
				 .arg = o->arg,
				 .base_guids = o->base_guids,
				 .nbase_guids = o->nbase_guids,
				 .base_datasets = o->base_datasets};
	r = plan_send(st, snap, &again, p);
	/* The groups already committed moved the top's base on (or made it
	 * current), but those groups are dropped below, and the groups from
	 * the one in flight on are planned as before.  The stream is still
	 * the token's: its header names the token's source, which the
	 * receiver checks. */
	if (r == 0 && t->fromguid && !from[0] && !p->fromguid && !top_current(o, p->toguid))
		r = store_err(st, -ENOENT,
			      "resume token's incremental source is gone, and the receiver has no "
			      "other base for %s",
			      p->top);
	if (r == 0 && o->base_guids)
		p->fromguid = t->fromguid;
	/* Whole groups before the one in flight are on the receiver. */
	size_t keep = 0;
	for (size_t i = 0; r == 0 && i < p->n; i++) {
		if (p->v[i].createtxg < t->group) {
			free(p->v[i].dsname);
			free(p->v[i].name);
			free(p->v[i].from_name);
		} else {
			p->v[keep++] = p->v[i];
		}
	}
	if (r == 0) {
		p->n = keep;
		if (!keep || p->v[0].createtxg != t->group)
			r = store_err(st, -ENOENT,
				      "the group the resume token continues is no longer on this store");
	}
	/* A token that skips no chunk has no position to move: the group is
	 * sent whole, whatever became of it. */
	if (r == 0 && t->gsnaps && t->skip)
		r = group_unchanged(st, t, p);
	if (r == 0) {
		p->skip = t->skip;
		p->resume_txg = t->group;
		p->flags |= STREAM_F_RESUMED;
		if (p->flags != (t->flags | STREAM_F_RESUMED))
			r = store_err(st, -EINVAL, "resume token does not match the stream it names");
	}
	return r;
}

/* Resumed: the token names the stream (its top's last snapshot and source,
 * recursive or not, -I or not) and the group in flight.  The same stream
 * is planned again and starts at that group; chunks the receiver already
 * has of it are skipped by position.  Several datasets may hold a snapshot
 * with the token's guid (a local copy made by sync or recv): the one whose
 * plan has the group in flight is the sender's (groups are createtxgs, and
 * a copy's snapshots were made in other transactions). */
static int plan_resume(cairn_store *st, const char *token, const cairn_send_opts *o,
		       splan_t *p)
{
	resume_token_t t;
	if (token_decode(token, &t) < 0)
		return store_err(st, CAIRN_ECORRUPT, "resume token is not valid (damaged or forged)");
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT d.name, s.name, d.id FROM snapshot s JOIN dataset d ON"
			       " d.id = s.dataset WHERE s.guid=? ORDER BY s.id",
			       -1, &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, (int64_t)t.toguid);
	int r = store_err(st, -ENOENT,
			  "resume token names a snapshot (guid %llu) this store does not have",
			  (unsigned long long)t.toguid);
	while (r == -ENOENT && sqlite3_step(q) == SQLITE_ROW) {
		char *snap;
		if (asprintf(&snap, "%s@%s", sqlite3_column_text(q, 0), sqlite3_column_text(q, 1)) <
		    0) {
			r = -ENOMEM;
			break;
		}
		plan_free(p); /* a candidate tried before */
		memset(p, 0, sizeof(*p));
		r = plan_resume_from(st, &t, snap, sqlite3_column_int64(q, 2), o, p);
		free(snap);
	}
	sqlite3_finalize(q);
	if (r == 0)
		st->errdetail[0] = 0; /* a candidate that did not fit said why */
	return r;
}

/* ---- holds ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Sorts plan entries by their source snapshot id. */
static int cmp_from(const void *a, const void *b)
{
	return cmp_i64(&(*(const sendsnap_t *const *)a)->from_snap,
		       &(*(const sendsnap_t *const *)b)->from_snap);
}

static int hold_all(cairn_store *st, const splan_t *p, bool release, char *tag)
{
	size_t n = 0;
	cairn_hold_item *items = calloc(2 * p->n + 1, sizeof(*items));
	char **names = calloc(2 * p->n + 1, sizeof(char *));
	/* The plan's ids, sorted, and the entries whose source is a snapshot
	 * sorted by it: sources outside the plan (the first of a run) are
	 * held too, each once, without a scan per entry. */
	int64_t *ids = malloc((p->n + 1) * sizeof(*ids));
	const sendsnap_t **byfrom = malloc((p->n + 1) * sizeof(*byfrom));
	int r = items && names && ids && byfrom ? 0 : -ENOMEM;
	size_t nfrom = 0;
	for (size_t i = 0; r == 0 && i < p->n; i++) {
		const sendsnap_t *s = &p->v[i];
		ids[i] = s->id;
		if (s->from_snap)
			byfrom[nfrom++] = s;
		if (asprintf(&names[n], "%s@%s", s->dsname, s->name) < 0)
			r = -ENOMEM;
		else
			items[n] = (cairn_hold_item){.snapshot = names[n], .tag = tag}, n++;
	}
	if (r == 0) {
		qsort(ids, p->n, sizeof(*ids), cmp_i64);
		qsort(byfrom, nfrom, sizeof(*byfrom), cmp_from);
	}
	for (size_t i = 0; r == 0 && i < nfrom; i++) {
		const sendsnap_t *s = byfrom[i];
		if ((i && byfrom[i - 1]->from_snap == s->from_snap) ||
		    bsearch(&s->from_snap, ids, p->n, sizeof(*ids), cmp_i64))
			continue;
		if (asprintf(&names[n], "%s@%s", s->dsname, s->from_name) < 0)
			r = -ENOMEM;
		else
			items[n] = (cairn_hold_item){.snapshot = names[n], .tag = tag}, n++;
	}
	if (r == 0)
		r = release ? cairn_release(st, items, n) : cairn_hold(st, items, n, true);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(items);
	free(ids);
	free(byfrom);
	return r;
}

/* ---- chunks of a snapshot ---- */

typedef int (*chunk_fn)(void *arg, const chunk_ref_t *ref);

static int roots_of(cairn_store *st, const sendsnap_t *s, buf_t *tree, buf_t *idx, buf_t *fidx)
{
	int r = catalog_snap_roots(st->cat, s->id, tree, idx);
	if (r == 0 && s->from_snap) {
		buf_t t = {0};
		r = catalog_snap_roots(st->cat, s->from_snap, &t, fidx);
		buf_free(&t);
	} else if (r == 0 && s->from_bm) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(catalog_db(st->cat), "SELECT idx FROM bookmark WHERE id=?", -1,
				       &q, NULL))
			return -EIO;
		sqlite3_bind_int64(q, 1, s->from_bm);
		r = sqlite3_step(q) == SQLITE_ROW
			    ? buf_append(fidx, sqlite3_column_blob(q, 0), sqlite3_column_bytes(q, 0))
			    : -ENOENT;
		sqlite3_finalize(q);
	}
	return r;
}

/* Calls fn for each chunk the receiver may lack, in a fixed order: the
 * snapshot's index entries the source's index lacks (digest order), then
 * the index stream's own chunks (unless !own: a decrypted stream sends
 * plain ones instead).  Resuming counts positions in this order. */
static int each_new_chunk(cairn_store *st, const buf_t *idx, const buf_t *fidx, bool own,
			  chunk_fn fn, void *arg)
{
	idxrd_t a, b;
	idxrd_open(&a, st->cs, idx);
	bool incr = fidx->len > 0;
	if (incr)
		idxrd_open(&b, st->cs, fidx);
	chunk_ref_t x, y;
	int ra = idxrd_next(&a, &x), rb = incr ? idxrd_next(&b, &y) : 0;
	int r = 0;
	while (r == 0 && ra == 1 && rb >= 0) {
		while (rb == 1 && digest_cmp(&y.digest, &x.digest) < 0)
			rb = idxrd_next(&b, &y);
		if (rb < 0)
			break;
		if (!(rb == 1 && !digest_cmp(&y.digest, &x.digest)))
			r = fn(arg, &x);
		if (r == 0)
			ra = idxrd_next(&a, &x);
	}
	if (r == 0 && ra < 0)
		r = ra;
	if (r == 0 && rb < 0)
		r = rb;
	idxrd_close(&a);
	if (incr)
		idxrd_close(&b);
	for (size_t i = 0; own && r == 0 && i < idx->len / CHUNK_REF_WIRE; i++) {
		chunk_ref_t ref;
		chunk_ref_unpack(idx->data + i * CHUNK_REF_WIRE, &ref);
		r = fn(arg, &ref);
	}
	return r;
}

typedef struct sctx {
	chunk_ref_t queued[4096];
	uint8_t queued_d[4096][32];
	size_t nqueued;
	cairn_store *st;
	swriter_t w;
	cairn_send_opts *o;
	uint64_t pos, skip, est;
	bool counting; /* estimate: add up what send_one would write */
	buf_t blob;
	int64_t last_progress;
	const char *object;
	/* A decrypted stream: the translating layer. */
	plainsend_t *ps;
	/* The chunks this group has sent (or skipped on resume, or found on
	 * the receiver): a chunk goes out once. */
	refset_t sent;
} sctx_t;

static int send_one(sctx_t *c, const chunk_ref_t *ref);
static int chunk_err(sctx_t *c, const digest_t *d, int r);
static int put_chunk(sctx_t *c, const digest_t *d, const buf_t *blob);


#define HAVE_BATCH 4096

/* With a have() filter, chunks are collected and asked about in batches:
 * one round trip per 4096 chunks, not one per chunk. */
static int have_flush(sctx_t *c)
{
	size_t n = c->nqueued;
	if (!n)
		return 0;
	uint8_t present[HAVE_BATCH];
	memset(present, 0, n);
	int r = c->o->have((const uint8_t(*)[32])c->queued_d, n, present, c->o->have_arg);
	if (r < 0)
		return store_err(c->st, r, "asking the receiver which chunks it has: %s",
				 strerror(-r));
	c->nqueued = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (present[i]) {
			c->o->chunks_skipped++;
			continue;
		}
		r = send_one(c, &c->queued[i]);
	}
	return r;
}

/* A chunk goes out once per group, however many of the group's
 * snapshots hold it (datasets with the same files, a child whose source
 * lies inside its parent's): the receiver has it from then on.  Every
 * sighting counts as a position, as when each one went out: a token of
 * such a stream counts them all, and one of this stream counts fewer
 * (the chunk records), so skipping by sightings never passes over a
 * chunk the receiver lacks (t0921). */
static int send_chunk(void *arg, const chunk_ref_t *ref)
{
	sctx_t *c = arg;
	if (SEND_STOPPED())
		return -EINTR;
	bool skipped = c->pos++ < c->skip;
	int k = refset_add(&c->sent, ref);
	if (k <= 0 || skipped)
		return k < 0 ? -ENOMEM : 0;
	if (!c->o->have)
		return send_one(c, ref);
	c->queued[c->nqueued] = *ref;
	memcpy(c->queued_d[c->nqueued++], ref->digest.b, DIGEST_LEN);
	return c->nqueued == HAVE_BATCH ? have_flush(c) : 0;
}

static int send_one(sctx_t *c, const chunk_ref_t *ref)
{
	if (c->counting) {
		c->est += ref->stored_len + DIGEST_LEN + 13;
		return 0;
	}
	int r = chunkstore_get_raw(c->st->cs, &ref->digest, &c->blob);
	if (r < 0)
		return chunk_err(c, &ref->digest, r);
	return put_chunk(c, &ref->digest, &c->blob);
}

static int chunk_err(sctx_t *c, const digest_t *d, int r)
{
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(d, hex);
	return store_err(c->st, r, "chunk %s: %s", hex,
			 r == -ENOENT ? "missing from the chunk store" : cairn_strerror(r));
}

/* One CHUNK record: the blob under the name it is sent with. */
static int put_chunk(sctx_t *c, const digest_t *d, const buf_t *blob)
{
	sw_begin(&c->w, REC_CHUNK);
	buf_append(&c->w.rec, d->b, DIGEST_LEN);
	buf_append(&c->w.rec, blob->data, blob->len);
	int r = sw_end(&c->w);
	if (r < 0)
		return store_err(c->st, r, "writing the stream: %s", strerror(-r));
	if (c->o->progress && mono_ns() - c->last_progress > 200000000) {
		c->last_progress = mono_ns();
		cairn_progress pr = {.phase = "send", .object = c->object, .bytes = c->w.bytes};
		c->o->progress(&pr, c->o->arg);
	}
	return 0;
}

/* Appends u32 count + (name, value) pairs that sql selects for id. */
static int put_pairs(swriter_t *w, cairn_store *st, const char *sql, int64_t id)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat), sql, -1, &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, id);
	size_t at = w->rec.len;
	buf_put_u32(&w->rec, 0);
	uint32_t n = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		sw_put_str(w, (const char *)sqlite3_column_text(q, 0));
		sw_put_str(w, (const char *)sqlite3_column_text(q, 1));
		n++;
	}
	sqlite3_finalize(q);
	put_u32(w->rec.data + at, n);
	return 0;
}

/* A dataset's properties as its replicas must see them: local values, and
 * received ones that no local value overrides and no `inherit` masks (so a
 * replica of a replica gets them too, as with zfs send -R). */
static int put_props(swriter_t *w, cairn_store *st, int64_t ds)
{
	if (!catalog_has_rprop(st->cat))
		return put_pairs(w, st, "SELECT name, value FROM dprop WHERE dataset=?1 ORDER BY name",
				 ds);
	return put_pairs(w, st,
			 "SELECT name, value FROM dprop WHERE dataset=?1 UNION ALL"
			 " SELECT name, value FROM rprop WHERE dataset=?1 AND masked=0 AND name NOT IN"
			 " (SELECT name FROM dprop WHERE dataset=?1) ORDER BY name",
			 ds);
}

static int put_snapprops(swriter_t *w, cairn_store *st, int64_t snap)
{
	return put_pairs(w, st, "SELECT name, value FROM sprop WHERE snapshot=? ORDER BY name", snap);
}

static int dataset_type(cairn_store *st, int64_t id, uint64_t *guid)
{
	ds_row_t d = {0};
	int t = catalog_ds_by_id(st->cat, id, &d) == 0 ? d.type : CAIRN_TYPE_FILESYSTEM;
	*guid = d.guid;
	ds_row_clear(&d);
	return t;
}

/* The (name, guid) list of each dataset lets the receiver apply renames
 * and, with -F, destroys. */
static int put_snaplist(sctx_t *c, int64_t ds, const char *name)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "SELECT name, guid FROM snapshot WHERE dataset=? ORDER BY createtxg", -1,
			       &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, ds);
	sw_begin(&c->w, REC_SNAPLIST);
	sw_put_str(&c->w, name);
	size_t at = c->w.rec.len;
	buf_put_u32(&c->w.rec, 0);
	uint32_t n = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		sw_put_str(&c->w, (const char *)sqlite3_column_text(q, 0));
		buf_put_u64(&c->w.rec, sqlite3_column_int64(q, 1));
		n++;
	}
	sqlite3_finalize(q);
	put_u32(c->w.rec.data + at, n);
	return sw_end(&c->w);
}

/* ---- decrypted streams (plainsend.h) ---- */

/* Sends a plain chunk once per group; only first sightings count as
 * positions for resume, as they always have here (unlike send_chunk:
 * this path never sent a repeat).  blob NULL: the data chunk with keyed id `keyed`,
 * decrypted and encoded only now that it goes out. */
static int plain_out(sctx_t *c, const chunk_ref_t *ref, const digest_t *keyed,
		     const buf_t *blob)
{
	if (SEND_STOPPED())
		return -EINTR;
	int k = refset_add(&c->sent, ref);
	if (k <= 0)
		return k < 0 ? -ENOMEM : 0;
	if (c->pos++ < c->skip)
		return 0;
	if (!blob) {
		int r = plainsend_blob(c->ps, keyed, &c->blob);
		if (r < 0)
			return chunk_err(c, keyed, r);
		blob = &c->blob;
	}
	return put_chunk(c, &ref->digest, blob);
}

/* A chunk of the snapshot's keyed index: a data chunk goes out plain;
 * the chunks of the encrypted tree stream never do (the plain tree
 * replaces them). */
static int plain_data(void *arg, const chunk_ref_t *keyed)
{
	sctx_t *c = arg;
	chunk_ref_t ref;
	if (!plainsend_lookup(c->ps, &keyed->digest, &ref))
		return 0;
	return plain_out(c, &ref, &keyed->digest, NULL);
}

static int plain_meta(void *arg, const chunk_ref_t *ref, const buf_t *blob)
{
	return plain_out(arg, ref, NULL, blob);
}

static int plain_failed(sctx_t *c, const sendsnap_t *s, const chunk_ref_t *failed, int r)
{
	if (c->w.err || r == -EINTR || c->st->errdetail[0])
		return r;
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(&failed->digest, hex);
	return store_err(c->st, r, "%s@%s: decrypting chunk %s: %s", s->dsname, s->name, hex,
			 r == -ENOENT ? "missing from the chunk store" : cairn_strerror(r));
}

/* The root lists of the snapshot's plain tree and index streams, which
 * replace the encrypted ones in its SNAP record. */
static int plain_roots(sctx_t *c, const sendsnap_t *s, buf_t *tree, buf_t *idx)
{
	buf_t ptree = {0}, pidx = {0};
	chunk_ref_t failed = {0};
	int r = plainsend_snapshot(c->ps, tree, NULL, NULL, &ptree, &pidx, &failed);
	if (r == 0) {
		buf_free(tree);
		buf_free(idx);
		*tree = ptree;
		*idx = pidx;
	} else {
		buf_free(&ptree);
		buf_free(&pidx);
		r = plain_failed(c, s, &failed, r);
	}
	return r;
}

/* The chunks the receiver may lack: new data chunks (the keyed indexes
 * still tell which are new), then the plain tree and index streams,
 * rebuilt from the encrypted tree the same way plain_roots did. */
static int plain_chunks(sctx_t *c, const sendsnap_t *s, const buf_t *ktree, const buf_t *kidx,
			const buf_t *fidx)
{
	int r = each_new_chunk(c->st, kidx, fidx, false, plain_data, c);
	buf_t t = {0}, x = {0};
	chunk_ref_t failed = {0};
	if (r == 0) {
		r = plainsend_snapshot(c->ps, ktree, plain_meta, c, &t, &x, &failed);
		if (r < 0)
			r = plain_failed(c, s, &failed, r);
	}
	buf_free(&t);
	buf_free(&x);
	return r;
}

static int send_snapshot(sctx_t *c, const sendsnap_t *s, bool recursive)
{
	buf_t tree = {0}, idx = {0}, fidx = {0};
	int r = roots_of(c->st, s, &tree, &idx, &fidx);
	if (r < 0) {
		buf_free(&tree);
		buf_free(&idx);
		buf_free(&fidx);
		return store_err(c->st, r, "%s@%s: %s", s->dsname, s->name, cairn_strerror(r));
	}
	/* decrypted: the SNAP record names the plain streams */
	buf_t ktree = {0}, kidx = {0};
	if (c->ps) {
		r = buf_append(&ktree, tree.data, tree.len);
		if (r == 0)
			r = buf_append(&kidx, idx.data, idx.len);
		if (r == 0)
			r = plain_roots(c, s, &tree, &idx);
		if (r < 0) {
			buf_free(&tree);
			buf_free(&idx);
			buf_free(&fidx);
			buf_free(&ktree);
			buf_free(&kidx);
			return r;
		}
	}
	swriter_t *w = &c->w;
	sw_begin(w, REC_SNAP);
	sw_put_str(w, s->dsname);
	sw_put_str(w, s->name);
	buf_put_u64(&w->rec, s->guid);
	buf_put_u64(&w->rec, s->from_guid);
	buf_put_u64(&w->rec, s->createtxg);
	buf_put_u64(&w->rec, (uint64_t)s->creation);
	buf_put_u64(&w->rec, s->referenced);
	buf_put_u64(&w->rec, s->logical);
	put_snapprops(w, c->st, s->id);
	buf_put_u32(&w->rec, tree.len / CHUNK_REF_WIRE);
	buf_append(&w->rec, tree.data, tree.len);
	buf_put_u32(&w->rec, idx.len / CHUNK_REF_WIRE);
	buf_append(&w->rec, idx.data, idx.len);
	r = sw_end(w);
	char obj[600];
	snprintf(obj, sizeof(obj), "%s@%s", s->dsname, s->name);
	c->object = obj;
	if (r == 0 && c->ps)
		r = plain_chunks(c, s, &ktree, &kidx, &fidx);
	else if (r == 0)
		r = each_new_chunk(c->st, &idx, &fidx, true, send_chunk, c);
	if (r == 0)
		r = have_flush(c);
	/* An index that cannot be read (a chunk of it missing) is this
	 * snapshot's failure, not the stream's: say which and why. */
	if (r < 0 && r != -EINTR && !c->w.err && !c->st->errdetail[0])
		store_err(c->st, r, "%s@%s: reading its index: %s", s->dsname, s->name,
			  r == -ENOENT ? "a chunk is missing from the chunk store" : cairn_strerror(r));
	if (r == 0) {
		sw_begin(w, REC_SNAPEND);
		buf_put_u64(&w->rec, s->guid);
		r = sw_end(w);
	}
	(void)recursive;
	buf_free(&ktree);
	buf_free(&kidx);
	buf_free(&tree);
	buf_free(&idx);
	buf_free(&fidx);
	return r;
}

/* The commit point of a group: it carries the digest of every byte
 * before it, so the receiver commits only verified bytes. */
static int group_end(sctx_t *c, uint64_t txg, size_t n)
{
	uint8_t md[DIGEST_LEN];
	int r = sw_digest(&c->w, md);
	if (r < 0)
		return r;
	sw_begin(&c->w, REC_GROUPEND);
	buf_put_u64(&c->w.rec, txg);
	buf_put_u32(&c->w.rec, n);
	buf_append(&c->w.rec, md, DIGEST_LEN);
	return sw_end(&c->w);
}

/* Raw streams: the wrapped key of each encryption root, carried by the
 * topmost sent dataset of that root (which becomes a root on the
 * receiver); the others inherit it there. */
static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* True when an ancestor of name inside root (root itself included) is
 * sent too (sorted holds the sent names, sorted). */
static bool ancestor_sent(char **sorted, size_t n, const char *name, const char *root)
{
	char up[1024];
	snprintf(up, sizeof(up), "%s", name);
	size_t rl = strlen(root);
	for (char *slash; (slash = strrchr(up, '/')) && (size_t)(slash - up) >= rl;) {
		*slash = 0;
		const char *key = up;
		if (!strncmp(up, root, rl) && (!up[rl] || up[rl] == '/') &&
		    bsearch(&key, sorted, n, sizeof(char *), cmp_strp))
			return true;
	}
	return false;
}

static int put_cryptkeys(sctx_t *c, const splan_t *p)
{
	char **sorted = malloc((p->nds + 1) * sizeof(char *));
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, p->dsnames, p->nds * sizeof(char *));
	qsort(sorted, p->nds, sizeof(char *), cmp_strp);
	int r = 0;
	for (size_t i = 0; r == 0 && i < p->nds; i++) {
		ds_row_t ds = {0};
		encroot_wrapped_t w;
		r = catalog_ds_by_id(c->st->cat, p->dsids[i], &ds);
		int k = r == 0 ? encroot_wrapped_get(c->st, &ds, &w) : 0;
		ds_row_clear(&ds);
		if (k <= 0) {
			r = r ? r : k;
			continue;
		}
		/* a sent ancestor of the same root carries the key */
		if (!ancestor_sent(sorted, p->nds, p->dsnames[i], w.root)) {
			sw_begin(&c->w, REC_CRYPTKEY);
			sw_put_str(&c->w, p->dsnames[i]);
			sw_put_str(&c->w, w.keyformat);
			sw_put_str(&c->w, w.keylocation);
			buf_append(&c->w.rec, w.blob, sizeof(w.blob));
			r = sw_end(&c->w);
		}
		encroot_wrapped_clear(&w);
	}
	free(sorted);
	return r;
}

static int write_stream(sctx_t *c, splan_t *p)
{
	int r = sw_init(&c->w, c->o->fd);
	c->w.stop = &g_stop;
	swriter_t *w = &c->w;
	if (r == 0) {
		sw_begin(w, REC_BEGIN);
		buf_put_u32(&w->rec, p->flags);
		buf_put_u64(&w->rec, p->skip);
		sw_put_str(w, p->top);
		buf_put_u64(&w->rec, p->n);
		buf_put_u64(&w->rec, p->toguid);
		buf_put_u64(&w->rec, p->fromguid);
		buf_put_u64(&w->rec, p->resume_txg);
		r = sw_end(w);
	}
	for (size_t i = 0; r == 0 && i < p->nds; i++) {
		sw_begin(w, REC_DATASET);
		uint64_t guid;
		sw_put_str(w, p->dsnames[i]);
		buf_put_u8(&w->rec, dataset_type(c->st, p->dsids[i], &guid));
		buf_put_u64(&w->rec, guid);
		if (p->flags & STREAM_F_RECURSIVE)
			put_props(w, c->st, p->dsids[i]);
		else
			buf_put_u32(&w->rec, 0);
		r = sw_end(w);
		if (r == 0 && (p->flags & STREAM_F_RECURSIVE))
			r = put_snaplist(c, p->dsids[i], p->dsnames[i]);
	}
	if (r == 0 && (p->flags & STREAM_F_RAW))
		r = put_cryptkeys(c, p);
	/* Chunk positions count across a group; a resumed stream skips the
	 * first p->skip of its first group. */
	c->skip = p->skip;
	size_t ingroup = 0;
	for (size_t i = 0; r == 0 && i < p->n; i++) {
		if (i && p->v[i].createtxg != p->v[i - 1].createtxg) {
			c->skip = 0;
			c->pos = 0;
			refset_free(&c->sent);
		}
		r = send_snapshot(c, &p->v[i], p->flags & STREAM_F_RECURSIVE);
		c->o->snapshots += r == 0;
		ingroup++;
		if (r == 0 && (i + 1 == p->n || p->v[i + 1].createtxg != p->v[i].createtxg)) {
			r = group_end(c, p->v[i].createtxg, ingroup);
			ingroup = 0;
		}
	}
	if (r == 0)
		r = sw_finish(w);
	c->o->bytes = w->bytes;
	if (r < 0 && !c->st->errdetail[0])
		store_err(c->st, r, "writing the stream: %s", strerror(-r));
	sw_free(w);
	return r;
}

static int estimate(sctx_t *c, splan_t *p)
{
	int r = 0;
	uint64_t total = 0;
	for (size_t i = 0; r == 0 && i < p->n; i++) {
		const sendsnap_t *s = &p->v[i];
		buf_t tree = {0}, idx = {0}, fidx = {0};
		c->est = 0;
		c->counting = true;
		if (i == 0 || s->createtxg != p->v[i - 1].createtxg) {
			c->pos = 0;
			c->skip = i == 0 ? p->skip : 0;
			refset_free(&c->sent); /* as write_stream does */
		}
		r = roots_of(c->st, s, &tree, &idx, &fidx);
		if (r == 0)
			r = each_new_chunk(c->st, &idx, &fidx, true, send_chunk, c);
		if (r == 0)
			r = have_flush(c);
		char to[600], from[600];
		snprintf(to, sizeof(to), "%s@%s", s->dsname, s->name);
		snprintf(from, sizeof(from), "%s%c%s", s->dsname, s->from_bm ? '#' : '@',
			 s->from_name ? s->from_name : "");
		if (r == 0 && c->o->estimate)
			c->o->estimate(s->from_guid ? "incremental" : "full",
				       s->from_guid ? from : NULL, to, c->est, c->o->arg);
		total += c->est;
		buf_free(&tree);
		buf_free(&idx);
		buf_free(&fidx);
	}
	c->o->bytes = total;
	c->o->snapshots = p->n;
	return r;
}

static void on_signal(int sig)
{
	(void)sig;
	STOP_FLAG_SET(g_stop, 1);
}

int cairn_send(cairn_store *st, const char *snap, cairn_send_opts *o)
{
	int e = STORE_ENTER(st);
	if (e < 0)
		return e;
	if (!o)
		return store_err(st, -EINVAL, "send: no options (opts->fd is required)");
	if (!snap && !o->resume_token)
		return store_err(st, -EINVAL, "send: no snapshot (snap is NULL)");
	STOP_FLAG_SET(g_stop, 0);
	splan_t p = {0};
	/* The context holds a have() batch: keep it off the stack. */
	sctx_t *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->st = st;
	c->o = o;
	int r = o->resume_token ? plan_resume(st, o->resume_token, o, &p) : plan_send(st, snap, o, &p);
	char tag[64];
	snprintf(tag, sizeof(tag), ".send-%d-%llu", (int)getpid(),
		 (unsigned long long)process_start_time(getpid()));
	bool held = false;
	if (r == 0 && !o->dry_run) {
		r = hold_all(st, &p, false, tag);
		held = r == 0;
	}
	/* Plain send of an encrypted dataset: through the decrypting layer
	 * (a dry run estimates from the stored sizes and needs none). */
	if (r == 0 && p.plain_key && !o->dry_run)
		r = plainsend_new(st->cs, p.plain_key, p.plain_level, &c->ps);
	if (r == 0 && o->dry_run)
		r = estimate(c, &p);
	else if (r == 0) {
		/* Stop cleanly on a signal so the holds go in one release; a
		 * closed pipe shows up as EPIPE from write. */
		struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term, old_pipe;
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
		struct sigaction ign = {.sa_handler = SIG_IGN};
		sigaction(SIGPIPE, &ign, &old_pipe);
		r = write_stream(c, &p);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGPIPE, &old_pipe, NULL);
		if (SEND_STOPPED() && r == -EINTR)
			store_err(st, r, "interrupted");
	}
	if (held) {
		char saved[sizeof(st->errdetail)];
		memcpy(saved, st->errdetail, sizeof(saved));
		int q = hold_all(st, &p, true, tag);
		if (r == 0)
			r = q;
		else
			memcpy(st->errdetail, saved, sizeof(saved));
	}
	buf_free(&c->blob);
	plainsend_free(c->ps);
	refset_free(&c->sent);
	free(c);
	plan_free(&p);
	return r;
}
