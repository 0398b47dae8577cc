/* cmd_bookmark.c - cairn bookmark: keep a snapshot's identity after it goes. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *u = "bookmark [-r] SNAPSHOT|BOOKMARK NEWBOOKMARK";

int cmd_bookmark(int argc, char **argv)
{
	bool recursive = false;
	int ch;
	while ((ch = getopt(argc, argv, "r")) != -1) {
		if (ch != 'r')
			return cli_usage(u, NULL);
		recursive = true;
	}
	if (argc - optind != 2)
		return cli_usage(u, "expected a source and a new bookmark name");
	const char *src = argv[optind], *dst = argv[optind + 1];
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int r, rc = 0;
	if (!recursive) {
		r = cairn_bookmark(st, src, dst);
		rc = r < 0 ? cli_fail(st, src, r) : 0;
	} else if (strchr(dst, '#') && dst[0] != '#' &&
		   (strncmp(dst, src, strcspn(src, "@#")) || dst[strcspn(src, "@#")] != '#')) {
		cli_err(dst, "with -r, give the bookmark's short name (or #name / %.*s#name)",
			(int)strcspn(src, "@#"), src);
		rc = 1;
	} else {
		char **names = NULL;
		size_t n = 0;
		const char *bname = strchr(dst, '#') ? strchr(dst, '#') + 1 : dst;
		r = cairn_snapshot_expand(st, src, &names, &n);
		if (r == 0)
			r = cairn_bookmark_many(st, (const char *const *)names, n, bname);
		if (r < 0)
			rc = cli_fail(st, src, r);
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	cairn_store_close(st);
	return rc;
}
