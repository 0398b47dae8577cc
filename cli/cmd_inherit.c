/* cmd_inherit.c - cairn inherit: drop a local value so it inherits again
 * (-S: so the received value applies again). */
#include <getopt.h>

#include <string.h>

#include "props.h"

static const char *u = "inherit [-rS] PROP DATASET|SNAPSHOT...\n"
		       "  -S: revert to the received value, if there is one";

int cmd_inherit(int argc, char **argv)
{
	bool recursive = false, received = false;
	int ch;
	while ((ch = getopt(argc, argv, "rS")) != -1) {
		switch (ch) {
		case 'r': recursive = true; break;
		case 'S': received = true; break;
		default: return cli_usage(u, NULL);
		}
	}
	if (argc - optind < 2)
		return cli_usage(u, "expected a property and a dataset");
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int rc = 0;
	for (int i = optind + 1; i < argc && !rc; i++) {
		int r = cairn_prop_inherit(st, argv[i], argv[optind], recursive, received);
		/* As zfs: a name it does not know is a usage error; a known
		 * property that cannot be inherited (used, type...) a failure. */
		if (r == CAIRN_EBADPROP && !prop_find(argv[optind]) && !strchr(argv[optind], ':'))
			rc = cli_usage(u, "invalid property '%s'", argv[optind]);
		else if (r < 0)
			rc = cli_fail(st, argv[i], r);
	}
	cairn_store_close(st);
	return rc;
}
