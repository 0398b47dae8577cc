/* cmd_set.c - cairn set: local dataset properties (user properties on
 * snapshots), one transaction each. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *u = "set PROP=VALUE... DATASET|SNAPSHOT...\n"
		       "  a snapshot takes user properties (module:name) only";

int cmd_set(int argc, char **argv)
{
	cairn_prop props[64];
	size_t np = 0;
	int i = 1;
	for (; i < argc && strchr(argv[i], '='); i++) {
		if (np == 64 || cli_parse_prop(argv[i], &props[np]) < 0)
			return cli_usage(u, "bad property assignment '%s'", argv[i]);
		np++;
	}
	if (!np || i == argc)
		return cli_usage(u, "expected PROP=VALUE and a dataset");
	/* zfs: user property names are lower case (and carry a colon). */
	for (size_t k = 0; k < np; k++)
		if (strchr(props[k].name, ':') && strpbrk(props[k].name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")) {
			cli_err(props[k].name, "invalid property name: user property names are "
					       "lower case");
			return 1;
		}
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int rc = 0;
	for (; i < argc && !rc; i++) {
		int r = strchr(argv[i], '@') ? cairn_snapshot_set_user(st, argv[i], props, np)
					     : cairn_dataset_set(st, argv[i], props, np);
		if (r < 0)
			rc = cli_fail(st, argv[i], r);
	}
	cairn_store_close(st);
	return rc;
}
