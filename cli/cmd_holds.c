/* cmd_holds.c - cairn holds: NAME, TAG, TIMESTAMP of each hold. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char *u = "holds [-r] [-H] [-p] SNAPSHOT...";

typedef struct hopts {
	bool scripted, exact;
} hopts_t;

static int print_hold(const char *snap, const char *tag, int64_t t, int pid, void *arg)
{
	hopts_t *o = arg;
	char ts[64], owner[64] = "";
	if (o->exact) {
		snprintf(ts, sizeof(ts), "%lld", (long long)t);
	} else {
		time_t tt = t;
		struct tm tm;
		localtime_r(&tt, &tm);
		strftime(ts, sizeof(ts), "%a %b %e %H:%M %Y", &tm);
	}
	if (pid)
		snprintf(owner, sizeof(owner), "%s(temporary, pid %d)", o->scripted ? "\t" : "  ",
			 pid);
	if (o->scripted)
		printf("%s\t%s\t%s%s\n", snap, tag, ts, owner);
	else
		printf("%-32s %-20s %s%s\n", snap, tag, ts, owner);
	return 0;
}

int cmd_holds(int argc, char **argv)
{
	hopts_t o = {0};
	bool recursive = false;
	int ch;
	while ((ch = getopt(argc, argv, "rHp")) != -1) {
		if (ch == 'r')
			recursive = true;
		else if (ch == 'H')
			o.scripted = true;
		else if (ch == 'p')
			o.exact = true;
		else
			return cli_usage(u, NULL);
	}
	if (optind >= argc)
		return cli_usage(u, "expected at least one snapshot");
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	if (!o.scripted)
		printf("%-32s %-20s %s\n", "NAME", "TAG", "TIMESTAMP");
	int rc = 0;
	for (int i = optind; i < argc && !rc; i++) {
		char **names = NULL;
		size_t n = 0;
		int r;
		if (recursive)
			r = cairn_snapshot_expand(st, argv[i], &names, &n);
		else {
			names = malloc(sizeof(char *));
			names[0] = strdup(argv[i]);
			n = 1;
			r = 0;
		}
		for (size_t k = 0; r == 0 && k < n; k++)
			r = cairn_holds_iter(st, names[k], print_hold, &o);
		if (r < 0)
			rc = cli_fail(st, argv[i], r);
		for (size_t k = 0; k < n; k++)
			free(names[k]);
		free(names);
	}
	cairn_store_close(st);
	return rc;
}
