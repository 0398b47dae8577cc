/* cmd_get.c - cairn get: property values with their sources, after zfs get. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "props.h"

static const char *u = "get [-H] [-p] [-r | -d DEPTH] [-t TYPE] [-o FIELD[,FIELD]...]\n"
		       "       all | PROP[,PROP]... DATASET|SNAPSHOT...";

enum { F_NAME, F_PROPERTY, F_VALUE, F_SOURCE, F_COUNT };

static int parse_fields(const char *s, int *f, int *nf)
{
	static const char *names[] = {"name", "property", "value", "source"};
	char *dup = strdup(s), *save;
	*nf = 0;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
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

int cmd_get(int argc, char **argv)
{
	bool scripted = false, exact = false;
	int fields[8] = {F_NAME, F_PROPERTY, F_VALUE, F_SOURCE}, nf = 4;
	cairn_list_spec spec = {.depth = 0,
				.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME | CAIRN_TYPE_SNAPSHOT};
	int ch;
	while ((ch = getopt(argc, argv, "Hprd:o:t:")) != -1) {
		switch (ch) {
		case 'H': scripted = true; break;
		case 'p': exact = true; break;
		case 'r': spec.depth = -1; break;
		case 'd': {
			char *end;
			long d = strtol(optarg, &end, 10);
			if (*end || end == optarg || d < 0)
				return cli_usage(u, "invalid depth '%s'", optarg);
			spec.depth = d;
			break;
		}
		case 'o':
			if (parse_fields(optarg, fields, &nf) < 0)
				return EXIT_USAGE;
			break;
		case 't':
			if (!strcmp(optarg, "snapshot"))
				spec.types = CAIRN_TYPE_SNAPSHOT;
			else if (!strcmp(optarg, "filesystem"))
				spec.types = CAIRN_TYPE_FILESYSTEM;
			else if (!strcmp(optarg, "volume"))
				spec.types = CAIRN_TYPE_VOLUME;
			else if (strcmp(optarg, "all"))
				return cli_usage(u, "invalid type '%s'", optarg);
			break;
		default:
			return cli_usage(u, NULL);
		}
	}
	if (argc - optind < 2)
		return cli_usage(u, "expected properties and a target");
	column_t *cols;
	size_t ncols;
	if (!strcmp(argv[optind], "all") ? all_columns(&cols, &ncols) < 0
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
	cairn_store_available(st, &ref.available);
	static const char *hdr[] = {"NAME", "PROPERTY", "VALUE", "SOURCE"};
	static const int width[] = {24, 18, 22, 0};
	if (r == 0 && !scripted) {
		for (int k = 0; k < nf; k++)
			cell(hdr[fields[k]], width[fields[k]], k + 1 == nf, false);
	}
	while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0) {
		for (size_t i = 0; i < b.n && r >= 0; i++) {
			ref.i = i;
			for (size_t c = 0; c < ncols && r >= 0; c++) {
				if (cols[c].def && !(cols[c].def->types & b.type[i]) &&
				    !strcmp(argv[optind], "all"))
					continue;
				char val[8192], src[512];
				uint64_t num;
				bool has;
				r = column_value(&ref, &cols[c], exact, val, sizeof(val), &num, &has);
				if (r >= 0)
					r = column_source(&ref, &cols[c], src, sizeof(src));
				if (r < 0)
					break;
				const char *v[F_COUNT] = {b.name[i],
							  cols[c].def ? cols[c].def->name : cols[c].user,
							  val, src};
				for (int k = 0; k < nf; k++)
					cell(v[fields[k]], width[fields[k]], k + 1 == nf, scripted);
			}
		}
	}
	int rc = r < 0 ? cli_fail(st, NULL, r) : 0;
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	cols_free(cols, ncols);
	cairn_store_close(st);
	return rc;
}
