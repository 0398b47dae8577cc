/* cmd_list.c - cairn list: datasets and snapshots with properties, after
 * `zfs list`.  Rows stream from the library's batch iterator; they are
 * only held in memory when a sort key or column alignment needs them all. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "props.h"

#define MAX_SZ(a, b) ((a) > (b) ? (a) : (b))

static const char *u =
	"list [-H] [-p] [-r | -d DEPTH] [-t TYPE[,TYPE]...] [-o PROP[,PROP]...]\n"
	"       [-s PROP]... [-S PROP]... [-j|--json [--json-int]] [DATASET|SNAPSHOT]...\n"
	"  -o space: name,avail,used,usedsnap,usedds,usedrefreserv,usedchild";

typedef struct sortkey {
	column_t col;
	bool desc;
} sortkey_t;

typedef struct row {
	char **vals;
	char **kstr;
	uint64_t *knum;
	bool *khas;
	int type;
	size_t seq;
	char *name;
	uint64_t createtxg;
	char **srcs; /* JSON only */
} row_t;

typedef struct lopts {
	bool scripted, exact, json, json_int;
	column_t *cols;
	size_t ncols;
	sortkey_t *keys;
	size_t nkeys;
	row_t *rows;
	size_t nrows, caprows;
	size_t *width;
} lopts_t;

static lopts_t *g_sort_opts;

static int parse_types(const char *s, int *mask)
{
	const char *bad;
	if (types_parse(s, mask, &bad) < 0)
		return cli_usage(u, "invalid type '%s'", bad), -1;
	return 0;
}

static uint32_t fields_of(const column_t *c)
{
	return c->def && c->def->field >= 0 ? 1u << c->def->field : 0;
}

/* ---- output ---- */

static const char *json_type(int type)
{
	switch (type) {
	case CAIRN_TYPE_FILESYSTEM: return "FILESYSTEM";
	case CAIRN_TYPE_VOLUME: return "VOLUME";
	case CAIRN_TYPE_SNAPSHOT: return "SNAPSHOT";
	default: return "BOOKMARK";
	}
}

static void json_row(lopts_t *o, const row_t *r)
{
	FILE *f = stdout;
	json_object_sep();
	json_str(f, r->name);
	fputs(":{\"name\":", f);
	json_str(f, r->name);
	fprintf(f, ",\"type\":\"%s\",\"pool\":", json_type(r->type));
	char *pool = strdup(r->name);
	pool[strcspn(pool, "/@#")] = 0;
	json_str(f, pool);
	free(pool);
	if (o->json_int)
		fprintf(f, ",\"createtxg\":%llu", (unsigned long long)r->createtxg);
	else
		fprintf(f, ",\"createtxg\":\"%llu\"", (unsigned long long)r->createtxg);
	const char *at = strchr(r->name, '@');
	if (at) {
		char *ds = strndup(r->name, at - r->name);
		fputs(",\"dataset\":", f);
		json_str(f, ds);
		fputs(",\"snapshot_name\":", f);
		json_str(f, at + 1);
		free(ds);
	}
	fputs(",\"properties\":{", f);
	bool first = true;
	for (size_t c = 0; c < o->ncols; c++) {
		const column_t *col = &o->cols[c];
		if (col->def && !strcmp(col->def->name, "name"))
			continue; /* the object's key and "name" say it, as in zfs */
		if (!first)
			fputc(',', f);
		first = false;
		json_str(f, col->def ? col->def->name : col->user);
		fputs(":{\"value\":", f);
		if (o->json_int && json_numeric(col) && strcmp(r->vals[c], "-") &&
		    col->def->kind != K_STR)
			fputs(r->vals[c], f);
		else
			json_str(f, r->vals[c]);
		json_source(f, r->srcs[c]);
		fputc('}', f);
	}
	fputs("}}", f);
}

/* Numbers align right, text and dates left, as zfs list does. */
static bool col_right(const column_t *c)
{
	if (c->written_at || (c->def && c->def->kind == K_RATIO))
		return true;
	return c->def && c->def->kind != K_STR && c->def->kind != K_DATE &&
	       strcmp(c->def->name, "name");
}

static void print_row(lopts_t *o, const row_t *r)
{
	if (o->json) {
		json_row(o, r);
		return;
	}
	for (size_t c = 0; c < o->ncols; c++) {
		const char *v = r->vals[c];
		if (o->scripted) {
			fputs(v, stdout);
			putchar(c + 1 < o->ncols ? '\t' : '\n');
			continue;
		}
		bool right = col_right(&o->cols[c]);
		if (c + 1 == o->ncols && !right)
			printf("%s\n", v);
		else
			printf(right ? "%*s%s" : "%-*s%s", (int)o->width[c], v,
			       c + 1 < o->ncols ? "  " : "\n");
	}
}

