/* cmd_get.c - cairn get: property values with their sources, after zfs get. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "props.h"

static const char *u =
	"get [-H] [-p] [-j|--json [--json-int]] [-r | -d DEPTH] [-t TYPE[,TYPE]...] [-o FIELD[,FIELD]...]\n"
	"       [-s SOURCE[,SOURCE]...] all | PROP[,PROP]... [DATASET|SNAPSHOT|BOOKMARK]...\n"
	"  -d wins over -r whatever their order; -t snapshot or -t bookmark alone with\n"
	"  a dataset means -d 1; no dataset means every dataset (recursively).\n"
	"  FIELD: name, property, value, received, source, all\n"
	"  SOURCE: local, default, inherited, temporary, received, none";

enum { F_NAME, F_PROPERTY, F_VALUE, F_RECEIVED, F_SOURCE, F_COUNT };

static int parse_fields(const char *s, int *f, int *nf)
{
	static const char *names[] = {"name", "property", "value", "received", "source"};
	char *dup = strdup(s), *save;
	*nf = 0;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "all")) { /* zfs: every field, in this order */
			for (int k = 0; k < F_COUNT && *nf < 8; k++)
				f[(*nf)++] = k;
			continue;
		}
		int k = 0;
		while (k < F_COUNT && strcmp(names[k], t))
			k++;
		if (k == F_COUNT || *nf == 8) {
			cli_usage(u, "invalid field '%s'", t);
			free(dup);
			return -1;
		}
		f[(*nf)++] = k;
	}
	free(dup);
	return 0;
}

/* "all": every native property the table has. */
static int all_columns(column_t **cols, size_t *n)
{
	size_t k = 0;
	for (const prop_def_t *p = prop_table(); p->name; p++)
		k++;
	*cols = calloc(k, sizeof(column_t));
	if (!*cols)
		return -1;
	*n = 0;
	for (const prop_def_t *p = prop_table(); p->name; p++)
		(*cols)[(*n)++].def = p;
	return 0;
}

/* The user properties set on or inherited by one object, as columns. */
static int user_columns(cairn_store *st, const char *name, column_t **cols, size_t *n)
{
	char **names;
	size_t k;
	*cols = NULL;
	*n = 0;
	int r = cairn_user_props(st, name, &names, &k);
	if (r < 0 || !k)
		return r;
	*cols = calloc(k, sizeof(column_t));
	if (!*cols) {
		cairn_user_props_free(names, k);
		return -ENOMEM;
	}
	for (size_t i = 0; i < k; i++)
		(*cols)[i].user = names[i]; /* ownership moves to the column */
	free(names);
	*n = k;
	return 0;
}

/* One property of one object in zfs get -j's layout: objects keyed by
 * name, each with its properties keyed by property name.  *in_obj: an
 * object of this run is open (its properties not closed yet). */
static void json_prop(const char *name, int type, bool *in_obj, const char *prop,
		      const char *val, bool as_number, const char *src)
{
	static char last[1024];
	if (!*in_obj || strcmp(last, name)) {
		if (*in_obj)
			fputs("}}", stdout);
		json_object_sep();
		*in_obj = true;
		snprintf(last, sizeof(last), "%s", name);
		json_str(stdout, name);
		fputs(":{\"name\":", stdout);
		json_str(stdout, name);
		char pool[256];
		snprintf(pool, sizeof(pool), "%.*s", (int)strcspn(name, "/@#"), name);
		fputs(",\"type\":", stdout);
		char up[16];
		size_t k = 0;
		for (const char *t = type_name(type); *t && k < 15; t++)
			up[k++] = *t - 32;
		up[k] = 0;
		json_str(stdout, up);
		fputs(",\"pool\":", stdout);
		json_str(stdout, pool);
		fputs(",\"properties\":{", stdout);
	} else {
		fputc(',', stdout);
	}
	json_str(stdout, prop);
	fputs(":{\"value\":", stdout);
	if (as_number)
		fputs(val, stdout);
	else
		json_str(stdout, val);
	json_source(stdout, src);
	fputc('}', stdout);
}

static void cell(const char *v, int width, bool last, bool scripted)
{
	if (last)
		printf("%s\n", v);
	else if (scripted)
		printf("%s\t", v);
	else
		printf("%-*s ", width, v);
}

/* The columns and the user property names columns_parse copied. */
static void cols_free(column_t *cols, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)cols[i].user);
	free(cols);
}

/* -s: which sources to show, as a mask of enum src_kind. */
enum { S_LOCAL = 1, S_DEFAULT = 2, S_INHERITED = 4, S_TEMPORARY = 8, S_RECEIVED = 16,
       S_NONE = 32 };

static int parse_sources(const char *s, int *mask)
{
	static const char *names[] = {"local", "default", "inherited", "temporary", "received",
				      "none"};
	*mask = 0;
	const char *p = s;
	while (*p) {
		size_t n = strcspn(p, ","), k = 0;
		while (k < 6 && (strlen(names[k]) != n || strncmp(names[k], p, n)))
			k++;
		if (k == 6)
			return cli_usage(u, "invalid source '%.*s'", (int)n, p), -1;
		*mask |= 1 << k;
		p += n + (p[n] == ',');
	}
	return 0;
}

static int source_kind(const char *src)
{
	if (!strcmp(src, "local"))
		return S_LOCAL;
	if (!strcmp(src, "default"))
		return S_DEFAULT;
	if (!strncmp(src, "inherited", 9))
		return S_INHERITED;
	if (!strcmp(src, "received"))
		return S_RECEIVED;
	return S_NONE;
}

