/* cmd_list.c - cairn list: datasets and snapshots, one name per line. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *u = "list [-H] [-t filesystem|volume|snapshot|all]";

static int print_ds(const char *name, cairn_type type, void *arg)
{
	int want = *(int *)arg;
	if (want & type)
		printf("%s\n", name);
	return 0;
}

static int print_snap(const char *name, void *arg)
{
	printf("%s\n", name);
	return 0;
}

static int parse_types(const char *s, int *mask)
{
	*mask = 0;
	char *dup = strdup(s), *save, *tok;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "filesystem") || !strcmp(tok, "fs"))
			*mask |= CAIRN_TYPE_FILESYSTEM;
		else if (!strcmp(tok, "volume") || !strcmp(tok, "vol"))
			*mask |= CAIRN_TYPE_VOLUME;
		else if (!strcmp(tok, "snapshot") || !strcmp(tok, "snap"))
			*mask |= CAIRN_TYPE_SNAPSHOT;
		else if (!strcmp(tok, "all"))
			*mask |= CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME | CAIRN_TYPE_SNAPSHOT;
		else {
			cli_usage(u, "unknown type '%s'", tok);
			free(dup);
			return -1;
		}
	}
	free(dup);
	return 0;
}

int cmd_list(int argc, char **argv)
{
	int mask = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME;
	int ch;
	while ((ch = getopt(argc, argv, "Ht:")) != -1) {
		if (ch == 't') {
			if (parse_types(optarg, &mask) < 0)
				return EXIT_USAGE;
		} else if (ch != 'H') {
			return cli_usage(u, NULL);
		}
	}
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int r = cairn_dataset_iter(st, print_ds, &mask);
	if (r == 0 && (mask & CAIRN_TYPE_SNAPSHOT))
		r = cairn_snapshot_iter(st, print_snap, NULL);
	int rc = r < 0 ? cli_fail(st, NULL, r) : 0;
	cairn_store_close(st);
	return rc;
}
