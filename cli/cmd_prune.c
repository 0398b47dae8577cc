/* cmd_prune.c - cairn prune: keep rules over each dataset's snapshots. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "parse.h"

static const char *u =
	"prune [-n] [-v] [-r] [--keep-last N] [--keep-hourly N] [--keep-daily N]\n"
	"       [--keep-weekly N] [--keep-monthly N] [--keep-yearly N] [--keep-within DURATION]\n"
	"       DATASET...";

static void item(const char *snap, bool keep, const char *reason, void *arg)
{
	bool dry = *(bool *)arg;
	if (keep)
		printf("keep    %s (%s)\n", snap, !strcmp(reason, "held") ? "kept because held" : reason);
	else
		printf("%s  %s\n", dry ? "remove" : "removed", snap);
}

int cmd_prune(int argc, char **argv)
{
	static const struct option lo[] = {
		{"keep-last", required_argument, 0, 'l'},   {"keep-hourly", required_argument, 0, 'h'},
		{"keep-daily", required_argument, 0, 'd'},  {"keep-weekly", required_argument, 0, 'w'},
		{"keep-monthly", required_argument, 0, 'm'}, {"keep-yearly", required_argument, 0, 'y'},
		{"keep-within", required_argument, 0, 'W'}, {0}};
	cairn_prune_opts o = {0};
	bool verbose = false, recursive = false;
	unsigned seen = 0; /* keep options given, so a repeat is refused */
	int ch;
	while ((ch = getopt_long(argc, argv, "nvr", lo, NULL)) != -1) {
		uint32_t *slot = NULL;
		switch (ch) {
		case 'n': o.dry_run = true; continue;
		case 'v': verbose = true; continue;
		case 'r': recursive = true; continue;
		case 'l': slot = &o.keep_last; break;
		case 'h': slot = &o.keep_hourly; break;
		case 'd': slot = &o.keep_daily; break;
		case 'w': slot = &o.keep_weekly; break;
		case 'm': slot = &o.keep_monthly; break;
		case 'y': slot = &o.keep_yearly; break;
		case 'W':
			if (seen & (1u << 7))
				return cli_usage(u, "--keep-within is given twice");
			seen |= 1u << 7;
			switch (parse_duration(optarg, PARSE_DURATION_MAX, &o.keep_within)) {
			case 0: break;
			case -ERANGE:
				return cli_usage(u, "--keep-within '%s': out of range (1s to 1000y)",
						 optarg);
			default:
				return cli_usage(u, "invalid duration '%s' (units s, min, h, d, w, m, y; "
						    "e.g. 30d, 12h, 2w1d)", optarg);
			}
			continue;
		default:
			return cli_usage(u, NULL);
		}
		uint64_t v;
		if (parse_uint(optarg, 0, 1000000, &v) < 0)
			return cli_usage(u, "invalid count '%s' for a keep option (0..1000000)", optarg);
		unsigned bit = 1u << (slot - &o.keep_last);
		if (seen & bit)
			return cli_usage(u, "a keep option is given twice");
		seen |= bit;
		*slot = v;
	}
	if (optind >= argc)
		return cli_usage(u, "expected at least one dataset");
	if (!o.keep_last && !o.keep_hourly && !o.keep_daily && !o.keep_weekly && !o.keep_monthly &&
	    !o.keep_yearly && !o.keep_within)
		return cli_usage(u, "no keep option given (or all zero): that would remove every "
				    "snapshot");
	bool dry = o.dry_run;
	if (verbose || dry) {
		o.item = item;
		o.arg = &dry;
	}
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int rc = 0;
	for (int i = optind; i < argc && !rc; i++) {
		cairn_list_spec spec = {.roots = (const char *const *)&argv[i], .nroots = 1,
					.depth = recursive ? -1 : 0};
		cairn_list *l;
		int r = cairn_list_open(st, &spec, &l);
		cairn_list_cursor cur = {0};
		cairn_list_batch b = {0};
		/* Collect the dataset names first: prune changes the catalog. */
		char **names = NULL;
		size_t n = 0;
		while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0)
			for (size_t k = 0; k < b.n; k++) {
				names = realloc(names, (n + 1) * sizeof(char *));
				names[n++] = strdup(b.name[k]);
			}
		cairn_list_batch_free(&b);
		cairn_list_close(l);
		for (size_t k = 0; r >= 0 && k < n; k++)
			r = cairn_prune(st, names[k], &o);
		if (r < 0)
			rc = cli_fail(st, argv[i], r);
		for (size_t k = 0; k < n; k++)
			free(names[k]);
		free(names);
	}
	if (!rc && (verbose || dry))
		printf("%s %llu, kept %llu\n", dry ? "would remove" : "removed",
		       (unsigned long long)o.removed, (unsigned long long)o.kept);
	cairn_store_close(st);
	return rc;
}
