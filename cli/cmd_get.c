/* cmd_get.c - cairn get: dataset property values and their sources. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *u = "get [-H] PROP[,PROP]... DATASET...";

int cmd_get(int argc, char **argv)
{
	bool scripted = false;
	int ch;
	while ((ch = getopt(argc, argv, "Hp")) != -1) {
		if (ch == 'H')
			scripted = true;
		else if (ch != 'p')
			return cli_usage(u, NULL);
	}
	if (argc - optind < 2)
		return cli_usage(u, "expected properties and a dataset");
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int rc = 0;
	if (!scripted)
		printf("%-24s %-14s %-30s %s\n", "NAME", "PROPERTY", "VALUE", "SOURCE");
	for (int d = optind + 1; d < argc && !rc; d++) {
		char *list = strdup(argv[optind]), *save;
		for (char *p = strtok_r(list, ",", &save); p && !rc; p = strtok_r(NULL, ",", &save)) {
			char *v, *src;
			int r = cairn_dataset_get(st, argv[d], p, &v, &src);
			if (r < 0) {
				rc = cli_fail(st, argv[d], r);
				break;
			}
			if (scripted)
				printf("%s\t%s\t%s\t%s\n", argv[d], p, v, src);
			else
				printf("%-24s %-14s %-30s %s\n", argv[d], p, v, src);
			free(v);
			free(src);
		}
		free(list);
	}
	cairn_store_close(st);
	return rc;
}
