/* cmd_unload_key.c - cairn unload-key: remove encryption roots' keys from
 * the kernel keyring, as zfs unload-key. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *u = "unload-key {-a | [-r] DATASET}\n"
		       "  -a  every encryption root; -r  the roots at or below DATASET";

int cmd_unload_key(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: cairn %s\n", u);
		return 0;
	}
	bool all = false, recursive = false;
	int ch;
	while ((ch = getopt(argc, argv, "ar")) != -1) {
		switch (ch) {
		case 'a':
			all = true;
			break;
		case 'r':
			recursive = true;
			break;
		default:
			return cli_usage(u, NULL);
		}
	}
	if (all ? optind != argc : optind + 1 != argc)
		return cli_usage(u, all ? "-a takes no dataset" : "expected one dataset");
	if (all && recursive)
		return cli_usage(u, "-a and -r exclude each other");
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int rc = 0;
	if (!all && !recursive) {
		int r = cairn_unload_key(st, argv[optind]);
		if (r < 0)
			rc = cli_fail(st, argv[optind], r);
	} else {
		char **roots = NULL;
		size_t n = 0, done = 0;
		int r = cairn_encryption_roots(st, all ? NULL : argv[optind], &roots, &n);
		if (r < 0)
			rc = cli_fail(st, all ? NULL : argv[optind], r);
		for (size_t i = 0; i < n; i++) {
			/* Keys not loaded are simply skipped with -r/-a. */
			r = cairn_unload_key(st, roots[i]);
			if (r == 0)
				done++;
			else if (r != -ENOKEY)
				rc = cli_fail(st, roots[i], r);
			free(roots[i]);
		}
		free(roots);
		if (rc == 0)
			printf("%zu keys unloaded\n", done);
	}
	cairn_store_close(st);
	return rc;
}
