/* sync_plan.c - sync's plan (see sync_plan.h): the destination's listing
 * parsed, the source's subtree listed once, and the checks that decide
 * whether a -R stream goes, and what it would destroy. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync_plan.h"
#include "util.h"


typedef struct guid_rel {
	uint64_t guid;
	char *rel;
	char *name;
} guid_rel_t;

static int cmp_guid_rel(const void *a, const void *b)
{
	const guid_rel_t *x = a, *y = b;
	return x->guid < y->guid ? -1 : x->guid > y->guid;
}

void dest_have_free(dest_have_t *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->rels[i]);
		free(h->names[i]);
	}
	for (size_t i = 0; i < h->nbm; i++)
		free(h->bmrels[i]);
	for (size_t i = 0; i < h->nds; i++)
		free(h->dsrels[i]);
	free(h->guids);
	free(h->rels);
	free(h->names);
	free(h->bmguids);
	free(h->bmrels);
	free(h->dsguids);
	free(h->dsrels);
	free(h->top_example);
	free(h->sub_example);
	free(h->top_snap);
	memset(h, 0, sizeof(*h));
}

/* A dataset line ("DEST/kid\tGUID") of the destination: kept in h's
 * dataset list (rels are matched with the source's datasets by guid, for
 * renames). */
static int dest_ds_add(dest_have_t *h, const char *line, size_t nl, size_t dl, uint64_t guid)
{
	uint64_t *g = realloc(h->dsguids, (h->nds + 1) * sizeof(*g));
	if (g)
		h->dsguids = g;
	char **rl = g ? realloc(h->dsrels, (h->nds + 1) * sizeof(*rl)) : NULL;
	if (!rl)
		return -ENOMEM;
	h->dsrels = rl;
	if (!(rl[h->nds] = strndup(line + dl, nl - dl)))
		return -ENOMEM;
	h->dsguids[h->nds++] = guid;
	return 0;
}

/* (guid, rel, name) triples for grv_add's growing vector. */
typedef struct grvec {
	guid_rel_t *v;
	size_t n, cap;
} grvec_t;

static int grv_add(grvec_t *g, uint64_t guid, const char *rel, size_t rl, const char *name,
		   size_t nl)
{
	if (g->n == g->cap) {
		guid_rel_t *q = realloc(g->v, (g->cap = g->cap ? g->cap * 2 : 64) * sizeof(*q));
		if (!q)
			return -ENOMEM;
		g->v = q;
	}
	if (!(g->v[g->n].rel = strndup(rel, rl)))
		return -ENOMEM;
	if (!(g->v[g->n].name = strndup(name, nl))) {
		free(g->v[g->n].rel);
		return -ENOMEM;
	}
	g->v[g->n++].guid = guid;
	return 0;
}

/* Moves g, sorted by guid, into the arrays *guids, *rels and (if not
 * NULL) *names (*n long); after an error r, only frees g.  Returns r, or
 * -ENOMEM. */
static int grv_finish(grvec_t *g, int r, uint64_t **guids, char ***rels, char ***names,
		      size_t *n)
{
	if (g->n)
		qsort(g->v, g->n, sizeof(*g->v), cmp_guid_rel);
	*guids = calloc(g->n + 1, sizeof(**guids));
	*rels = calloc(g->n + 1, sizeof(**rels));
	if (names && !(*names = calloc(g->n + 1, sizeof(**names))))
		r = -ENOMEM;
	if (!*guids || !*rels)
		r = -ENOMEM;
	for (size_t i = 0; i < g->n; i++) {
		if (r == 0) {
			(*guids)[i] = g->v[i].guid;
			(*rels)[i] = g->v[i].rel;
		} else {
			free(g->v[i].rel);
		}
		if (r == 0 && names)
			(*names)[i] = g->v[i].name;
		else
			free(g->v[i].name);
	}
	*n = r == 0 ? g->n : 0;
	free(g->v);
	return r;
}

/* Parses `list -H -p -t all -o name,guid` lines ("DEST/kid@s\tGUID",
 * "DEST/kid#b\tGUID", "DEST/kid\tGUID") of the destination dest into h. */