static void row_free(lopts_t *o, row_t *r)
{
	for (size_t c = 0; c < o->ncols; c++) {
		free(r->vals[c]);
		if (r->srcs)
			free(r->srcs[c]);
	}
	for (size_t k = 0; k < o->nkeys; k++)
		free(r->kstr[k]);
	free(r->vals);
	free(r->srcs);
	free(r->kstr);
	free(r->knum);
	free(r->khas);
	free(r->name);
}

/* ---- building rows ---- */

static int make_row(lopts_t *o, const rowref_t *ref, size_t seq, row_t *r)
{
	memset(r, 0, sizeof(*r));
	r->vals = calloc(o->ncols, sizeof(char *));
	r->kstr = calloc(o->nkeys + 1, sizeof(char *));
	r->knum = calloc(o->nkeys + 1, sizeof(uint64_t));
	r->khas = calloc(o->nkeys + 1, sizeof(bool));
	r->name = strdup(ref->b->name[ref->i]);
	r->type = ref->b->type[ref->i];
	r->seq = seq;
	if (ref->b->field[CAIRN_F_CREATETXG])
		r->createtxg = ref->b->field[CAIRN_F_CREATETXG][ref->i];
	if (o->json)
		r->srcs = calloc(o->ncols, sizeof(char *));
	char buf[8192], src[512];
	for (size_t c = 0; c < o->ncols; c++) {
		uint64_t n;
		bool has;
		bool exact = o->exact || (o->json_int && json_numeric(&o->cols[c]));
		int e = column_value(ref, &o->cols[c], exact, buf, sizeof(buf), &n, &has);
		if (e < 0)
			return e;
		r->vals[c] = strdup(buf);
		if (o->json) {
			e = column_source(ref, &o->cols[c], src, sizeof(src));
			if (e < 0)
				return e;
			r->srcs[c] = strdup(src);
		}
	}
	for (size_t k = 0; k < o->nkeys; k++) {
		int e = column_value(ref, &o->keys[k].col, true, buf, sizeof(buf), &r->knum[k],
				     &r->khas[k]);
		if (e < 0)
			return e;
		r->kstr[k] = strdup(buf);
	}
	return 0;
}

/* Keys left to right; a missing value ("-") sorts after every value in
 * either direction, as zfs does; ties keep the default (tree) order. */
