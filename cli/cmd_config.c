/* cmd_config.c - cairn config: show and change store settings. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *u = "config [KEY[=VALUE]]...";

static int show(cairn_store *st, const cairn_config_info *ci)
{
	int64_t v;
	bool env;
	int r = cairn_config_get(st, ci->key, &v, &env);
	if (r < 0)
		return cli_fail(st, ci->key, r);
	printf("%-20s %-12lld %-8s %lld..%lld %s\n", ci->key, (long long)v,
	       env ? "env" : "store", (long long)ci->min, (long long)ci->max, ci->unit);
	return 0;
}

int cmd_config(int argc, char **argv)
{
	if (argc > 1 && argv[1][0] == '-')
		return cli_usage(u, "unknown option '%s'", argv[1]);
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int rc = 0;
	const cairn_config_info *tab = cairn_config_table();
	if (argc == 1)
		for (const cairn_config_info *ci = tab; ci->key && !rc; ci++)
			rc = show(st, ci);
	for (int i = 1; i < argc && !rc; i++) {
		char *eq = strchr(argv[i], '=');
		if (eq) {
			*eq = 0;
			int r = cairn_config_set(st, argv[i], eq + 1);
			if (r < 0)
				rc = cli_fail(st, argv[i], r);
			continue;
		}
		const cairn_config_info *ci = tab;
		while (ci->key && strcmp(ci->key, argv[i]))
			ci++;
		if (!ci->key) {
			cli_err(argv[i], "unknown setting");
			rc = 1;
		} else {
			rc = show(st, ci);
		}
	}
	cairn_store_close(st);
	return rc;
}
