/* zfs_compat.c - cairn answering as `zfs` and `zpool`.
 *
 * A link named zfs or zpool to the cairn binary, first in PATH, lets tools
 * written for zfs (sanoid, syncoid, scripts) drive cairn unmodified.  The
 * first component of a dataset name (the pool) selects a store through the
 * pools file: one "NAME STOREPATH" pair a line, '#' comments, at
 * /etc/cairn/pools unless CAIRN_POOLS_FILE names another.  Datasets keep
 * their full names inside the store (pool "tank" holds "tank", "tank/a").
 *
 * This file finds the operands of each zfs verb (the options that take a
 * value differ per verb), picks the store, and runs the cairn verb with
 * g_cli.zfs set, under which the verbs print zfs's texts.  zpool's few
 * read-only verbs (list, get) are answered here from the pools file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cli.h"
#include "zfs_compat.h"

typedef struct pool {
	char *name, *path;
} pool_t;

static pool_t *g_pools;
static size_t g_npools;
static const char *g_pools_file;

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

bool zfs_compat_invoked(const char *argv0)
{
	const char *b = base_name(argv0);
	return !strcmp(b, "zfs") || !strcmp(b, "zpool");
}

/* Reads the pools file; a missing file means no pools. */
static int load_pools(void)
{
	const char *f = getenv("CAIRN_POOLS_FILE");
	g_pools_file = f && *f ? f : "/etc/cairn/pools";
	FILE *fp = fopen(g_pools_file, "r");
	if (!fp)
		return errno == ENOENT ? 0 : -errno;
	char line[4096];
	int lineno = 0, rc = 0;
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		char *save, *name = strtok_r(line, " \t\r\n", &save);
		if (!name || name[0] == '#')
			continue;
		char *path = strtok_r(NULL, " \t\r\n", &save);
		if (!path || strtok_r(NULL, " \t\r\n", &save) || strpbrk(name, "/@#")) {
			fprintf(stderr, "%s:%d: expected 'POOLNAME STOREPATH'\n", g_pools_file,
				lineno);
			rc = -EINVAL;
			break;
		}
		pool_t *p = realloc(g_pools, (g_npools + 1) * sizeof(*p));
		if (!p)
			abort();
		g_pools = p;
		g_pools[g_npools].name = strdup(name);
		g_pools[g_npools++].path = strdup(path);
	}
	fclose(fp);
	return rc;
}

static const pool_t *pool_named(const char *name, size_t len)
{
	for (size_t i = 0; i < g_npools; i++)
		if (strlen(g_pools[i].name) == len && !strncmp(g_pools[i].name, name, len))
			return &g_pools[i];
	return NULL;
}

/* The pool of a dataset, snapshot or bookmark name. */
static const pool_t *pool_of(const char *name)
{
	return pool_named(name, strcspn(name, "/@#"));
}

const char *zfs_compat_action(const char *verb)
{
	static const char *map[][2] = {
		{"snapshot", "create snapshot"}, {"create", "create"},   {"destroy", "destroy"},
		{"rename", "rename"},            {"rollback", "rollback"}, {"hold", "hold"},
		{"release", "release"},          {"bookmark", "create bookmark"},
		{"recv", "receive"},             {"receive", "receive"},  {"set", "set property"},
		{"inherit", "inherit"},
	};
	for (size_t i = 0; verb && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i][0], verb))
			return map[i][1];
	return "open";
}

/* ---- zfs ---- */

enum { OP_MULTI, OP_ONE, OP_SET, OP_SEND };

static const struct zverb {
	const char *zname, *verb;
	const char *argopts; /* short options that take a value */
	int skip;            /* leading positionals that are not datasets */
	int kind;
} zverbs[] = {
	{"list", "list", "osSdt", 0, OP_MULTI},
	{"get", "get", "osdt", 1, OP_MULTI},
	{"set", "set", "", 0, OP_SET},
	{"inherit", "inherit", "", 1, OP_ONE},
	{"snapshot", "snapshot", "o", 0, OP_ONE},
	{"snap", "snapshot", "o", 0, OP_ONE},
	{"create", "create", "ob", 0, OP_ONE},
	{"destroy", "destroy", "", 0, OP_ONE},
	{"rename", "rename", "", 0, OP_ONE},
	{"rollback", "rollback", "", 0, OP_ONE},
	{"hold", "hold", "", 1, OP_ONE},
	{"release", "release", "", 1, OP_ONE},
	{"holds", "holds", "", 0, OP_ONE},
	{"bookmark", "bookmark", "", 0, OP_ONE},
	{"send", "send", "iItX", 0, OP_SEND},
	{"receive", "recv", "ox", 0, OP_ONE},
	{"recv", "recv", "ox", 0, OP_ONE},
};

