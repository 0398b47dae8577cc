/* cmd_restore.c - cairn restore: a snapshot into a directory or image. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char *u = "restore [-v] [-f|--force] [--no-same-owner] SNAPSHOT TARGET [PATH...]";

/* "/etc/passwd/" -> "etc/passwd": paths are relative to the snapshot root. */
/* A path inside the snapshot as the tree names it: relative, without
 * empty or "." components ("/" and "." name the whole tree: ""). */
static char *norm_path(char *p)
{
	char *out = p, *s = p;
	while (*s) {
		size_t n = strcspn(s, "/");
		if (n && !(n == 1 && *s == '.')) {
			if (out != p)
				*out++ = '/';
			memmove(out, s, n);
			out += n;
		}
		s += n;
		s += *s == '/';
	}
	*out = 0;
	return p;
}

/* The library's object string already says what failed and why. */
static void restore_warn(const char *object, int err, void *arg)
{
	cli_progress_done();
	cli_err(NULL, "%s", object);
}

int cmd_restore(int argc, char **argv)
{
	static const struct option lo[] = {{"force", no_argument, 0, 'f'},
					   {"no-same-owner", no_argument, 0, 'O'},
					   {0}};
	cairn_restore_opts o = {.progress = cli_progress, .warn = restore_warn};
	bool verbose = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "vf", lo, NULL)) != -1) {
		if (ch == 'f')
			o.force = true;
		else if (ch == 'O')
			o.no_owner = true;
		else if (ch == 'v')
			verbose = true;
		else
			return cli_usage(u, NULL);
	}
	if (argc - optind < 2)
		return cli_usage(u, "expected SNAPSHOT and TARGET");
	const char *snap = argv[optind], *target = argv[optind + 1];
	char **paths = argv + optind + 2;
	o.npaths = argc - optind - 2;
	for (size_t i = 0; i < o.npaths; i++)
		paths[i] = norm_path(paths[i]);
	o.paths = (const char *const *)paths;
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = cairn_restore(st, snap, target, &o);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cli_progress_done();
	int rc = r < 0 ? cli_fail(st, snap, r) : 0;
	if (r < 0 && o.errors > 1)
		cli_err(NULL, "%llu files could not be restored", (unsigned long long)o.errors);
	if (verbose) {
		char b[32];
		cli_size(b, sizeof(b), o.bytes, false);
		fprintf(stderr, "%llu files, %s restored in %.2fs\n", (unsigned long long)o.files, b,
			(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
	cairn_store_close(st);
	return rc;
}
