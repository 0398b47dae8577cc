/* cmd_change_key.c - cairn change-key: rewrap an encryption root's keys
 * under new key material, as zfs change-key.  Data is never rewritten. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "keyprompt.h"

static const char *u = "change-key [-l] [-o keyformat=FMT] [-o keylocation=LOC] DATASET\n"
		       "  -l  load the current key first if it is not loaded";

static const char *prop_value(const cairn_prop *props, size_t n, const char *name)
{
	const char *v = NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(props[i].name, name))
			v = props[i].value;
	return v;
}

/* -l: the current key, from its keylocation (prompted if need be). */
static int load_current(cairn_store *st, const char *root, const char *fmt, const char *loc)
{
	cairn_key_opts ko = {0};
	uint8_t secret[KEYPROMPT_MAX];
	if (!strcmp(loc, "prompt")) {
		if (keyprompt_read(root, fmt, false, secret, &ko.secret_len))
			return 1;
		ko.secret = secret;
	}
	int r = cairn_load_key(st, root, &ko);
	keyprompt_wipe(secret, sizeof(secret));
	return r < 0 ? cli_fail(st, root, r) : 0;
}

int cmd_change_key(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: cairn %s\n", u);
		return 0;
	}
	cairn_prop props[8];
	size_t np = 0;
	bool load = false;
	int ch;
	while ((ch = getopt(argc, argv, "lio:")) != -1) {
		switch (ch) {
		case 'l':
			load = true;
			break;
		case 'i':
			cli_err(NULL, "-i (inherit the parent's key) is not supported: cairn "
				      "encrypts a whole subtree with one root's keys");
			return 1;
		case 'o':
			if (np == 8 || cli_parse_prop(optarg, &props[np]) < 0)
				return cli_usage(u, "bad property assignment '%s'", optarg);
			np++;
			break;
		default:
			return cli_usage(u, NULL);
		}
	}
	if (optind + 1 != argc)
		return cli_usage(u, "expected one dataset");
	const char *root = argv[optind];
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	char *fmt = NULL, *loc = NULL;
	bool loaded = false;
	int rc = 0, r = cairn_key_info(st, root, &fmt, &loc, &loaded);
	if (r < 0)
		rc = cli_fail(st, root, r);
	if (rc == 0 && load && !loaded)
		rc = load_current(st, root, fmt, loc);
	const char *nfmt = prop_value(props, np, "keyformat");
	const char *nloc = prop_value(props, np, "keylocation");
	cairn_key_opts ko = {0};
	uint8_t secret[KEYPROMPT_MAX];
	if (rc == 0 && !strcmp(nloc ? nloc : loc, "prompt")) {
		rc = keyprompt_read(root, nfmt ? nfmt : fmt, true, secret, &ko.secret_len);
		ko.secret = secret;
	}
	if (rc == 0) {
		r = cairn_change_key(st, root, props, np, &ko);
		if (r < 0)
			rc = cli_fail(st, root, r);
	}
	keyprompt_wipe(secret, sizeof(secret));
	free(fmt);
	free(loc);
	cairn_store_close(st);
	return rc;
}
