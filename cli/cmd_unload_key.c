/* cmd_unload_key.c - cairn unload-key: remove encryption roots' keys from
 * the kernel keyring, as zfs unload-key. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "keyprompt.h"

static const char *u = "unload-key {-a | [-r] DATASET}\n"
		       "  -a  every encryption root; -r  the roots at or below DATASET";

/* A keyroot_fn: with -r/-a a key that is not loaded is skipped; named
 * alone it is an error. */
static int unload_one(cairn_store *st, const char *root, bool many, void *arg)
{
	(void)arg;
	int r = cairn_unload_key(st, root);
	if (r == -ENOKEY && many)
		return 2;
	return r < 0 ? cli_fail(st, root, r) : 0;
}

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
	return keyroots_cmd(argc, argv, all, recursive, u, unload_one, NULL, "unloaded");
}