int cmd_get(int argc, char **argv)
{
	bool scripted = false, exact = false, json = false, json_int = false, depth_set = false,
	     recursive = false;
	int fields[8] = {F_NAME, F_PROPERTY, F_VALUE, F_SOURCE}, nf = 4, sources = 0;
	bool want_received = false;
	cairn_list_spec spec = {.depth = 0,
				.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME |
					 CAIRN_TYPE_SNAPSHOT | CAIRN_TYPE_BOOKMARK};
	bool types_set = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "Hprjhd:o:t:s:", json_listing_opts, NULL)) != -1) {
		switch (ch) {
		case 'H': scripted = true; break;
		case 'p': exact = true; break;
		case 'j': json = true; break;
		case 'I': json_int = true; break;
		case 'h': printf("usage: cairn %s\n", u); return 0;
		case 'r': recursive = true; break;
		case 'd': {
			uint64_t d;
			if (parse_uint(optarg, 0, 1000000, &d) < 0)
				return cli_usage(u, "invalid depth '%s' (0..1000000)", optarg);
			spec.depth = d;
			depth_set = true;
			break;
		}
		case 'o':
			if (parse_fields(optarg, fields, &nf) < 0)
				return EXIT_USAGE;
			break;
		case 's':
			if (parse_sources(optarg, &sources) < 0)
				return EXIT_USAGE;
			break;
		case 't': {
			const char *bad;
			if (types_parse(optarg, &spec.types, &bad) < 0)
				return cli_usage(u, "invalid type '%s'", bad);
			types_set = true;
			break;
		}
		default:
			return cli_usage(u, NULL);
		}
	}
	if (argc - optind < 1)
		return cli_usage(u, "missing property argument");
	if (json_int && !json)
		return cli_usage(u, "--json-int needs -j");
	bool roots = argc - optind > 1;
	if (!depth_set)
		spec.depth = recursive || !roots ? -1
			     : types_set && (spec.types == CAIRN_TYPE_SNAPSHOT ||
					     spec.types == CAIRN_TYPE_BOOKMARK) ? 1 : 0;
	column_t *cols;
	size_t ncols;
	bool all = !strcmp(argv[optind], "all");
	if (all ? all_columns(&cols, &ncols) < 0
					 : columns_parse(argv[optind], &cols, &ncols, u) < 0)
		return EXIT_USAGE;
	for (size_t c = 0; c < ncols; c++)
		if (cols[c].def && cols[c].def->field >= 0)
			spec.fields |= 1u << cols[c].def->field;
	spec.roots = (const char *const *)argv + optind + 1;
	spec.nroots = argc - optind - 1;
	cairn_store *st;
	if (cli_open(&st)) {
		cols_free(cols, ncols);
		return 1;
	}
	cairn_list *l;
	int r = cairn_list_open(st, &spec, &l);
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	rowref_t ref = {.st = st, .b = &b};
	/* Not after a failed open: any call on st clears the detail that
	 * cli_fail prints below. */
	if (r == 0)
		cairn_store_available(st, &ref.available);
	static const char *hdr[] = {"NAME", "PROPERTY", "VALUE", "RECEIVED", "SOURCE"};
	static const int width[] = {24, 18, 22, 22, 0};
	for (int k = 0; k < nf; k++)
		want_received |= fields[k] == F_RECEIVED;
	if (json && r == 0)
		json_begin("get");
	bool in_obj = false;
	while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0) {
		for (size_t i = 0; i < b.n && r >= 0; i++) {
			ref.i = i;
			/* "all": the native properties, then the user ones that
			 * apply to this object. */
			column_t *ucols = NULL;
			size_t nu = 0;
			if (all)
				r = user_columns(st, b.name[i], &ucols, &nu);
			for (size_t c = 0; c < ncols + nu && r >= 0; c++) {
				const column_t *col = c < ncols ? &cols[c] : &ucols[c - ncols];
				if (col->def && !(col->def->types & b.type[i]) && all)
					continue;
				char val[8192], src[512], rcv[8192] = "-";
				uint64_t num;
				bool has;
				bool number = json_int && json_numeric(col);
				r = column_value(&ref, col, exact || number, val, sizeof(val), &num,
						 &has);
				if (r >= 0)
					r = column_source(&ref, col, src, sizeof(src));
				if (r >= 0 && want_received)
					r = column_received(&ref, col, rcv, sizeof(rcv));
				if (r < 0)
					break;
				if (sources && !(sources & source_kind(src)))
					continue;
				const char *pname = col->def ? col->def->name : col->user;
				if (json) {
					json_prop(b.name[i], b.type[i], &in_obj, pname, val,
						  number && strcmp(val, "-"), src);
					continue;
				}
				/* The header comes with the first row, as in zfs: a
				 * listing whose rows are all filtered out is empty. */
				if (!scripted && !g_cli.no_header) {
					g_cli.no_header = true;
					for (int k = 0; k < nf; k++)
						cell(hdr[fields[k]], width[fields[k]], k + 1 == nf,
						     false);
				}
				const char *v[F_COUNT] = {b.name[i], pname, val, rcv, src};
				for (int k = 0; k < nf; k++)
					cell(v[fields[k]], width[fields[k]], k + 1 == nf, scripted);
			}
			cols_free(ucols, nu);
		}
	}
	if (json && r >= 0) {
		if (in_obj)
			fputs("}}", stdout);
		json_end();
	}
	int rc = r < 0 ? cli_fail(st, NULL, r) : 0;
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	cols_free(cols, ncols);
	cairn_store_close(st);
	return rc;
}
