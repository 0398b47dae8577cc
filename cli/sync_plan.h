/* sync_plan.h - what sync decides before it sends: what the destination
 * has, what the source's subtree holds, and what a -R -F stream would
 * destroy or be refused for there. */
#ifndef CAIRN_CLI_SYNC_PLAN_H
#define CAIRN_CLI_SYNC_PLAN_H

#include "cli.h"
#include "sync_link.h"

/* What the destination has: the guid of every snapshot under the
 * destination dataset, sorted, and for each the dataset that holds it,
 * as the rest of its name after the destination's ("" for the
 * destination itself, "/kid" for DEST/kid): a source dataset is matched
 * with the one its name maps to there, never with a copy elsewhere.
 * Bookmarks are kept apart: they tell which datasets there are copies of
 * the source's, but a receive cannot start from one (it has no data). */
typedef struct dest_have {
	uint64_t *guids;
	char **rels;
	char **names; /* the snapshots' full names there, "DEST/kid@s" */
	size_t n;
	uint64_t *bmguids;
	char **bmrels;
	size_t nbm;
	/* The datasets there: their guids and rels, in listing order. */
	uint64_t *dsguids;
	char **dsrels;
	size_t nds;
	/* The first snapshot or bookmark of the destination dataset itself,
	 * and the first of a dataset under it (NULL: none), to name in a
	 * refusal the dataset that does have them. */
	char *top_example;
	char *sub_example;
	char *top_snap; /* the first snapshot of the destination itself */
} dest_have_t;

/* The source's subtree under ds, listed once a run (src_tree_load): its
 * datasets (rel "" or "/kid", guid), ordered by rel, and their guids
 * sorted apart; its snapshots and bookmarks (their dataset's rel, guid
 * and createtxg), ordered by rel and then createtxg, so that a dataset's
 * are one run (src_run); and their guids sorted, all and the snapshots'
 * alone.  A bookmark's guid is its snapshot's: the source keeps that
 * point of its history (and sends from it), if not the data.  (Each step
 * of the plan used to list the subtree again and to match every
 * destination snapshot against every source one: a sync -R -F of 9
 * datasets x 2000 snapshots with nothing to send spent 0.6 s, 90 % of it
 * in strcmp.) */
typedef struct src_point {
	char *rel;
	uint64_t guid, txg;
	bool bm;
} src_point_t;

typedef struct src_tree {
	src_point_t *ds;
	uint64_t *dsguids;
	size_t nds;
	src_point_t *pts;
	uint64_t *pguids, *sguids;
	size_t np, ns;
} src_tree_t;

void dest_have_free(dest_have_t *h);

/* What the destination dataset and its subtree hold (nothing if it does
 * not exist yet). */
int dest_guids(const endpoint_t *d, dest_have_t *h);

/* -R: a destination dataset with the guid of a source dataset whose name
 * maps elsewhere is that dataset, renamed on the source: the stream
 * renames it there (recv -R matches datasets by guid), so its snapshots
 * and bookmarks count for the name it is renamed to.  (Counted under its
 * old name, the renamed dataset was planned whole, and the full stream
 * was refused onto the dataset the receiver had just renamed, on every
 * run.)  All at once: a swap or a chain is planned as the receiver makes
 * it (parking a dataset that leaves a name).  Not when a dataset there
 * that no move takes away holds the new name: the receiver's rename is in
 * the way, and says so.  say (sync -n): the
 * destination dataset's name, and each rename is printed ("would rename
 * DEST/old to DEST/new").  Returns how many destination datasets are so
 * renamed, or <0. */
int remap_renamed(cairn_store *st, const char *ds, dest_have_t *h, const char *say);

void src_tree_free(src_tree_t *t);

int src_tree_load(cairn_store *st, const char *ds, src_tree_t *t);

/* -R -F: how many datasets under the destination the receiver of a -R -F
 * stream would destroy (as zfs recv -F does with an incremental -R
 * stream), or <0: those that are not the source's, by the receiver's
 * rules (lib/repl/recv.c, reconcile): a dataset is the source's when it
 * has the guid of a source dataset (renames included), or the name of
 * one (the stream receives into it by name), or holds a snapshot or
 * bookmark with the guid of a source snapshot (a copy made by a sync
 * without -R has a dataset guid of its own); one with such a dataset
 * below it stays too.  The stream carries the destroy even when
 * it has no snapshot to send: so sync sends one when the source's only
 * change is a destroyed dataset, instead of calling the destination up
 * to date and leaving it there.  say (sync -n): the destination
 * dataset's name, and each dataset so destroyed is printed ("would
 * destroy DEST/kid", as recv -n -v says it; not those below one).
 * *first (if not NULL): the first one's rel ("/kid", in h), or NULL. */
int dest_extra(const src_tree_t *t, const dest_have_t *h, const char *say, const char **first);

/* -R: a snapshot there (its index in h) in a copy of a source child
 * (same_dataset) none of whose snapshots is one of the source child's
 * snapshots or bookmarks: the child's stream is full, and the receiver
 * refuses it onto a dataset with snapshots.  The first such, in h's
 * order; -1 when there is none. */
long child_unrelated(cairn_store *st, const char *ds, const dest_have_t *h, const src_tree_t *t);

/* -R: whether the destination dataset rel ("" or "/kid", in h) is one a
 * stream of the source dataset of that name could go into: the source has
 * a dataset there, and the destination one has no snapshot or bookmark
 * yet, or has one with the guid of one of its snapshots or bookmarks.  A
 * dataset there with snapshots none of which is the source's is another
 * source's copy (a stream of this source is refused there anyway). */
bool dest_copy_of(const dest_have_t *h, const src_tree_t *t, const char *rel);

/* -R -F: how many snapshots there the receiver of an incremental -R -F
 * stream would destroy (apply_snaplist in lib/repl/recv.c): those of a
 * destination dataset the stream receives into (a source dataset's name)
 * whose guid no source snapshot has (h lists snapshots only: bookmarks
 * stay).  So a snapshot destroyed on the source is destroyed there by the
 * next sync, as a destroyed dataset is, not only once a new snapshot
 * comes.  Not one the source kept a bookmark of that the dataset's
 * stream builds on (the receiver keeps it); one that the stream does not
 * build on goes.  say (sync -n): the destination dataset's name, and each
 * is printed ("would destroy DEST/kid@s", as recv -n -v says it: kid
 * the name remap_renamed gave it, as the receiver renames first).  Or <0. */
int dest_stale(const src_tree_t *t, const dest_have_t *h, const char *say);

/* Over the source dataset (and its subtree with -R): the top's newest
 * snapshot (*newest, "ds@s"), the top's newest snapshot the destination
 * has as a snapshot (*common, "@s"; else the newest bookmark whose
 * snapshot it has, "#b"), whether every dataset's newest
 * snapshot is already in the destination dataset its name maps to
 * (*current): the decision is per dataset, as send plans it; whether the
 * destination top has one of the top's snapshots as a snapshot or a
 * bookmark (*related: it is a copy of this source, if one a receive
 * cannot start from); and whether any dataset has one there at all
 * (*any_common: the destination is a copy of this source, even when its
 * top has no snapshot yet). */
int find_common(cairn_store *st, const char *ds, bool recursive, const dest_have_t *h,
		char **common, char **newest, bool *current, bool *related, bool *any_common);

#endif
