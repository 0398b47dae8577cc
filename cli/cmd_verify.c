/* cmd_verify.c - cairn verify: re-read and check every chunk of snapshots. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "parse.h"

static const char *u =
	"verify [-r] [-v] [--order inode|digest] [--threads N] [SNAPSHOT|DATASET]...";

static void warn(const char *object, int err, void *arg)
{
	cli_progress_done();
	cli_err(object, "%s", err == -ENOENT ? "missing" : cairn_strerror(err));
	(*(int *)arg)++;
}

int cmd_verify(int argc, char **argv)
{
	static const struct option lo[] = {{"order", required_argument, 0, 'o'},
					   {"threads", required_argument, 0, 't'},
					   {0}};
	int warnings = 0;
	cairn_verify_opts o = {.progress = cli_progress, .warn = warn, .arg = &warnings};
	bool verbose = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "rv", lo, NULL)) != -1) {
		switch (ch) {
		case 'r': o.recursive = true; break;
		case 'v': verbose = true; break;
		case 'o':
			if (!strcmp(optarg, "inode"))
				o.order = CAIRN_GC_ORDER_INODE;
			else if (!strcmp(optarg, "digest"))
				o.order = CAIRN_GC_ORDER_DIGEST;
			else
				return cli_usage(u, "invalid order '%s' (inode or digest)", optarg);
			break;
		case 't': {
			uint64_t v;
			if (parse_uint(optarg, 1, 64, &v) < 0)
				return cli_usage(u, "invalid thread count '%s' (1..64)", optarg);
			o.threads = v;
			break;
		}
		default:
			return cli_usage(u, NULL);
		}
	}
	o.targets = (const char *const *)argv + optind;
	o.ntargets = argc - optind;
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = cairn_verify(st, &o);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cli_progress_done();
	int rc = r < 0 ? cli_fail(st, NULL, r) : 0;
	if (verbose) {
		char b[32];
		cli_size(b, sizeof(b), o.bytes, false);
		double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		fprintf(stderr, "verified %llu chunks (%s) in %.2fs: %llu bad\n",
			(unsigned long long)o.chunks, b, s, (unsigned long long)o.bad);
	}
	cairn_store_close(st);
	return rc;
}