static int dest_have_parse(char *out, const char *dest, dest_have_t *h)
{
	size_t dl = strlen(dest);
	grvec_t snaps = {0}, bms = {0};
	int r = 0;
	for (char *line = out, *next; r == 0 && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char *tab = strchr(line, '\t');
		size_t nl = strcspn(line, "@#");
		if (tab && nl > (size_t)(tab - line) && (size_t)(tab - line) >= dl) {
			r = dest_ds_add(h, line, tab - line, dl, strtoull(tab + 1, NULL, 10));
			continue; /* a dataset line */
		}
		if (!tab || nl < dl || nl > (size_t)(tab - line))
			continue; /* not a snapshot or bookmark line */
		char **example = nl == dl ? &h->top_example : &h->sub_example;
		if (!*example && !(*example = strndup(line, tab - line))) {
			r = -ENOMEM;
			break;
		}
		if (nl == dl && line[nl] == '@' && !h->top_snap &&
		    !(h->top_snap = strndup(line, tab - line))) {
			r = -ENOMEM;
			break;
		}
		r = grv_add(line[nl] == '#' ? &bms : &snaps, strtoull(tab + 1, NULL, 10), line + dl,
			    nl - dl, line, tab - line);
	}
	r = grv_finish(&snaps, r, &h->guids, &h->rels, &h->names, &h->n);
	return grv_finish(&bms, r, &h->bmguids, &h->bmrels, NULL, &h->nbm);
}

int dest_guids(const endpoint_t *d, dest_have_t *h)
{
	memset(h, 0, sizeof(*h));
	const char *verb[] = {"list", "-H", "-p", "-r", "-t", "all", "-o", "name,guid",
			      d->dataset, NULL};
	char *out, *err;
	int rc = dest_output(d, verb, &out, &err);
	if (rc < 0) {
		/* spawning failed: no ssh there, or $CAIRN_SSH is not one program */
		cli_err(d->dataset, "cannot list the destination: cannot run '%s': %s",
			d->host ? ssh_program() : "/proc/self/exe", strerror(-rc));
		free(err);
		return rc;
	}
	/* "does not exist" is expected for a first sync; anything else (no
	 * store there, ssh failing...) stops the sync with its reason. */
	if (rc && !(err && strstr(err, "dataset does not exist"))) {
		char *why = child_reason(err, rc, false, NULL);
		cli_err(d->dataset, "cannot list the destination: %s", why);
		free(why);
		free(err);
		free(out);
		return -EIO;
	}
	free(err);
	int r = dest_have_parse(rc ? NULL : out, d->dataset, h);
	free(out);
	if (r < 0)
		cli_err(d->dataset, "cannot list the destination: %s", strerror(-r));
	return r;
}

/* A rename sync -n has named: a dataset's rel there before and after. */
typedef struct rename_pair {
	char *from, *to;
} rename_pair_t;

static void pairs_free(rename_pair_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].from);
		free(v[i].to);
	}
	free(v);
}

/* Where the receiver finds the dataset that was old there once the
 * renames so far are made (they come parents first): under its nearest
 * renamed ancestor's new name, as a child moves with its parent.
 * Malloc'ed, or NULL. */
static char *after_renames(const rename_pair_t *rn, size_t n, const char *old)
{
	const rename_pair_t *best = NULL;
	size_t bl = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(rn[i].from);
		if (l > bl && !strncmp(old, rn[i].from, l) && old[l] == '/') {
			best = &rn[i];
			bl = l;
		}
	}
	char *s;
	if (!best)
		return strdup(old);
	return asprintf(&s, "%s%s", best->to, old + bl) < 0 ? NULL : s;
}

/* Appends (from, to) to *v (*n long, room for *cap).  0 or -ENOMEM. */
static int pair_add(rename_pair_t **v, size_t *n, size_t *cap, const char *from, const char *to)
{
	if (array_reserve(v, cap, *n + 1, sizeof(**v)) < 0)
		return -ENOMEM;
	rename_pair_t *p = &(*v)[*n];
	p->from = strdup(from);
	p->to = strdup(to);
	if (!p->from || !p->to) {
		free(p->from);
		free(p->to);
		return -ENOMEM;
	}
	++*n;
	return 0;
}

