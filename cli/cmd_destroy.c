/* cmd_destroy.c - cairn destroy: datasets, snapshots, ranges, bookmarks. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *u =
	"destroy [-r|-R] [-d] [-n] [-v] [-p] DATASET|DATASET@SNAP[%SNAP][,...]|DATASET#BM\n"
	"  -v  name what goes (\"will destroy\" / \"will reclaim\"; with -n \"would\")\n"
	"  -p  the same, parsable: destroy<TAB>NAME, reclaim<TAB>BYTES (implies -v)\n"
	"  Names in a list that do not exist are skipped; with -r, descendants\n"
	"  that lack the snapshot are skipped.";

static bool g_exact;

/* zfs's words: "would" with -n, "will" otherwise, tab-separated with -p. */
static void item(const char *name, const char *action, void *arg)
{
	bool dry = *(bool *)arg;
	bool defer = !strcmp(action, "defer");
	if (g_exact)
		printf("%s\t%s\n", defer ? "defer" : "destroy", name);
	else if (defer)
		printf("%s %s (held: marked defer_destroy)\n", dry ? "would defer" : "will defer",
		       name);
	else
		printf("%s %s\n", dry ? "would destroy" : "will destroy", name);
}

int cmd_destroy(int argc, char **argv)
{
	cairn_destroy_opts o = {.warn = cli_warn};
	bool verbose = false;
	int ch;
	while ((ch = getopt(argc, argv, "rdnvpR")) != -1) {
		switch (ch) {
		case 'r': case 'R': o.recursive = true; break;
		case 'd': o.defer = true; break;
		case 'n': o.dry_run = true; break;
		case 'v': verbose = true; break;
		case 'p': g_exact = verbose = true; break; /* -p implies -v, as in zfs */
		default: return cli_usage(u, NULL);
		}
	}
	if (optind + 1 != argc)
		return cli_usage(u, "expected one target");
	bool dry = o.dry_run;
	if (verbose) {
		o.item = item;
		o.arg = &dry;
	}
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int r = cairn_destroy(st, argv[optind], &o);
	int rc = r < 0 ? cli_fail(st, argv[optind], r) : 0;
	if (r == 0 && verbose) {
		char b[32];
		cli_size(b, sizeof(b), o.freed, g_exact);
		if (g_exact)
			printf("reclaim\t%s\n", b);
		else
			printf("%s %s\n", dry ? "would reclaim" : "will reclaim", b);
	}
	cairn_store_close(st);
	return rc;
}
