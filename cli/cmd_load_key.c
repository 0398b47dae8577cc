/* cmd_load_key.c - cairn load-key: put encryption roots' keys in the kernel
 * keyring, as zfs load-key. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "keyprompt.h"

static const char *u = "load-key [-n] [-t SECONDS] [-L keylocation] {-a | [-r] DATASET}\n"
		       "  -a  every encryption root; -r  the roots at or below DATASET\n"
		       "  -n  check the key only; -L  read it from here this time\n"
		       "  -t  the kernel forgets the key after SECONDS";

/* Loads one root's key.  Returns 0, 1 (failed: printed), 2 (was loaded). */
static int load_one(cairn_store *st, const char *root, const cairn_key_opts *base, bool quiet_loaded)
{
	char *fmt = NULL, *loc = NULL;
	bool loaded = false;
	int r = cairn_key_info(st, root, &fmt, &loc, &loaded);
	if (r < 0)
		return cli_fail(st, root, r);
	cairn_key_opts ko = *base;
	const char *where = ko.keylocation ? ko.keylocation : loc;
	uint8_t secret[KEYPROMPT_MAX];
	int rc = 0;
	if (loaded && !ko.noop) {
		if (!quiet_loaded)
			cli_err(root, "key already loaded");
		rc = quiet_loaded ? 2 : 1;
	} else if (!strcmp(where, "prompt")) {
		rc = keyprompt_read(root, fmt, false, secret, &ko.secret_len);
		ko.secret = secret;
	}
	if (rc == 0) {
		r = cairn_load_key(st, root, &ko);
		if (r < 0)
			rc = cli_fail(st, root, r);
	}
	keyprompt_wipe(secret, sizeof(secret));
	free(fmt);
	free(loc);
	return rc;
}

int cmd_load_key(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: cairn %s\n", u);
		return 0;
	}
	cairn_key_opts ko = {0};
	bool all = false, recursive = false;
	int ch;
	while ((ch = getopt(argc, argv, "narL:t:")) != -1) {
		switch (ch) {
		case 'n':
			ko.noop = true;
			break;
		case 'a':
			all = true;
			break;
		case 'r':
			recursive = true;
			break;
		case 'L':
			ko.keylocation = optarg;
			break;
		case 't': {
			char *end;
			unsigned long t = strtoul(optarg, &end, 10);
			if (end == optarg || *end || t == 0 || t > 0x7fffffff)
				return cli_usage(u, "bad timeout '%s'", optarg);
			ko.timeout = (unsigned)t;
			break;
		}
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
		rc = load_one(st, argv[optind], &ko, false);
	} else {
		char **roots = NULL;
		size_t n = 0;
		int r = cairn_encryption_roots(st, all ? NULL : argv[optind], &roots, &n);
		if (r < 0)
			rc = cli_fail(st, all ? NULL : argv[optind], r);
		size_t done = 0, failed = 0;
		for (size_t i = 0; i < n; i++) {
			int k = load_one(st, roots[i], &ko, true);
			if (k == 1)
				failed++;
			else if (k == 0)
				done++;
			free(roots[i]);
		}
		free(roots);
		if (r == 0)
			printf("%zu / %zu keys %s\n", done, done + failed,
			       ko.noop ? "checked" : "loaded");
		if (failed)
			rc = 1;
	}
	cairn_store_close(st);
	return rc;
}