/* sync -n: prints the rename of old to rel that the receiver makes, as it
 * makes it: none for a child that moves with its parent, and a child's
 * own under its parent's new name ("would rename d/m/x to d/m/y" after
 * d/k to d/m).  Records it in *rn.  0 or -ENOMEM. */
static int say_rename(const char *say, rename_pair_t **rn, size_t *n, size_t *cap,
		      const char *old, const char *rel)
{
	char *from = after_renames(*rn, *n, old);
	if (!from)
		return -ENOMEM;
	if (strcmp(from, rel))
		printf("would rename %s%s to %s%s\n", say, from, say, rel);
	free(from);
	return pair_add(rn, n, cap, old, rel);
}

/* A planned rename: the destination dataset h->dsrels[at] becomes rel.
 * stays: rel is its name already (no rename of its own), kept so that
 * sync -n can say where the receiver moves it back to when a dataset
 * above it is renamed. */
typedef struct move {
	size_t at;
	char *rel;
	bool blocked, stays;
} move_t;

/* Whether the destination dataset k leaves its name: it, or a dataset
 * above it, is renamed by one of the n moves that are not blocked. */
static bool leaves(const dest_have_t *h, const move_t *mv, size_t n, size_t k)
{
	const char *rel = h->dsrels[k];
	for (size_t i = 0; i < n; i++) {
		const char *old = h->dsrels[mv[i].at];
		size_t l = strlen(old);
		if (!mv[i].blocked && !mv[i].stays && !strncmp(rel, old, l) &&
		    (!rel[l] || rel[l] == '/'))
			return true;
	}
	return false;
}

/* Blocks each move whose new name a destination dataset holds and keeps
 * (the receiver's rename is in the way, and says so); one blocked move
 * can block another, so until none changes. */
static void block_moves(const dest_have_t *h, move_t *mv, size_t n)
{
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; !mv[i].blocked && !mv[i].stays && k < h->nds; k++)
				if (!strcmp(h->dsrels[k], mv[i].rel) && !leaves(h, mv, n, k))
					changed = mv[i].blocked = true;
	}
}

static int cmp_pair_from(const void *a, const void *b)
{
	return strcmp(((const rename_pair_t *)a)->from, ((const rename_pair_t *)b)->from);
}

/* Each of the n rels that one of the np pairs (sorted by from) renames
 * becomes its new rel: all at once, so that a swap does not undo itself.
 * 0 or -ENOMEM. */
static int rels_remap(char **rels, size_t n, const rename_pair_t *pairs, size_t np)
{
	for (size_t k = 0; np && k < n; k++) {
		rename_pair_t key = {.from = rels[k]};
		const rename_pair_t *p = bsearch(&key, pairs, np, sizeof(*pairs), cmp_pair_from);
		if (!p)
			continue;
		char *nr = strdup(p->to);
		if (!nr)
			return -ENOMEM;
		free(rels[k]);
		rels[k] = nr;
	}
	return 0;
}

/* The moves of remap_renamed: each source dataset below ds whose guid a
 * destination dataset of another name has, and (stays) those whose guid
 * the destination has under the same name.  Returns how many, or <0. */
