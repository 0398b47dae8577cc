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
		errno = 0;
		unsigned long long v = strtoull(optarg, &end, 10);
		int shift = 0;
		if (*end == 'K' || *end == 'k')
			shift = 10, end++;
		else if (*end == 'M' || *end == 'm')
			shift = 20, end++;
		/* Range-check before scaling: a huge count must not wrap round
		 * to a valid size. */
		if (errno || optarg[0] < '0' || optarg[0] > '9' || *end || v > ((8ull << 20) >> shift))
			return cli_usage(u, "--chunk-size %s: must be a power of two from 64K to 8M",
					 optarg);
		v <<= shift;
		if (v < (64u << 10) || (v & (v - 1)))
			return cli_usage(u, "--chunk-size %s: must be a power of two from 64K to 8M",
					 optarg);
		o.chunk_size = v;
	}
	if (optind != argc)
		return cli_usage(u, "unexpected argument '%s'", argv[optind]);
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
