/* cmd_init.c - cairn init: create a store. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *u = "init [--chunk-size AVG]";

int cmd_init(int argc, char **argv)
{
	static const struct option lo[] = {{"chunk-size", required_argument, 0, 'c'}, {0}};
	cairn_init_opts o = {0};
	int ch;
	while ((ch = getopt_long(argc, argv, "c:", lo, NULL)) != -1) {
		if (ch != 'c')
			return cli_usage(u, NULL);
		char *end;
		unsigned long long v = strtoull(optarg, &end, 10);
		if (*end == 'K' || *end == 'k')
			v <<= 10, end++;
		else if (*end == 'M' || *end == 'm')
			v <<= 20, end++;
		if (*end || v < (64u << 10) || v > (8u << 20) || (v & (v - 1)))
			return cli_usage(u, "--chunk-size %s: must be a power of two from 64K to 8M",
					 optarg);
		o.chunk_size = v;
	}
	if (optind != argc)
		return cli_usage(u, "unexpected argument '%s'", argv[optind]);
	o.skip_atime_check = getenv("CAIRN_TEST_SKIP_ATIME_CHECK") != NULL;
	int r = cairn_store_init(g_cli.store_path, &o);
	if (r == -EEXIST) {
		cli_err(g_cli.store_path, "directory exists and is not empty");
		return 1;
	}
	if (r < 0) {
		cli_err(g_cli.store_path, "%s", r == CAIRN_ENOATIME
				? "the filesystem does not keep access times set with utimensat(); "
				  "garbage collection would be unsafe here"
				: cairn_strerror(r));
		return 1;
	}
	printf("created store %s\n", g_cli.store_path);
	return 0;
}