typedef struct scan {
	int *operand;      /* argv indexes of dataset operands */
	size_t noperand;
	const char *token; /* send -t */
} scan_t;

static bool takes_value(const struct zverb *v, char c)
{
	return c && strchr(v->argopts, c);
}

/* Finds the dataset operands in argv[1..] (argv[0] is the zfs verb).
 * Options may follow operands (getopt permutes); "--" ends options. */
static void scan_args(const struct zverb *v, int argc, char **argv, scan_t *s)
{
	s->operand = calloc(argc, sizeof(int));
	s->noperand = 0;
	s->token = NULL;
	int positional = 0;
	bool opts = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (opts && !strcmp(a, "--")) {
			opts = false;
			continue;
		}
		if (opts && a[0] == '-' && a[1] == '-') {
			if (!strcmp(a, "--redact") && i + 1 < argc)
				i++;
			continue;
		}
		if (opts && a[0] == '-' && a[1]) {
			for (const char *c = a + 1; *c; c++) {
				if (!takes_value(v, *c))
					continue;
				const char *val = c[1] ? c + 1 : (i + 1 < argc ? argv[++i] : NULL);
				if (*c == 't' && v->kind == OP_SEND)
					s->token = val;
				break;
			}
			continue;
		}
		if (positional++ < v->skip)
			continue;
		if (v->kind == OP_SET && strchr(a, '='))
			continue;
		s->operand[s->noperand++] = i;
	}
}

static int run_in(const pool_t *p, int argc, char **argv)
{
	g_cli.store_path = p->path;
	char **copy = calloc(argc + 1, sizeof(char *));
	memcpy(copy, argv, argc * sizeof(char *));
	int rc = cli_run_verb(argc, copy);
	free(copy);
	return rc;
}

static void no_such(const char *name)
{
	fprintf(stderr, "cannot open '%s': dataset does not exist\n", name);
}

/* list/get: operands in several pools run once per store, in order of
 * first appearance; no operand means every pool. */
static int run_multi(int argc, char **argv, const scan_t *s)
{
	int rc = 0;
	char **av = calloc(argc + 1, sizeof(char *));
	bool *done = calloc(g_npools + 1, sizeof(bool));
	bool *is_op = calloc(argc, sizeof(bool));
	for (size_t k = 0; k < s->noperand; k++) {
		is_op[s->operand[k]] = true;
		if (!pool_of(argv[s->operand[k]])) {
			no_such(argv[s->operand[k]]);
			rc = 1;
		}
	}
	g_cli.defer_empty = true;
	g_cli.rows_out = 0;
	g_cli.json_multi = true; /* -j: one document over every store */
	for (size_t pi = 0; pi < g_npools; pi++) {
		const pool_t *p = &g_pools[pi];
		if (done[pi])
			continue;
		/* Pools sharing a store path run together. */
		int ac = 0;
		bool any = false;
		for (int i = 0; i < argc; i++) {
			if (!is_op[i]) {
				av[ac++] = argv[i];
				continue;
			}
			const pool_t *q = pool_of(argv[i]);
			if (q && !strcmp(q->path, p->path)) {
				av[ac++] = argv[i];
				any = true;
			}
		}
		for (size_t pj = pi; pj < g_npools; pj++)
			if (!strcmp(g_pools[pj].path, p->path))
				done[pj] = true;
		if (s->noperand && !any)
			continue;
		int r = run_in(p, ac, av);
		if (r > rc)
			rc = r;
	}
	if (g_cli.json_open)
		fputs("}}\n", stdout);
	/* list's "no datasets available" once, over every store. */
	if (!strcmp(argv[0], "list") && !g_cli.rows_out && !rc)
		fprintf(stderr, "no datasets available\n");
	free(av);
	free(done);
	free(is_op);
	return rc;
}

