/* cmd_mount.c - cairn mount: browse snapshots through a read-only FUSE
 * file system (DATASET/.zfs/snapshot/NAME/...). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "fusefs.h"

static const char *u = "mount [-f] [-o allow_other] MOUNTPOINT [DATASET]";

/* -o takes a comma list; only what is safe for a read-only view. */
static int parse_o(char *s, fusefs_opts_t *o)
{
	char *save;
	for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "allow_other"))
			o->allow_other = true;
		else if (strcmp(t, "ro"))
			return cli_usage(u, "unsupported mount option '%s' (allowed: allow_other, ro)", t);
	}
	return 0;
}

/* The dataset must exist and be a filesystem before anything is mounted. */
static int check_dataset(const char *name)
{
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	char why[256];
	int rc = 0;
	if (cairn_name_check(name, false, why, sizeof(why)) < 0) {
		cli_err(name, "%s", why);
		rc = 1;
	}
	if (rc == 0)
		rc = fusefs_check(st, name);
	cairn_store_close(st);
	return rc;
}

int cmd_mount(int argc, char **argv)
{
	static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {0}};
	fusefs_opts_t o = {.store = g_cli.store_path};
	int ch;
	while ((ch = getopt_long(argc, argv, "fho:", lo, NULL)) != -1) {
		if (ch == 'f') {
			o.foreground = true;
		} else if (ch == 'o') {
			int rc = parse_o(optarg, &o);
			if (rc)
				return rc;
		} else if (ch == 'h') {
			printf("usage: cairn %s\n"
			       "  -f              stay in the foreground\n"
			       "  -o allow_other  let other users in (file modes still apply)\n"
			       "Snapshots appear as MOUNTPOINT/.zfs/snapshot/NAME; child datasets as\n"
			       "subdirectories.  Unmount with fusermount3 -u MOUNTPOINT.\n",
			       u);
			return 0;
		} else {
			return cli_usage(u, NULL);
		}
	}
	int n = argc - optind;
	if (n < 1 || n > 2)
		return cli_usage(u, n < 1 ? "expected a mount point" : "too many arguments");
	o.mountpoint = argv[optind];
	o.dataset = n == 2 ? argv[optind + 1] : NULL;
	struct stat sb;
	if (stat(o.mountpoint, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		cli_err(o.mountpoint, "not a directory");
		return 1;
	}
	if (o.dataset && check_dataset(o.dataset))
		return 1;
	if (!o.dataset) {
		cairn_store *st;
		if (cli_open(&st))
			return 1;
		cairn_store_close(st);
	}
	/* The server runs from "/" once in the background: a relative store
	 * path must be made absolute first. */
	char *store = realpath(o.store, NULL);
	if (!store) {
		cli_err(o.store, "cannot resolve the store path");
		return 1;
	}
	o.store = store;
	int rc = fusefs_run(&o);
	free(store);
	return rc;
}
