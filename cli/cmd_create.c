/* cmd_create.c - cairn create: a filesystem or volume dataset, possibly a
 * new encryption root (-o encryption=on -o keyformat=.. -o keylocation=..). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "keyprompt.h"

static const char *u = "create [-p] [-V] [-o PROP=VALUE]... DATASET\n"
		       "  encryption: -o encryption=on|aes-256-gcm -o keyformat=passphrase|hex|raw\n"
		       "              [-o keylocation=prompt|file:///PATH]";

/* A new encryption root reads its key from where keylocation says
 * (prompt by default); 1 after printing when that fails.  Every refusal
 * that needs no key (a name taken, a missing parent, a root below a root,
 * a bad property) comes first, as zfs does it: the key is not asked for
 * (twice at a terminal) nor read off a pipe only to be refused. */
static int new_root_key(cairn_store *st, const char *name, cairn_type type,
			const cairn_prop *props, size_t n, bool parents,
			uint8_t secret[KEYPROMPT_MAX], cairn_key_opts *ko)
{
	const char *enc = keyprompt_prop(props, n, "encryption");
	const char *fmt = keyprompt_prop(props, n, "keyformat");
	const char *loc = keyprompt_prop(props, n, "keylocation");
	if (!enc || !strcmp(enc, "off") || !fmt)
		return 0; /* not a new root, or the library says what is missing */
	if (!loc || !strcmp(loc, "prompt")) {
		cairn_key_opts check = {.noop = true};
		int r = cairn_dataset_create_key(st, name, type, props, n, parents, &check);
		if (r < 0)
			return cli_fail(st, name, r);
	}
	return keyprompt_for(name, fmt, loc ? loc : "prompt", true, secret, ko);
}

int cmd_create(int argc, char **argv)
{
	cairn_prop props[64];
	size_t np = 0;
	bool parents = false;
	cairn_type type = CAIRN_TYPE_FILESYSTEM;
	int ch;
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: cairn %s\n", u);
		return 0;
	}
	while ((ch = getopt(argc, argv, "pVo:")) != -1) {
		switch (ch) {
		case 'p':
			parents = true;
			break;
		case 'V':
			type = CAIRN_TYPE_VOLUME;
			break;
		case 'o':
			if (np == 64 || cli_parse_prop(optarg, &props[np]) < 0)
				return cli_usage(u, "bad property assignment '%s'", optarg);
			np++;
			break;
		default:
			return cli_usage(u, NULL);
		}
	}
	if (optind + 1 != argc)
		return cli_usage(u, "expected one dataset name");
	const char *name = argv[optind];
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	uint8_t secret[KEYPROMPT_MAX];
	cairn_key_opts ko = {0};
	if (new_root_key(st, name, type, props, np, parents, secret, &ko)) {
		cairn_store_close(st);
		return 1;
	}
	int r = cairn_dataset_create_key(st, name, type, props, np, parents, &ko);
	keyprompt_wipe(secret, sizeof(secret));
	int rc = r < 0 ? cli_fail(st, name, r) : 0;
	cairn_store_close(st);
	return rc;
}
