/* cmd_rename.c - cairn rename: snapshots (also -r) and datasets. */
#include <getopt.h>
#include <string.h>

#include "cli.h"

static const char *u = "rename [-r] DATASET@OLD DATASET@NEW|NEW\n"
		       "       cairn rename [-p] DATASET NEWDATASET";

int cmd_rename(int argc, char **argv)
{
	bool recursive = false, parents = false;
	int ch;
	while ((ch = getopt(argc, argv, "rp")) != -1) {
		if (ch == 'r')
			recursive = true;
		else if (ch == 'p')
			parents = true;
		else
			return cli_usage(u, NULL);
	}
	if (optind + 2 != argc)
		return cli_usage(u, "expected a name and a new name");
	/* zfs rename ds@a @b: the new snapshot name alone, '@' first. */
	const char *to = argv[optind + 1];
	if (to[0] == '@' && strchr(argv[optind], '@'))
		to++;
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int r = cairn_rename(st, argv[optind], to, recursive, parents);
	int rc = r < 0 ? cli_fail(st, argv[optind], r) : 0;
	cairn_store_close(st);
	return rc;
}
