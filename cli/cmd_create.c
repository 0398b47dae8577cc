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

static const char *prop_value(const cairn_prop *props, size_t n, const char *name)
{
	const char *v = NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(props[i].name, name))
			v = props[i].value;
	return v;
}

/* A new encryption root whose key is to be typed (or piped) in. */
static bool wants_prompt(const cairn_prop *props, size_t n)
{
	const char *enc = prop_value(props, n, "encryption");
	const char *loc = prop_value(props, n, "keylocation");
	return enc && strcmp(enc, "off") && prop_value(props, n, "keyformat") &&
	       (!loc || !strcmp(loc, "prompt"));
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
	if (wants_prompt(props, np)) {
		if (keyprompt_read(name, prop_value(props, np, "keyformat"), true, secret,
				   &ko.secret_len)) {
			cairn_store_close(st);
			return 1;
		}
		ko.secret = secret;
	}
	int r = cairn_dataset_create_key(st, name, type, props, np, parents, &ko);
	keyprompt_wipe(secret, sizeof(secret));
	int rc = r < 0 ? cli_fail(st, name, r) : 0;
	cairn_store_close(st);
	return rc;
}