static int row_cmp(const void *a, const void *b)
{
	const row_t *x = a, *y = b;
	lopts_t *o = g_sort_opts;
	for (size_t k = 0; k < o->nkeys; k++) {
		bool xm = !strcmp(x->kstr[k], "-"), ym = !strcmp(y->kstr[k], "-");
		if (xm != ym)
			return xm ? 1 : -1;
		if (xm)
			continue;
		int c;
		if (x->khas[k] && y->khas[k])
			c = x->knum[k] < y->knum[k] ? -1 : x->knum[k] > y->knum[k];
		else
			c = strcmp(x->kstr[k], y->kstr[k]);
		if (c)
			return o->keys[k].desc ? -c : c;
	}
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int keep_row(lopts_t *o, row_t *r)
{
	if (o->nrows == o->caprows) {
		size_t n = o->caprows ? o->caprows * 2 : 1024;
		row_t *p = realloc(o->rows, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		o->rows = p;
		o->caprows = n;
	}
	o->rows[o->nrows++] = *r;
	return 0;
}

static void print_header(lopts_t *o)
{
	if (o->scripted || o->json || g_cli.no_header)
		return;
	g_cli.no_header = true; /* once, over several stores too */
	row_t h = {.vals = calloc(o->ncols, sizeof(char *))};
	for (size_t c = 0; c < o->ncols; c++)
		h.vals[c] = o->cols[c].header;
	/* Headers align as their column's values do: right over numbers. */
	for (size_t c = 0; c < o->ncols; c++) {
		bool right = col_right(&o->cols[c]);
		if (c + 1 == o->ncols && !right)
			printf("%s\n", h.vals[c]);
		else
			printf(right ? "%*s%s" : "%-*s%s", (int)o->width[c], h.vals[c],
			       c + 1 < o->ncols ? "  " : "\n");
	}
	free(h.vals);
}

static void flush_rows(lopts_t *o)
{
	if (o->nkeys && o->nrows) {
		g_sort_opts = o;
		qsort(o->rows, o->nrows, sizeof(*o->rows), row_cmp);
	}
	for (size_t c = 0; c < o->ncols; c++) {
		o->width[c] = strlen(o->cols[c].header);
		for (size_t i = 0; !o->scripted && i < o->nrows; i++)
			o->width[c] = MAX_SZ(o->width[c], strlen(o->rows[i].vals[c]));
	}
	if (o->nrows)
		print_header(o); /* nothing listed: only "no datasets available" */
	for (size_t i = 0; i < o->nrows; i++) {
		print_row(o, &o->rows[i]);
		row_free(o, &o->rows[i]);
	}
	o->nrows = 0;
}

/* -H output of names, types and projected numbers streams straight from
 * the batch arrays: no per-row allocation or property lookup. */
static bool fast_ok(const lopts_t *o)
{
	if (!o->scripted || o->json || o->nkeys)
		return false;
	for (size_t c = 0; c < o->ncols; c++) {
		const prop_def_t *d = o->cols[c].def;
		if (!d || (d->field < 0 && strcmp(d->name, "name") && strcmp(d->name, "type")))
			return false;
		if (!strcmp(d->name, "lastverified"))
			return false; /* prints "-" for never */
	}
	return true;
}

static char *u64_dec(char *end, uint64_t v)
{
	*--end = 0;
	do
		*--end = '0' + v % 10;
	while (v /= 10);
	return end;
}

static void fast_rows(const lopts_t *o, const cairn_list_batch *b)
{
	char tmp[64];
	for (size_t i = 0; i < b->n; i++) {
		for (size_t c = 0; c < o->ncols; c++) {
			const prop_def_t *d = o->cols[c].def;
			const char *v;
			if (d->field < 0)
				v = !strcmp(d->name, "name") ? b->name[i] : type_name(b->type[i]);
			else if (!(d->types & b->type[i]))
				v = "-";
			else if (d->kind == K_BOOL)
				v = b->field[d->field][i] ? "on" : "off";
			else if (o->exact || d->kind == K_NUM)
				v = u64_dec(tmp + sizeof(tmp), b->field[d->field][i]);
			else {
				rowref_t ref = {.b = b, .i = i};
				uint64_t num;
				bool has;
				column_value(&ref, &o->cols[c], false, tmp, sizeof(tmp), &num, &has);
				v = tmp;
			}
			fputs_unlocked(v, stdout);
			putc_unlocked(c + 1 < o->ncols ? '\t' : '\n', stdout);
		}
	}
}

static int run(cairn_store *st, cairn_list_spec *spec, lopts_t *o)
{
	cairn_list *l;
	int r = cairn_list_open(st, spec, &l);
	if (r < 0)
		return r;
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	rowref_t ref = {.st = st, .b = &b};
	cairn_store_available(st, &ref.available);
	bool stream = !o->nkeys && (o->scripted || o->json);
	size_t seq = 0;
	if (o->json)
		json_begin("list");
	/* The reference path also takes the general formatting, so the parity
	 * tests compare both formatters too. */
	bool fast = fast_ok(o) && !spec->reference;
	while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0) {
		g_cli.rows_out += b.n;
		if (fast) {
			fast_rows(o, &b);
			continue;
		}
		for (size_t i = 0; i < b.n && r >= 0; i++) {
			row_t row;
			ref.i = i;
			r = make_row(o, &ref, seq++, &row);
			if (r < 0) {
				row_free(o, &row);
				break;
			}
			if (stream) {
				print_row(o, &row);
				row_free(o, &row);
			} else {
				r = keep_row(o, &row);
			}
		}
	}
	if (r >= 0 && !stream)
		flush_rows(o);
	if (o->json)
		json_end();
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	return r < 0 ? r : 0;
}

/* Whether a root names something; if not, says so as the verb's error. */
static bool root_exists(cairn_store *st, const char *root)
{
	const char *one[] = {root};
	/* Nothing is read from this one: batch settings of its own spare it
	 * the two setting lookups (the listing itself reads and checks them). */
	cairn_list_spec s = {.roots = one, .nroots = 1, .depth = 0,
			     .types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME |
				      CAIRN_TYPE_SNAPSHOT | CAIRN_TYPE_BOOKMARK,
			     .batch_size = 1, .batch_time_us = 1};
	cairn_list *l;
	int r = cairn_list_open(st, &s, &l);
	cairn_list_close(l);
	if (r == -ENOENT || r == CAIRN_EBADNAME) {
		cli_fail(st, root, r);
		return false;
	}
	return true; /* other errors: the listing itself reports them */
}

int cmd_list(int argc, char **argv)
{
	static const struct option lo[] = {{"json-int", no_argument, 0, 'I'},
					   {"json", no_argument, 0, 'j'},
					   {"help", no_argument, 0, 'h'},
					   {0}};
	lopts_t o = {0};
	cairn_list_spec spec = {.depth = -2};
	const char *cols = "name,used,avail,refer,source";
	bool recursive = false;
	sortkey_t keys[32];
	int ch;
	while ((ch = getopt_long(argc, argv, "Hprhd:t:o:s:S:j", lo, NULL)) != -1) {
		switch (ch) {
		case 'h': printf("usage: %s %s\n", g_cli.zfs ? "zfs" : "cairn", u); return 0;
		case 'H': o.scripted = true; break;
		case 'p': o.exact = true; break;
		case 'j': o.json = true; break;
		case 'I': o.json_int = true; break;
		case 'r': recursive = true; break; /* -d wins, whatever the order */
		case 'd': {
			uint64_t d;
			if (parse_uint(optarg, 0, 1000000, &d) < 0)
				return cli_usage(u, "invalid depth '%s' (0..1000000)", optarg);
			spec.depth = d;
			break;
		}
		case 't':
			if (parse_types(optarg, &spec.types) < 0)
				return EXIT_USAGE;
			break;
		case 'o': cols = optarg; break;
		case 's':
		case 'S': {
			if (o.nkeys == 32)
				return cli_usage(u, "too many sort keys");
			column_t *c;
			size_t n;
			if (columns_parse(optarg, &c, &n, u) < 0)
				return EXIT_USAGE;
			if (n != 1) {
				free(c);
				return cli_usage(u, "one property per -s/-S: '%s'", optarg);
			}
			keys[o.nkeys].col = c[0];
			keys[o.nkeys++].desc = ch == 'S';
			free(c);
			break;
		}
		default:
			return cli_usage(u, NULL);
		}
	}
	if (o.json_int && !o.json)
		return cli_usage(u, "--json-int needs -j");
	/* zfs's shorthand: the space columns, of filesystems and volumes. */
	if (!strcmp(cols, "space")) {
		cols = "name,avail,used,usedsnap,usedds,usedrefreserv,usedchild";
		if (!spec.types)
			spec.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME;
	}
	if (columns_parse(cols, &o.cols, &o.ncols, u) < 0)
		return EXIT_USAGE;
	o.keys = keys;
	spec.roots = (const char *const *)argv + optind;
	spec.nroots = argc - optind;
	if (spec.depth == -2 && recursive)
		spec.depth = -1;
	if (spec.depth == -2)
		spec.depth = !spec.nroots ? -1
			     : (spec.types == CAIRN_TYPE_SNAPSHOT || spec.types == CAIRN_TYPE_BOOKMARK) ? 1
												   : 0;
	for (size_t c = 0; c < o.ncols; c++)
		spec.fields |= fields_of(&o.cols[c]);
	for (size_t k = 0; k < o.nkeys; k++)
		spec.fields |= fields_of(&o.keys[k].col);
	if (o.json)
		spec.fields |= 1u << CAIRN_F_CREATETXG;
	const char *ref = getenv("CAIRN_LIST_REFERENCE");
	spec.reference = ref && *ref == '1';
	o.width = calloc(o.ncols, sizeof(size_t));
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	cairn_store *st;
	int rc = cli_open(&st);
	if (!rc) {
		/* zfs lists the roots that exist and exits 1 for the others. */
		const char **roots = calloc(spec.nroots + 1, sizeof(char *));
		size_t nroots = 0;
		for (size_t i = 0; i < spec.nroots; i++) {
			if (root_exists(st, spec.roots[i]))
				roots[nroots++] = spec.roots[i];
			else
				rc = 1;
		}
		int r = 0;
		if (nroots || !spec.nroots) {
			spec.roots = roots;
			spec.nroots = nroots;
			r = run(st, &spec, &o);
		}
		if (r < 0)
			rc = cli_fail(st, NULL, r);
		else if (!g_cli.rows_out && !g_cli.defer_empty && !rc && !o.json)
			fprintf(stderr, "no datasets available\n");
		free(roots);
		cairn_store_close(st);
	}
	for (size_t c = 0; c < o.ncols; c++)
		free((char *)o.cols[c].user);
	for (size_t k = 0; k < o.nkeys; k++)
		free((char *)o.keys[k].col.user);
	free(o.width);
	free(o.cols);
	free(o.rows);
	return rc;
}