static int run_one(const struct zverb *v, int argc, char **argv, const scan_t *s)
{
	const pool_t *p = NULL;
	for (size_t k = 0; k < s->noperand; k++) {
		const char *name = argv[s->operand[k]];
		if (strcspn(name, "/@#") == 0)
			continue; /* "@snap" / "#bm": the same dataset as another operand */
		const pool_t *q = pool_of(name);
		if (!q) {
			if (!strcmp(v->verb, "recv"))
				fprintf(stderr, "cannot open '%.*s': dataset does not exist\n",
					(int)strcspn(name, "/@#"), name);
			else
				no_such(name);
			return 1;
		}
		if (p && strcmp(p->path, q->path)) {
			fprintf(stderr, "cannot %s '%s': datasets must be within same pool\n",
				zfs_compat_action(v->verb), name);
			return 1;
		}
		p = q;
	}
	if (!p && g_npools == 1)
		p = &g_pools[0];
	if (!p)
		return cli_run_verb(argc, argv); /* the verb's own usage error */
	return run_in(p, argc, argv);
}

/* send -t: the token names snapshots by guid only; use the store that has
 * them.  None has: zfs's text, which syncoid matches to reset the
 * receive and start over. */
static int run_send_token(int argc, char **argv, const char *token)
{
	for (size_t i = 0; i < g_npools; i++) {
		cairn_store *st;
		if (cairn_store_open(g_pools[i].path, &st) < 0)
			continue;
		cairn_send_opts o = {.resume_token = token, .dry_run = true, .fd = -1};
		int r = cairn_send(st, NULL, &o);
		cairn_store_close(st);
		if (r == 0)
			return run_in(&g_pools[i], argc, argv);
		if (r == CAIRN_ECORRUPT) {
			fprintf(stderr, "cannot resume send: resume token is corrupt or invalid\n");
			return 1;
		}
	}
	fprintf(stderr, "cannot resume send: the snapshot used in the initial send no "
			"longer exists\n");
	return 1;
}

static void zfs_usage(FILE *f)
{
	fprintf(f, "usage: zfs command args ...\nwhere 'command' is one of the following:\n\n");
	for (size_t i = 0; i < sizeof(zverbs) / sizeof(zverbs[0]); i++)
		fprintf(f, "\t%s\n", zverbs[i].zname);
	fprintf(f, "\n(cairn's zfs compatibility; pools from %s)\n", g_pools_file);
}

static int zfs_main(int argc, char **argv)
{
	if (argc < 2) {
		zfs_usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-?") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		zfs_usage(stdout);
		return 0;
	}
	const struct zverb *v = NULL;
	for (size_t i = 0; i < sizeof(zverbs) / sizeof(zverbs[0]); i++)
		if (!strcmp(zverbs[i].zname, argv[1]))
			v = &zverbs[i];
	if (!v) {
		fprintf(stderr, "unrecognized command '%s'\n", argv[1]);
		zfs_usage(stderr);
		return 2;
	}
	argv[1] = (char *)v->verb;
	argc--;
	argv++;
	scan_t s;
	scan_args(v, argc, argv, &s);
	int rc;
	if (v->kind == OP_SEND && s.token)
		rc = run_send_token(argc, argv, s.token);
	else if (v->kind == OP_MULTI)
		rc = run_multi(argc, argv, &s);
	else
		rc = run_one(v, argc, argv, &s);
	free(s.operand);
	return rc;
}

/* ---- zpool ---- */

/* Pool features zfs knows, and whether cairn has the equivalent. */
static const struct feature {
	const char *name;
	bool active;
} features[] = {
	{"extensible_dataset", true}, /* resumable receive (receive_resume_token) */
	{"bookmarks", true},
	{"bookmark_v2", true},
	{"zstd_compress", true},
	{"async_destroy", false},
	{"empty_bpobj", false},
	{"lz4_compress", false},
	{"multi_vdev_crash_dump", false},
	{"spacemap_histogram", false},
	{"enabled_txg", false},
	{"hole_birth", false},
	{"embedded_data", false},
	{"filesystem_limits", false},
	{"large_blocks", false},
	{"large_dnode", false},
	{"sha512", false},
	{"skein", false},
	{"edonr", false},
	{"userobj_accounting", false},
	{"encryption", false},
	{"project_quota", false},
	{"device_removal", false},
	{"obsolete_counts", false},
	{"zpool_checkpoint", false},
	{"spacemap_v2", false},
	{"allocation_classes", false},
	{"resilver_defer", false},
	{"redaction_bookmarks", false},
	{"redacted_datasets", false},
	{"bookmark_written", false},
	{"log_spacemap", false},
	{"livelist", false},
	{"device_rebuild", false},
	{"draid", false},
	{"head_errlog", false},
	{"blake3", false},
	{"block_cloning", false},
	{"vdev_zaps_v2", false},
};

