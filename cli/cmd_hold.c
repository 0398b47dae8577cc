/* cmd_hold.c - cairn hold and cairn release: one transaction per command. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "holdargs.h"

static int hold_or_release(int argc, char **argv, bool hold)
{
	const char *u = hold ? "hold [-r] TAG SNAPSHOT..." : "release [-r] TAG SNAPSHOT...";
	bool recursive = false;
	int ch;
	while ((ch = getopt(argc, argv, "r")) != -1) {
		if (ch != 'r')
			return cli_usage(u, NULL);
		recursive = true;
	}
	if (argc - optind < 2)
		return cli_usage(u, "expected a tag and at least one snapshot");
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	holdargs_t h;
	int r = holdargs_build(st, argv[optind], argv + optind + 1, argc - optind - 1, recursive,
			       &h);
	int rc = 0;
	if (r < 0)
		rc = cli_fail(st, argv[optind + 1], r);
	else {
		r = hold ? cairn_hold(st, h.items, h.n, false) : cairn_release(st, h.items, h.n);
		if (r < 0 && !holdargs_report(&h, hold ? "hold" : "release"))
			rc = cli_fail(st, NULL, r);
		else if (r < 0)
			rc = 1;
	}
	holdargs_free(&h);
	cairn_store_close(st);
	return rc;
}

int cmd_hold(int argc, char **argv)
{
	return hold_or_release(argc, argv, true);
}

int cmd_release(int argc, char **argv)
{
	return hold_or_release(argc, argv, false);
}