static long find_moves(cairn_store *st, const char *ds, const dest_have_t *h, move_t **mv)
{
	cairn_list_spec spec = {.roots = &ds, .nroots = 1, .depth = -1,
				.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME,
				.fields = 1u << CAIRN_F_GUID};
	cairn_list *l;
	int r = cairn_list_open(st, &spec, &l);
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	size_t dl = strlen(ds), n = 0, cap = 0;
	*mv = NULL;
	while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0)
		for (size_t i = 0; r >= 0 && i < b.n; i++) {
			const char *rel = b.name[i] + dl; /* "" or "/kid" */
			if (!*rel)
				continue; /* the top always maps to the destination */
			size_t at = SIZE_MAX, same = SIZE_MAX;
			for (size_t k = 0; k < h->nds; k++)
				if (h->dsguids[k] == b.field[CAIRN_F_GUID][i])
					*(strcmp(h->dsrels[k], rel) ? &at : &same) = k;
			bool stays = at == SIZE_MAX;
			if (stays && (at = same) == SIZE_MAX)
				continue;
			char *nr = strdup(rel);
			if (!nr || array_reserve(mv, &cap, n + 1, sizeof(**mv)) < 0) {
				free(nr);
				r = -ENOMEM;
			} else {
				(*mv)[n++] = (move_t){.at = at, .rel = nr, .stays = stays};
			}
		}
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free((*mv)[i].rel);
		free(*mv);
		*mv = NULL;
		return r;
	}
	return (long)n;
}

