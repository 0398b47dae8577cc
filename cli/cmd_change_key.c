/* cmd_change_key.c - cairn change-key: rewrap an encryption root's keys
 * under new key material, as zfs change-key.  Data is never rewritten. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "keyprompt.h"

static const char *u = "change-key [-l] [-o keyformat=FMT] [-o keylocation=LOC] DATASET\n"
		       "       change-key -i [-l] DATASET\n"
		       "  -l  load the current key first if it is not loaded\n"
		       "  -i  make DATASET inherit its parent's key (cairn refuses: a root's master\n"
		       "      keys cannot move to another root)";

/* The encryption root of name ("-" when unencrypted), malloc'd; NULL
 * after printing the error. */
static char *root_of(cairn_store *st, const char *name)
{
	char *v = NULL;
	int r = cairn_dataset_get(st, name, "encryptionroot", &v, NULL);
	if (r < 0)
		cli_fail(st, name, r);
	return r < 0 ? NULL : v;
}

/* change-key -i: make ds part of its parent's encryption root.  zfs can,
 * because there every dataset has its own master key.  In cairn all
 * datasets of a root share the root's master keys (the chunk ids and
 * chunk boundaries depend on them), so joining another root would mean
 * rewriting every blob: refused, with zfs's own refusals first. */
static int inherit_key(cairn_store *st, const char *ds)
{
	char *mine = root_of(st, ds);
	if (!mine)
		return 1;
	int rc = 1;
	const char *slash = strrchr(ds, '/');
	if (strcmp(mine, ds)) {
		cli_err(ds, "key inheritance can only be performed on encryption roots%s%s%s",
			strcmp(mine, "-") ? " (it already inherits the key of " : " (it is not encrypted",
			strcmp(mine, "-") ? mine : "", ")");
	} else if (!slash) {
		cli_err(ds, "cannot inherit a key: it has no parent");
	} else {
		char parent[1024];
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - ds), ds);
		char *theirs = root_of(st, parent);
		if (theirs && !strcmp(theirs, "-"))
			cli_err(ds, "cannot inherit a key: the parent %s is not encrypted", parent);
		else if (theirs)
			cli_err(ds, "cannot inherit the key of %s: the data of encryption root %s is "
				    "sealed with its own master keys, and joining another root would "
				    "rewrite every blob; send it into a dataset below %s instead",
				theirs, ds, theirs);
		free(theirs);
	}
	free(mine);
	return rc;
}

/* -l: the current key, from its keylocation (prompted if need be). */
static int load_current(cairn_store *st, const char *root, const char *fmt, const char *loc)
{
	cairn_key_opts ko = {0};
	uint8_t secret[KEYPROMPT_MAX];
	int rc = keyprompt_for(root, fmt, loc, false, secret, &ko);
	if (rc == 0) {
		int r = cairn_load_key(st, root, &ko);
		if (r < 0)
			rc = cli_fail(st, root, r);
	}
	keyprompt_wipe(secret, sizeof(secret));
	return rc;
}

/* Without -l and with the current key not loaded, the library would
 * fail for want of it only after the new key was asked for (twice at a
 * terminal) and read.  zfs refuses first; so does this: a prompt
 * keylocation cannot give the current key here at all, and a key file
 * is checked (read and unwrapped, loading nothing) before a prompt for
 * the new key.  0, or 1 after printing the reason. */
static int current_key_check(cairn_store *st, const char *root, const char *loc,
			     const char *newloc)
{
	if (!strcmp(loc, "prompt")) {
		cli_err(root, "encryption key not loaded (run 'cairn load-key %s' first, or "
			      "change-key -l)",
			root);
		return 1;
	}
	if (strcmp(newloc, "prompt"))
		return 0; /* nothing is asked: the library's own check comes first */
	cairn_key_opts ko = {.noop = true};
	int r = cairn_load_key(st, root, &ko);
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
	bool load = false, inherit = false;
	int ch;
	while ((ch = getopt(argc, argv, "lio:")) != -1) {
		switch (ch) {
		case 'l':
			load = true;
			break;
		case 'i':
			inherit = true;
			break;
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
	if (inherit && np)
		return cli_usage(u, "-i takes no -o");
	const char *root = argv[optind];
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	if (inherit) {
		int k = inherit_key(st, root);
		cairn_store_close(st);
		return k;
	}
	char *fmt = NULL, *loc = NULL;
	bool loaded = false;
	int rc = 0, r = cairn_key_info(st, root, &fmt, &loc, &loaded);
	if (r < 0)
		rc = cli_fail(st, root, r);
	/* A bad -o is refused before any key is asked for or read. */
	cairn_key_opts check = {.noop = true};
	if (rc == 0 && (r = cairn_change_key(st, root, props, np, &check)) < 0)
		rc = cli_fail(st, root, r);
	if (rc == 0 && load && !loaded)
		rc = load_current(st, root, fmt, loc);
	const char *nfmt = keyprompt_prop(props, np, "keyformat");
	const char *nloc = keyprompt_prop(props, np, "keylocation");
	if (rc == 0 && !load && !loaded)
		rc = current_key_check(st, root, loc, nloc ? nloc : loc);
	cairn_key_opts ko = {0};
	uint8_t secret[KEYPROMPT_MAX];
	if (rc == 0)
		rc = keyprompt_for(root, nfmt ? nfmt : fmt, nloc ? nloc : loc, true, secret, &ko);
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
