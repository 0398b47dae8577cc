/* cmd_rollback.c - cairn rollback: make a snapshot its dataset's newest. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *u = "rollback [-r | -R] [-f] SNAPSHOT\n"
		       "  -r  destroy later snapshots and bookmarks\n"
		       "  -R  the same (cairn has no clones to destroy)\n"
		       "  -f  accepted; nothing is mounted";

typedef struct later {
	char **names;
	size_t n;
} later_t;

static void collect(const char *name, void *arg)
{
	later_t *l = arg;
	char **p = realloc(l->names, (l->n + 1) * sizeof(*p));
	if (!p)
		return;
	l->names = p;
	l->names[l->n++] = strdup(name);
}

int cmd_rollback(int argc, char **argv)
{
	static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {0}};
	cairn_rollback_opts o = {0};
	int ch;
	while ((ch = getopt_long(argc, argv, "rRfh", lo, NULL)) != -1) {
		switch (ch) {
		case 'r':
		case 'R': o.destroy_later = true; break;
		case 'f': break;
		case 'h': printf("usage: cairn %s\n", u); return 0;
		default: return cli_usage(u, NULL);
		}
	}
	if (optind + 1 != argc)
		return cli_usage(u, "expected one snapshot");
	const char *snap = argv[optind];
	if (!strchr(snap, '@'))
		return cli_usage(u, "'%s' is not a snapshot", snap);
	later_t later = {0};
	o.item = collect;
	o.arg = &later;
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int r = cairn_rollback(st, snap, &o);
	int rc = 0;
	if (r == -EEXIST && !o.destroy_later) {
		/* zfs's refusal, naming what -r would destroy. */
		cli_err(snap, "more recent snapshots or bookmarks exist");
		fprintf(stderr, "use '-r' to force deletion of the following snapshots and "
				"bookmarks:\n");
		for (size_t i = 0; i < later.n; i++)
			fprintf(stderr, "%s\n", later.names[i]);
		rc = 1;
	} else if (r < 0) {
		rc = cli_fail(st, snap, r);
	}
	for (size_t i = 0; i < later.n; i++)
		free(later.names[i]);
	free(later.names);
	cairn_store_close(st);
	return rc;
}