typedef struct pstat {
	uint64_t size, alloc, free;
	int cap;
} pstat_t;

static int pool_stat(const pool_t *p, pstat_t *s)
{
	struct statvfs v;
	if (statvfs(p->path, &v) < 0)
		return -errno;
	s->size = (uint64_t)v.f_blocks * v.f_frsize;
	s->free = (uint64_t)v.f_bavail * v.f_frsize;
	s->alloc = s->size - (uint64_t)v.f_bfree * v.f_frsize;
	s->cap = s->size ? (int)((s->alloc * 100 + s->size - 1) / s->size) : 0;
	return 0;
}

#define NFEATURES (sizeof(features) / sizeof(features[0]))

static const struct feature *feature_named(const char *name)
{
	for (size_t i = 0; i < NFEATURES; i++)
		if (!strcmp(features[i].name, name))
			return &features[i];
	return NULL;
}

/* The pool properties pool_prop answers, feature@NAME aside; the first
 * five are zpool get all's. */
static const char *const pool_props[] = {"size",  "capacity", "health", "free",
					 "allocated", "name", "alloc", "cap"};
#define NALL_PROPS 5

/* Whether pool_prop answers prop: known before any output is printed, so
 * that an unknown one fails first, as in zpool. */
static bool pool_prop_known(const char *prop)
{
	if (!strncmp(prop, "feature@", 8))
		return feature_named(prop + 8) != NULL;
	for (size_t i = 0; i < sizeof(pool_props) / sizeof(pool_props[0]); i++)
		if (!strcmp(pool_props[i], prop))
			return true;
	return false;
}

/* The value of a pool property, or NULL for an unknown one. */
static const char *pool_prop(const pool_t *p, const char *prop, bool exact, char *out,
			     size_t len)
{
	if (!pool_prop_known(prop))
		return NULL;
	if (!strncmp(prop, "feature@", 8))
		return feature_named(prop + 8)->active ? "active" : "disabled";
	if (!strcmp(prop, "name"))
		return p->name;
	if (!strcmp(prop, "health"))
		return access(p->path, R_OK | W_OK | X_OK) == 0 ? "ONLINE" : "UNAVAIL";
	pstat_t s = {0};
	if (pool_stat(p, &s) < 0)
		return "-";
	if (prop[0] == 'c')
		snprintf(out, len, exact ? "%d" : "%d%%", s.cap);
	else
		cli_size(out, len, prop[0] == 's' ? s.size : prop[0] == 'f' ? s.free : s.alloc,
			 exact);
	if (!exact && out[strlen(out) - 1] == 'B')
		out[strlen(out) - 1] = 0;
	return out;
}

/* zpool get all: the pool properties, then every feature@NAME. */
static size_t all_pool_props(char **out)
{
	static char names[NFEATURES][48];
	size_t n = 0;
	for (; n < NALL_PROPS; n++)
		out[n] = (char *)pool_props[n];
	for (size_t i = 0; i < NFEATURES; i++) {
		snprintf(names[i], sizeof(names[i]), "feature@%s", features[i].name);
		out[n++] = names[i];
	}
	return n;
}

/* Refuses the first unknown property of props[0..n), as zpool words it. */
static int check_pool_props(char **props, size_t n)
{
	for (size_t j = 0; j < n; j++)
		if (!pool_prop_known(props[j])) {
			fprintf(stderr, "bad property list: invalid property '%s'\n", props[j]);
			return -1;
		}
	return 0;
}

static const pool_t *zpool_operand(const char *name)
{
	const pool_t *p = pool_named(name, strlen(name));
	if (!p)
		fprintf(stderr, "cannot open '%s': no such pool\n", name);
	return p;
}