int remap_renamed(cairn_store *st, const char *ds, dest_have_t *h, const char *say)
{
	if (!h->nds)
		return 0;
	move_t *mv;
	long n = find_moves(st, ds, h, &mv);
	if (n <= 0)
		return (int)n;
	block_moves(h, mv, n);
	rename_pair_t *pairs = NULL, *said = NULL;
	size_t np = 0, pcap = 0, nsaid = 0, scap = 0;
	int r = 0;
	for (long i = 0; r == 0 && i < n; i++) {
		if (mv[i].blocked || mv[i].stays)
			continue;
		r = pair_add(&pairs, &np, &pcap, h->dsrels[mv[i].at], mv[i].rel);
		if (r == 0 && say)
			r = say_rename(say, &said, &nsaid, &scap, h->dsrels[mv[i].at], mv[i].rel);
	}
	/* A dataset that keeps its name but sits below a renamed one moves
	 * with it first, and back to its name after (a swap of parents). */
	for (long i = 0; r == 0 && say && np && i < n; i++)
		if (mv[i].stays)
			r = say_rename(say, &said, &nsaid, &scap, mv[i].rel, mv[i].rel);
	if (r == 0 && np)
		qsort(pairs, np, sizeof(*pairs), cmp_pair_from);
	if (r == 0)
		r = rels_remap(h->rels, h->n, pairs, np);
	if (r == 0)
		r = rels_remap(h->bmrels, h->nbm, pairs, np);
	if (r == 0)
		r = rels_remap(h->dsrels, h->nds, pairs, np);
	pairs_free(pairs, np);
	pairs_free(said, nsaid);
	for (long i = 0; i < n; i++)
		free(mv[i].rel);
	free(mv);
	return r < 0 ? r : (int)np;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Whether one of the nh (guids, rels) is in the dataset rel and its guid
 * in src (sorted, n long). */
static bool rel_holds_any(const uint64_t *guids, char *const *rels, size_t nh, const char *rel,
			  const uint64_t *src, size_t n)
{
	for (size_t i = 0; n && i < nh; i++)
		if (!strcmp(rels[i], rel) && bsearch(&guids[i], src, n, sizeof(*src), cmp_u64))
			return true;
	return false;
}

/* Whether the destination dataset k holds a snapshot or bookmark whose
 * guid is in src (sorted). */
static bool holds_any(const dest_have_t *h, size_t k, const uint64_t *src, size_t n)
{
	return rel_holds_any(h->guids, h->rels, h->n, h->dsrels[k], src, n) ||
	       rel_holds_any(h->bmguids, h->bmrels, h->nbm, h->dsrels[k], src, n);
}



void src_tree_free(src_tree_t *t)
{
	for (size_t i = 0; i < t->nds; i++)
		free(t->ds[i].rel);
	for (size_t i = 0; i < t->np; i++)
		free(t->pts[i].rel);
	free(t->ds);
	free(t->dsguids);
	free(t->pts);
	free(t->pguids);
	free(t->sguids);
	memset(t, 0, sizeof(*t));
}

static int cmp_rel(const void *a, const void *b)
{
	return strcmp(((const src_point_t *)a)->rel, ((const src_point_t *)b)->rel);
}

/* By rel, then createtxg; a snapshot before its bookmarks. */
static int cmp_point(const void *a, const void *b)
{
	const src_point_t *x = a, *y = b;
	int c = cmp_rel(a, b);
	if (c)
		return c;
	if (x->txg != y->txg)
		return x->txg < y->txg ? -1 : 1;
	return (int)x->bm - (int)y->bm;
}

/* One listed row, name the part after ds ("/kid", "/kid@s", "#b"). */
static int src_tree_add(src_tree_t *t, size_t cap[2], const char *name, uint64_t g, uint64_t txg)
{
	size_t rl = strcspn(name, "@#");
	bool point = name[rl] != 0;
	src_point_t **v = point ? &t->pts : &t->ds;
	size_t *n = point ? &t->np : &t->nds;
	if (array_reserve(v, &cap[point], *n + 1, sizeof(**v)) < 0)
		return -ENOMEM;
	src_point_t *p = &(*v)[*n];
	if (!(p->rel = strndup(name, rl)))
		return -ENOMEM;
	p->guid = g;
	p->txg = txg;
	p->bm = name[rl] == '#';
	++*n;
	return 0;
}

static void sort_u64(uint64_t *v, size_t n)
{
	if (n)
		qsort(v, n, sizeof(*v), cmp_u64);
}

static void sort_points(src_point_t *v, size_t n, int (*cmp)(const void *, const void *))
{
	if (n)
		qsort(v, n, sizeof(*v), cmp);
}

/* Orders what src_tree_add gathered, and sorts the guid sets. */
static int src_tree_index(src_tree_t *t)
{
	t->dsguids = malloc((t->nds + 1) * sizeof(*t->dsguids));
	t->pguids = malloc((t->np + 1) * sizeof(*t->pguids));
	t->sguids = malloc((t->np + 1) * sizeof(*t->sguids));
	if (!t->dsguids || !t->pguids || !t->sguids)
		return -ENOMEM;
	for (size_t i = 0; i < t->nds; i++)
		t->dsguids[i] = t->ds[i].guid;
	for (size_t i = 0; i < t->np; i++) {
		t->pguids[i] = t->pts[i].guid;
		if (!t->pts[i].bm)
			t->sguids[t->ns++] = t->pts[i].guid;
	}
	sort_points(t->ds, t->nds, cmp_rel); /* one dataset a rel */
	sort_points(t->pts, t->np, cmp_point);
	sort_u64(t->dsguids, t->nds);
	sort_u64(t->pguids, t->np);
	sort_u64(t->sguids, t->ns);
	return 0;
}

int src_tree_load(cairn_store *st, const char *ds, src_tree_t *t)
{
	memset(t, 0, sizeof(*t));
	cairn_list_spec spec = {.roots = &ds, .nroots = 1, .depth = -1,
				.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME |
					 CAIRN_TYPE_SNAPSHOT | CAIRN_TYPE_BOOKMARK,
				.fields = 1u << CAIRN_F_GUID | 1u << CAIRN_F_CREATETXG};
	cairn_list *l;
	int r = cairn_list_open(st, &spec, &l);
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	size_t cap[2] = {0, 0}, dl = strlen(ds);
	while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0)
		for (size_t i = 0; r >= 0 && i < b.n; i++)
			r = src_tree_add(t, cap, b.name[i] + dl, b.field[CAIRN_F_GUID][i],
					 b.field[CAIRN_F_CREATETXG][i]);
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	if (r >= 0)
		r = src_tree_index(t);
	if (r < 0)
		src_tree_free(t);
	return r < 0 ? r : 0;
}

static bool in_u64(const uint64_t *v, size_t n, uint64_t g)
{
	return n && bsearch(&g, v, n, sizeof(*v), cmp_u64);
}

/* Where the source's dataset rel ("" or "/kid") is in t->ds, or -1. */
static long src_dataset_at(const src_tree_t *t, const char *rel)
{
	src_point_t key = {.rel = (char *)rel};
	const src_point_t *d = t->nds ? bsearch(&key, t->ds, t->nds, sizeof(*t->ds), cmp_rel) : NULL;
	return d ? d - t->ds : -1;
}

