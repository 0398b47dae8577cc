/* cmd_create.c - cairn create: a filesystem or volume dataset. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *u = "create [-p] [-V] [-o PROP=VALUE]... DATASET";

int cmd_create(int argc, char **argv)
{
	cairn_prop props[64];
	size_t np = 0;
	bool parents = false;
	cairn_type type = CAIRN_TYPE_FILESYSTEM;
	int ch;
	while ((ch = getopt(argc, argv, "pVo:")) != -1) {
		switch (ch) {
		case 'p':
			parents = true;
			break;
		case 'V':
			type = CAIRN_TYPE_VOLUME;
			break;
		case 'o':
			if (np == 64 || cli_parse_prop(optarg, &props[np]) < 0)
				return cli_usage(u, "bad property assignment '%s'", optarg);
			np++;
			break;
		default:
			return cli_usage(u, NULL);
		}
	}
	if (optind + 1 != argc)
		return cli_usage(u, "expected one dataset name");
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int r = cairn_dataset_create(st, argv[optind], type, props, np, parents);
	int rc = r < 0 ? cli_fail(st, argv[optind], r) : 0;
	cairn_store_close(st);
	return rc;
}
