/* cmd_inherit.c - cairn inherit: drop a local value so it inherits again. */
#include <getopt.h>

#include "cli.h"

static const char *u = "inherit [-r] PROP DATASET...";

int cmd_inherit(int argc, char **argv)
{
	bool recursive = false;
	int ch;
	while ((ch = getopt(argc, argv, "r")) != -1) {
		if (ch != 'r')
			return cli_usage(u, NULL);
		recursive = true;
	}
	if (argc - optind < 2)
		return cli_usage(u, "expected a property and a dataset");
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int rc = 0;
	for (int i = optind + 1; i < argc && !rc; i++) {
		int r = cairn_dataset_inherit(st, argv[i], argv[optind], recursive);
		if (r == CAIRN_EBADPROP) /* as zfs: a bad property name is a usage error */
			rc = cli_usage(u, "invalid property '%s'", argv[optind]);
		else if (r < 0)
			rc = cli_fail(st, argv[i], r);
	}
	cairn_store_close(st);
	return rc;
}