/* The run of t's snapshots and bookmarks in dataset rel: [*lo, *hi). */
static void src_run(const src_tree_t *t, const char *rel, size_t *lo, size_t *hi)
{
	size_t a = 0, b = t->np;
	while (a < b) {
		size_t m = a + (b - a) / 2;
		if (strcmp(t->pts[m].rel, rel) < 0)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	while (a < t->np && !strcmp(t->pts[a].rel, rel))
		a++;
	*hi = a;
}

int dest_extra(const src_tree_t *t, const dest_have_t *h, const char *say, const char **first)
{
	if (first)
		*first = NULL;
	if (h->nds < 2)
		return 0; /* the top alone, or nothing */
	bool *kept = calloc(h->nds, sizeof(*kept));
	if (!kept)
		return -ENOMEM;
	for (size_t k = 0; k < h->nds; k++) {
		const char *rel = h->dsrels[k];
		kept[k] = !rel[0] || /* the top always maps */
			  in_u64(t->dsguids, t->nds, h->dsguids[k]) ||
			  /* the stream receives into it by name (recv's reconcile keeps it) */
			  src_dataset_at(t, rel) >= 0 || holds_any(h, k, t->pguids, t->np);
	}
	int extra = 0;
	const char *last = NULL; /* the last one printed: those below it go with it */
	for (size_t k = 0; k < h->nds; k++) {
		size_t rl = strlen(h->dsrels[k]);
		bool below = false;
		for (size_t j = 0; !kept[k] && !below && j < h->nds; j++)
			below = kept[j] && !strncmp(h->dsrels[j], h->dsrels[k], rl) &&
				h->dsrels[j][rl] == '/';
		if (kept[k] || below)
			continue;
		if (first && !extra)
			*first = h->dsrels[k];
		extra++;
		size_t ll = last ? strlen(last) : 0;
		if (say && !(last && !strncmp(h->dsrels[k], last, ll) && h->dsrels[k][ll] == '/')) {
			printf("would destroy %s%s\n", say, h->dsrels[k]);
			last = h->dsrels[k];
		}
	}
	free(kept);
	return extra;
}

/* Snapshot names "DS@S" by dataset, then snapshot ("d@b" before "d/k@a"). */
static int cmp_snapname(const void *a, const void *b)
{
	const unsigned char *x = *(const unsigned char *const *)a,
			    *y = *(const unsigned char *const *)b;
	while (*x && *x == *y)
		x++, y++;
	int cx = *x == '@' ? 1 : *x ? *x + 2 : 0, cy = *y == '@' ? 1 : *y ? *y + 2 : 0;
	return cx - cy;
}

/* Prints "would destroy NAME" for each of the n names, sorted. */
static void say_destroys(const char **names, size_t n)
{
	if (n)
		qsort(names, n, sizeof(*names), cmp_snapname);
	for (size_t i = 0; i < n; i++)
		printf("would destroy %s\n", names[i]);
}

static bool has_guid(const dest_have_t *h, const char *rel, uint64_t g);

/* Whether sync's stream builds rel's first snapshot on a bookmark of the
 * source (whose snapshot it no longer has), and on which (*g): rel's base
 * is that bookmark (its newest snapshot or bookmark whose snapshot the
 * destination dataset has, find_common) and rel has a newer snapshot. */
static bool bookmark_base(const src_tree_t *t, const dest_have_t *h, const char *rel,
			  uint64_t *g)
{
	uint64_t newest = 0, base = 0;
	bool found = false, bm = false;
	size_t lo, hi;
	src_run(t, rel, &lo, &hi);
	for (const src_point_t *p = t->pts + lo; p < t->pts + hi; p++) {
		if (!p->bm && p->txg > newest)
			newest = p->txg;
		if (has_guid(h, rel, p->guid) && (!found || p->txg > base)) {
			found = true;
			base = p->txg;
			*g = p->guid;
			bm = p->bm;
		}
	}
	return found && bm && newest > base;
}

/* Whether the dataset there at rel is the source's dataset ds+rel (the
 * same guid: a copy of it, which recv -R receives into by guid). */
static bool same_dataset(cairn_store *st, const char *ds, const dest_have_t *h, const char *rel)
{
	char name[1024];
	snprintf(name, sizeof(name), "%s%s", ds, rel);
	cairn_list_spec spec = {.roots = (const char *[]){name}, .nroots = 1, .depth = 0,
				.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME,
				.fields = 1u << CAIRN_F_GUID};
	cairn_list *l;
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	bool same = false;
	if (cairn_list_open(st, &spec, &l) < 0)
		return false;
	if (cairn_list_next(l, &cur, &b) > 0 && b.n)
		for (size_t k = 0; k < h->nds; k++)
			same |= h->dsguids[k] == b.field[CAIRN_F_GUID][0] && !strcmp(h->dsrels[k], rel);
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	return same;
}

/* The first snapshot there (its index in h) in dataset rel, or -1. */
static long first_in(const dest_have_t *h, const char *rel)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->rels[i], rel))
			return (long)i;
	return -1;
}

