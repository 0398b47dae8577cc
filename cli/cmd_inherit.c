/* cmd_inherit.c - cairn inherit: drop a local value so it inherits again
 * (-S: so the received value applies again). */
#include <getopt.h>

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "props.h"

static const char *u = "inherit [-rS] PROP DATASET|SNAPSHOT...\n"
		       "  -S: revert to the received value, if there is one";

/* zfs's answers: a native property that has no inherited value is refused
 * (read-only, or settable but not inheritable: exit 1); a name that is no
 * property at all is a usage error (exit 2). */
static int refuse_inherit(const char *usage, const char *prop)
{
	if (!prop_find(prop))
		return cli_usage(usage, "invalid property '%s'", prop);
	if (!strcmp(prop, "keylocation"))
		fprintf(stderr, "cairn: inherit: '%s' property cannot be inherited\n", prop);
	else
		fprintf(stderr, "cairn: inherit: '%s' property is read-only\n", prop);
	return 1;
}

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
		/* (A snapshot takes only user properties: the library says so.) */
		bool snap_native = strchr(argv[i], '@') && prop_find(argv[optind]);
		if (r == CAIRN_EBADPROP && !snap_native)
			rc = refuse_inherit(u, argv[optind]);
		else if (r < 0)
			rc = cli_fail(st, argv[i], r);
	}
	cairn_store_close(st);
	return rc;
}
