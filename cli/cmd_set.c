/* cmd_set.c - cairn set: local dataset properties, in one transaction. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *u = "set PROP=VALUE... DATASET";

int cmd_set(int argc, char **argv)
{
	if (argc < 3)
		return cli_usage(u, "expected PROP=VALUE and a dataset");
	cairn_prop props[64];
	size_t np = 0;
	for (int i = 1; i < argc - 1; i++) {
		if (np == 64 || cli_parse_prop(argv[i], &props[np]) < 0)
			return cli_usage(u, "bad property assignment '%s'", argv[i]);
		np++;
	}
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int r = cairn_dataset_set(st, argv[argc - 1], props, np);
	int rc = r < 0 ? cli_fail(st, argv[argc - 1], r) : 0;
	cairn_store_close(st);
	return rc;
}