long child_unrelated(cairn_store *st, const char *ds, const dest_have_t *h, const src_tree_t *t)
{
	long at = -1;
	for (size_t lo = 0, hi; lo < t->np; lo = hi) {
		const char *rel = t->pts[lo].rel;
		bool common = false;
		for (hi = lo; hi < t->np && !strcmp(t->pts[hi].rel, rel); hi++)
			common |= has_guid(h, rel, t->pts[hi].guid);
		long first = !rel[0] || common ? -1 : first_in(h, rel);
		if (first >= 0 && (at < 0 || first < at) && same_dataset(st, ds, h, rel))
			at = first;
	}
	return at;
}

int dest_stale(const src_tree_t *t, const dest_have_t *h, const char *say)
{
	const char **names = say ? calloc(h->n + 1, sizeof(*names)) : NULL;
	/* each source dataset's bookmark base, found once (0: not yet, 1:
	 * none, 2: bmg[d]) */
	uint8_t *known = calloc(t->nds + 1, 1);
	uint64_t *bmg = calloc(t->nds + 1, sizeof(*bmg));
	int r = (say && !names) || !known || !bmg ? -ENOMEM : 0, stale = 0;
	for (size_t i = 0; r == 0 && i < h->n; i++) {
		long d = src_dataset_at(t, h->rels[i]);
		if (d < 0 || in_u64(t->sguids, t->ns, h->guids[i]))
			continue;
		if (!known[d])
			known[d] = bookmark_base(t, h, h->rels[i], &bmg[d]) ? 2 : 1;
		if (known[d] == 2 && bmg[d] == h->guids[i])
			continue; /* the stream builds on it */
		char *nm = NULL;
		if (names && asprintf(&nm, "%s%s%s", say, h->rels[i], strchr(h->names[i], '@')) < 0)
			r = -ENOMEM;
		else if (names)
			names[stale++] = nm;
		else
			stale++;
	}
	if (names && r == 0)
		say_destroys(names, stale);
	for (int i = 0; names && i < stale; i++)
		free((char *)names[i]);
	free(names);
	free(known);
	free(bmg);
	return r < 0 ? r : stale;
}

/* Whether one of the n (guids sorted, rels) is guid g in dataset rel. */
static bool in_rel(const uint64_t *guids, char *const *rels, size_t n, const char *rel,
		   uint64_t g)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (guids[mid] < g)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && guids[lo] == g; lo++)
		if (!strcmp(rels[lo], rel))
			return true;
	return false;
}

/* Whether the destination dataset REL ("" or "/kid") has a snapshot of
 * guid g (a receive can start from it). */
static bool has_guid(const dest_have_t *h, const char *rel, uint64_t g)
{
	return in_rel(h->guids, h->rels, h->n, rel, g);
}

/* Whether it has g as a snapshot or as a bookmark: it is a copy of the
 * dataset g is from. */
static bool knows_guid(const dest_have_t *h, const char *rel, uint64_t g)
{
	return has_guid(h, rel, g) || in_rel(h->bmguids, h->bmrels, h->nbm, rel, g);
}

