/* cmd_load_key.c - cairn load-key: put encryption roots' keys in the kernel
 * keyring, as zfs load-key. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "keyprompt.h"

static const char *u = "load-key [-n] [-t SECONDS] [-L keylocation] [--previous] {-a | [-r] DATASET}\n"
		       "  -a  every encryption root; -r  the roots at or below DATASET\n"
		       "  -n  check the key only; -L  read it from here this time\n"
		       "  -t  the kernel forgets the key after SECONDS\n"
		       "  --previous  open a wrapping a raw receive replaced";

/* load-key --previous (one per command, as the options). */
static bool previous;

/* Loads one root's key (a keyroot_fn; arg is the cairn_key_opts).  With
 * -r/-a a key already loaded is skipped; named alone it is an error. */
static int load_one(cairn_store *st, const char *root, bool many, void *arg)
{
	char *fmt = NULL, *loc = NULL;
	bool loaded = false;
	int r = cairn_key_info(st, root, &fmt, &loc, &loaded);
	if (r < 0)
		return cli_fail(st, root, r);
	cairn_key_opts ko = *(const cairn_key_opts *)arg;
	uint8_t secret[KEYPROMPT_MAX];
	int rc = 0;
	size_t earlier = 0;
	if (loaded && !ko.noop) {
		if (!many)
			cli_err(root, "key already loaded");
		rc = many ? 2 : 1;
	} else if (previous && (r = cairn_key_previous_count(st, root, &earlier)) < 0) {
		rc = cli_fail(st, root, r);
	} else if (previous && !earlier) {
		/* Refused before the key is asked for: nothing could open. */
		cli_err(root, "no earlier wrapping kept (only a raw receive that replaced the "
			      "wrapping keeps one)");
		rc = 1;
	} else {
		rc = keyprompt_for(root, fmt, ko.keylocation ? ko.keylocation : loc, false, secret,
				   &ko);
	}
	if (rc == 0) {
		r = previous ? cairn_load_key_previous(st, root, &ko) : cairn_load_key(st, root, &ko);
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
	static const struct option longopts[] = {{"previous", no_argument, NULL, 'P'},
						 {NULL, 0, NULL, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "narL:t:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'P':
			previous = true;
			break;
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
	/* One key file is one root's key: with -r/-a it would be tried on
	 * every root (zfs refuses the same). */
	if (ko.keylocation && strcmp(ko.keylocation, "prompt") && (all || recursive))
		return cli_usage(u, "alternate keylocation may only be 'prompt' with -r or -a");
	return keyroots_cmd(argc, argv, all, recursive, u, load_one, &ko,
			    ko.noop ? "checked" : "loaded");
}