/* Splits "a,b,c" in place. */
static size_t split_list(char *s, char **out, size_t max)
{
	size_t n = 0;
	char *save;
	for (char *t = strtok_r(s, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
		out[n++] = t;
	return n;
}

static void put_row(char **vals, size_t n, bool scripted)
{
	for (size_t i = 0; i < n; i++) {
		if (scripted)
			printf("%s%c", vals[i], i + 1 < n ? '\t' : '\n');
		else
			printf(i + 1 < n ? "%-12s " : "%s\n", vals[i]);
	}
}

/* The pools named by operands argv[0..n), or every pool when n is 0, into
 * out (room for n or g_npools); a missing one is reported and left out,
 * *rc set to 1.  Resolved before any output, so that an error comes
 * before the header, as in zpool. */
static size_t pick_pools(char **argv, size_t n, const pool_t **out, int *rc)
{
	size_t k = 0;
	for (size_t i = 0; i < (n ? n : g_npools); i++) {
		const pool_t *p = n ? zpool_operand(argv[i]) : &g_pools[i];
		if (p)
			out[k++] = p;
		else
			*rc = 1;
	}
	return k;
}

/* The header row: each column's name in capitals. */
static void put_header(char **cols, size_t n)
{
	char *h[32], up[32][32];
	for (size_t c = 0; c < n && c < 32; c++) {
		size_t j = 0;
		for (; cols[c][j] && j < 31; j++)
			up[c][j] = cols[c][j] >= 'a' && cols[c][j] <= 'z' ? cols[c][j] - 32 : cols[c][j];
		up[c][j] = 0;
		h[c] = up[c];
	}
	put_row(h, n < 32 ? n : 32, false);
}

/* zpool get all fits in zget's props. */
_Static_assert(NALL_PROPS + NFEATURES <= 64, "zpool get all: props[] too small");

typedef struct zget {
	bool scripted, exact;
	char *fields[4];
	size_t nf;
	char *props[64];
	size_t np;
} zget_t;

/* zpool get's options up to the first operand: its index, or -1 once an
 * error is printed. */
static int zget_opts(int argc, char **argv, zget_t *g, char **flist)
{
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		for (const char *c = argv[i] + 1; *c; c++) {
			if (*c == 'H')
				g->scripted = true;
			else if (*c == 'p')
				g->exact = true;
			else if (*c == 'o' && (c[1] || i + 1 < argc)) {
				*flist = c[1] ? (char *)c + 1 : argv[++i];
				break;
			} else if (*c == 'o') {
				fprintf(stderr, "missing argument for 'o' option\n");
				return -1;
			} else {
				fprintf(stderr, "invalid option '%c'\nusage:\n\tget [-Hp] [-o "
						"\"all\" | field[,...]] <\"all\" | property[,...]> "
						"<pool> ...\n", *c);
				return -1;
			}
		}
	}
	return i;
}

/* -o's fields (into list, modified): "all" is the four; -1 after an
 * error is printed. */
static int zget_fields(char *list, zget_t *g)
{
	if (!list || !strcmp(list, "all"))
		return 0; /* the defaults, set by the caller */
	g->nf = split_list(list, g->fields, 4);
	for (size_t k = 0; k < g->nf; k++)
		if (strcmp(g->fields[k], "name") && strcmp(g->fields[k], "property") &&
		    strcmp(g->fields[k], "value") && strcmp(g->fields[k], "source")) {
			fprintf(stderr, "invalid field '%s'\n", g->fields[k]);
			return -1;
		}
	return 0;
}

static void zget_row(const zget_t *g, const pool_t *p, char *prop)
{
	char buf[64], *row[4];
	const char *val = pool_prop(p, prop, g->exact, buf, sizeof(buf));
	for (size_t f = 0; f < g->nf; f++)
		row[f] = (char *)(!strcmp(g->fields[f], "name")       ? p->name
				  : !strcmp(g->fields[f], "property") ? prop
				  : !strcmp(g->fields[f], "value")    ? val
				  : !strncmp(prop, "feature@", 8)     ? "local"
								      : "-");
	put_row(row, g->nf, g->scripted);
}

/* zpool get [-Hp] [-o all|field[,...]] all|PROP[,...] [POOL]...  Every
 * argument is checked before the first line is printed: zpool prints
 * nothing when a property or field is unknown. */
static int zpool_get(int argc, char **argv)
{
	zget_t g = {.fields = {"name", "property", "value", "source"}, .nf = 4};
	char *flist = NULL;
	int i = zget_opts(argc, argv, &g, &flist);
	if (i < 0)
		return 2;
	/* fields and props point into these copies until the end */
	char *fdup = flist ? strdup(flist) : NULL, *plist = NULL;
	const pool_t **pools = NULL;
	int rc = 2;
	if ((flist && !fdup) || zget_fields(fdup, &g) < 0)
		goto out;
	if (i >= argc) {
		fprintf(stderr, "missing property argument\n");
		goto out;
	}
	plist = strdup(argv[i++]);
	if (!plist)
		goto out;
	g.np = !strcmp(plist, "all") ? all_pool_props(g.props) : split_list(plist, g.props, 64);
	if (check_pool_props(g.props, g.np) < 0)
		goto out;
	rc = 0;
	pools = calloc(argc - i + g_npools + 1, sizeof(*pools));
	if (!pools) {
		fprintf(stderr, "internal error: out of memory\n");
		rc = 1;
		goto out;
	}
	size_t npool = pick_pools(argv + i, argc - i, pools, &rc);
	if (npool && !g.scripted)
		put_header(g.fields, g.nf);
	for (size_t k = 0; k < npool; k++)
		for (size_t j = 0; j < g.np; j++)
			zget_row(&g, pools[k], g.props[j]);
out:
	free(pools);
	free(fdup);
	free(plist);
	return rc;
}

/* zpool list [-Hp] [-o PROP[,...]] [POOL]...  As zpool get, every
 * argument is checked before the first line is printed. */
static int zpool_list(int argc, char **argv)
{
	bool scripted = false, exact = false;
	char *olist = "name,size,alloc,free,cap,health";
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		for (const char *c = argv[i] + 1; *c; c++) {
			if (*c == 'H')
				scripted = true;
			else if (*c == 'p')
				exact = true;
			else if (*c == 'o' && (c[1] || i + 1 < argc)) {
				olist = c[1] ? (char *)c + 1 : argv[++i];
				break;
			} else if (*c == 'o') {
				fprintf(stderr, "missing argument for 'o' option\n");
				return 2;
			} else {
				fprintf(stderr, "invalid option '%c'\nusage:\n\tlist [-Hp] [-o "
						"property[,...]] [pool] ...\n", *c);
				return 2;
			}
		}
	}
	char *cols[32], *dup = strdup(olist);
	const pool_t **pools = calloc(argc - i + g_npools + 1, sizeof(*pools));
	if (!dup || !pools) {
		fprintf(stderr, "internal error: out of memory\n");
		free(dup);
		free(pools);
		return 1;
	}
	size_t nc = split_list(dup, cols, 32);
	if (check_pool_props(cols, nc) < 0) {
		free(dup);
		free(pools);
		return 2;
	}
	int rc = 0;
	size_t npool = pick_pools(argv + i, argc - i, pools, &rc);
	if (!g_npools && i >= argc)
		printf("no pools available\n");
	else if (npool && !scripted)
		put_header(cols, nc);
	for (size_t k = 0; k < npool; k++) {
		char *row[32], bufs[32][64];
		for (size_t c = 0; c < nc; c++)
			row[c] = (char *)pool_prop(pools[k], cols[c], exact, bufs[c], sizeof(bufs[c]));
		put_row(row, nc, scripted);
	}
	free(dup);
	free(pools);
	return rc;
}

static int zpool_main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "get"))
		return zpool_get(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "list"))
		return zpool_list(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "-?") || !strcmp(argv[1], "--help"))) {
		printf("usage: zpool command args ...\nwhere 'command' is one of the "
		       "following:\n\n\tlist [-Hp] [-o property[,...]] [pool] ...\n\tget [-Hp] "
		       "[-o \"all\" | field[,...]] <\"all\" | property[,...]> <pool> ...\n");
		return 0;
	}
	if (argc >= 2)
		fprintf(stderr, "unrecognized command '%s'\n", argv[1]);
	fprintf(stderr, "usage: zpool command args ...\n(cairn's zpool compatibility "
			"answers list and get)\n");
	return 2;
}

int zfs_compat_main(int argc, char **argv)
{
	g_cli.zfs = true;
	g_cli.progress = false;
	int r = load_pools();
	if (r < 0) {
		if (r != -EINVAL)
			fprintf(stderr, "cannot read pools file '%s': %s\n", g_pools_file,
				strerror(-r));
		return 1;
	}
	return !strcmp(base_name(argv[0]), "zpool") ? zpool_main(argc, argv)
						     : zfs_main(argc, argv);
}