bool dest_copy_of(const dest_have_t *h, const src_tree_t *t, const char *rel)
{
	if (src_dataset_at(t, rel) < 0)
		return false;
	bool any = false;
	for (size_t i = 0; !any && i < h->n; i++)
		any = !strcmp(h->rels[i], rel);
	for (size_t i = 0; !any && i < h->nbm; i++)
		any = !strcmp(h->bmrels[i], rel);
	size_t lo, hi;
	src_run(t, rel, &lo, &hi);
	for (size_t i = lo; any && i < hi; i++)
		if (knows_guid(h, rel, t->pts[i].guid))
			return true;
	return !any;
}

/* The common base a source bookmark gives (find_common): one whose
 * snapshot the destination dataset has is an incremental source (send
 * plans from it); one it has as a bookmark still shows it is a copy.
 * *bm ("#b") and *bmtxg: the top's newest such base so far. */
static int bookmark_row(const dest_have_t *h, const char *name, size_t dl, uint64_t g,
			uint64_t txg, char **bm, uint64_t *bmtxg, bool *related, bool *any_common)
{
	const char *hash = strchr(name, '#');
	char *rel = strndup(name + dl, hash - name - dl);
	if (!rel)
		return -ENOMEM;
	*any_common |= knows_guid(h, rel, g);
	bool top = !rel[0];
	free(rel);
	if (!top)
		return 0;
	*related |= knows_guid(h, "", g);
	if (!has_guid(h, "", g) || (*bm && txg < *bmtxg))
		return 0;
	char *c = strdup(hash);
	if (!c)
		return -ENOMEM;
	free(*bm);
	*bm = c;
	*bmtxg = txg;
	return 0;
}

int find_common(cairn_store *st, const char *ds, bool recursive, const dest_have_t *h,
		char **common, char **newest, bool *current, bool *related, bool *any_common)
{
	cairn_list_spec spec = {.roots = &ds, .nroots = 1, .depth = recursive ? -1 : 1,
				.types = CAIRN_TYPE_SNAPSHOT | CAIRN_TYPE_BOOKMARK,
				.fields = 1u << CAIRN_F_GUID | 1u << CAIRN_F_CREATETXG};
	cairn_list *l;
	int r = cairn_list_open(st, &spec, &l);
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	*common = *newest = NULL;
	*current = true;
	*related = *any_common = false;
	size_t dl = strlen(ds);
	char *lastds = NULL, *bm = NULL; /* the top's bookmark base ("#b") */
	uint64_t lastguid = 0, bmtxg = 0;
	while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0)
		for (size_t i = 0; r >= 0 && i < b.n; i++) {
			const char *name = b.name[i];
			const char *at = strchr(name, '@');
			uint64_t g = b.field[CAIRN_F_GUID][i];
			if (!at) {
				r = bookmark_row(h, name, dl, g, b.field[CAIRN_F_CREATETXG][i], &bm,
						 &bmtxg, related, any_common);
				continue;
			}
			if (lastds && (strlen(lastds) != (size_t)(at - name) ||
				       strncmp(lastds, name, at - name))) {
				*current &= has_guid(h, lastds + dl, lastguid);
				free(lastds);
				lastds = NULL;
			}
			if (!lastds && !(lastds = strndup(name, at - name))) {
				r = -ENOMEM;
				break;
			}
			lastguid = g;
			*any_common |= knows_guid(h, lastds + dl, g);
			if ((size_t)(at - name) != dl || strncmp(name, ds, dl))
				continue; /* a child: only its newest matters */
			free(*newest);
			*newest = strdup(name);
			*related |= knows_guid(h, "", g);
			if (has_guid(h, "", g)) {
				free(*common);
				*common = strdup(at);
			}
		}
	if (lastds)
		*current &= has_guid(h, lastds + dl, lastguid);
	free(lastds);
	if (!*common) { /* no snapshot there: the newest bookmark is the base */
		*common = bm;
		bm = NULL;
	}
	free(bm);
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	return r;
}
