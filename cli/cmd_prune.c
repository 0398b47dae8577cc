/* cmd_prune.c - cairn prune: keep rules over each dataset's snapshots. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "parse.h"
#include "props.h"

static const char *u =
	"prune [-n] [-v] [-H] [-j|--json [--json-int]] [-r] [--keep-last N]\n"
	"       [--keep-hourly N] [--keep-daily N] [--keep-weekly N] [--keep-monthly N]\n"
	"       [--keep-yearly N] [--keep-within DURATION]\n"
	"       DATASET...";

typedef struct popts {
	bool dry, scripted, json, json_int;
	FILE *out; /* one dataset's lines, printed once its prune committed */
	bool objects, objects_pending; /* -j: objects printed, and in out */
} popts_t;

static void item(const char *snap, bool keep, const char *reason, void *arg)
{
	popts_t *p = arg;
	const char *action = keep ? "keep" : p->dry ? "remove" : "removed";
	if (p->json) {
		if (p->objects || p->objects_pending)
			fputc(',', p->out);
		p->objects_pending = true;
		json_str(p->out, snap);
		fputs(":{\"name\":", p->out);
		json_str(p->out, snap);
		fprintf(p->out, ",\"action\":\"%s\",\"reason\":", action);
		json_str(p->out, reason);
		fputc('}', p->out);
	} else if (p->scripted) {
		fprintf(p->out, "%s\t%s\t%s\n", action, snap, reason);
	} else if (keep) {
		fprintf(p->out, "keep    %s (%s)\n", snap,
			!strcmp(reason, "held") ? "kept because held" : reason);
	} else {
		fprintf(p->out, "%s  %s\n", action, snap);
	}
}

/* Prunes one dataset; its lines reach stdout only if the prune (or the
 * dry run) went through, so nothing is listed as removed that was not. */
static int prune_one(cairn_store *st, const char *ds, cairn_prune_opts *o, popts_t *p)
{
	char *buf = NULL;
	size_t len = 0;
	if (o->item && !(p->out = open_memstream(&buf, &len)))
		return -ENOMEM;
	int r = cairn_prune(st, ds, o);
	if (p->out && fclose(p->out) && r == 0)
		r = -ENOMEM;
	p->out = NULL;
	if (r == 0 && len)
		fwrite(buf, 1, len, stdout);
	p->objects |= r == 0 && p->objects_pending;
	p->objects_pending = false;
	free(buf);
	return r;
}

static void summary(const cairn_prune_opts *o, const popts_t *p)
{
	if (p->json)
		printf(p->json_int ? "},\"dry_run\":%s,\"removed\":%llu,\"kept\":%llu}\n"
				   : "},\"dry_run\":%s,\"removed\":\"%llu\",\"kept\":\"%llu\"}\n",
		       p->dry ? "true" : "false", (unsigned long long)o->removed,
		       (unsigned long long)o->kept);
	else if (!p->scripted)
		printf("%s %llu, kept %llu\n", p->dry ? "would remove" : "removed",
		       (unsigned long long)o->removed, (unsigned long long)o->kept);
}

int cmd_prune(int argc, char **argv)
{
	static const struct option lo[] = {
		{"keep-last", required_argument, 0, 'l'},   {"keep-hourly", required_argument, 0, 'h'},
		{"keep-daily", required_argument, 0, 'd'},  {"keep-weekly", required_argument, 0, 'w'},
		{"keep-monthly", required_argument, 0, 'm'}, {"keep-yearly", required_argument, 0, 'y'},
		{"keep-within", required_argument, 0, 'W'}, {"json", no_argument, 0, 'j'},
		{"json-int", no_argument, 0, 'I'},          {0}};
	cairn_prune_opts o = {0};
	popts_t p = {0};
	bool verbose = false, recursive = false;
	unsigned seen = 0; /* keep options given, so a repeat is refused */
	int ch;
	while ((ch = getopt_long(argc, argv, "nvrHj", lo, NULL)) != -1) {
		uint32_t *slot = NULL;
		switch (ch) {
		case 'n': o.dry_run = true; continue;
		case 'v': verbose = true; continue;
		case 'H': p.scripted = true; continue;
		case 'j': p.json = true; continue;
		case 'I': p.json_int = true; continue;
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
	if (p.json_int && !p.json)
		return cli_usage(u, "--json-int needs -j");
	p.dry = o.dry_run;
	bool listing = verbose || p.dry || p.scripted || p.json;
	if (listing) {
		o.item = item;
		o.arg = &p;
	}
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	if (p.json)
		json_begin_section("prune", "snapshots");
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
			for (size_t k = 0; r >= 0 && k < b.n; k++) {
				char **more = realloc(names, (n + 1) * sizeof(char *));
				if (!more || !(more[n] = strdup(b.name[k])))
					r = -ENOMEM;
				if (more)
					names = more;
				n += r >= 0;
			}
		cairn_list_batch_free(&b);
		cairn_list_close(l);
		for (size_t k = 0; r >= 0 && k < n; k++)
			r = prune_one(st, names[k], &o, &p);
		if (r < 0)
			rc = cli_fail(st, argv[i], r);
		for (size_t k = 0; k < n; k++)
			free(names[k]);
		free(names);
	}
	/* The document is closed even after a failure, so it stays valid. */
	if (listing && (!rc || p.json))
		summary(&o, &p);
	cairn_store_close(st);
	return rc;
}
