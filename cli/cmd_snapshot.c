/* cmd_snapshot.c - cairn snapshot: back up datasets' sources, atomically. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char *u = "snapshot [-r] [-v [-p]] [--strict] [-o PROP=VALUE]... DATASET@NAME...";

/* "1 file", "2 files": counts a user reads. */
static const char *noun(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* What the backup left out, as "2 files and 1 directory " VERB: a
 * directory stands for all it holds, so it is not counted as one more
 * file, and a note after VERB says nothing below it is in the snapshot
 * (the directory itself may be, when only listing it failed). */
static void left_out(char *buf, size_t size, const cairn_snapshot_opts *o, const char *verb)
{
	int n = 0;
	buf[0] = 0;
	if (o->skipped)
		n = snprintf(buf, size, "%llu %s", (unsigned long long)o->skipped,
			     noun(o->skipped, "file", "files"));
	if (o->skipped_dirs && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, "%s%llu %s", o->skipped ? " and " : "",
			      (unsigned long long)o->skipped_dirs,
			      noun(o->skipped_dirs, "directory", "directories"));
	if (n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, " %s", verb);
	if (o->skipped_dirs && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - n, " (nothing below %s is in the snapshot)",
			 noun(o->skipped_dirs, "the directory", "those directories"));
}

/* -p prints the sizes as exact byte counts, for scripts. */
static void summary(const cairn_snapshot_opts *o, double secs, bool exact)
{
	char rd[32], reused[32], st[32];
	cli_size(rd, sizeof(rd), o->bytes_read, exact);
	cli_size(reused, sizeof(reused), o->bytes_reused, exact);
	cli_size(st, sizeof(st), o->stored_new, exact);
	uint64_t logical = o->bytes_read + o->bytes_reused;
	char ratio[32] = "all data already stored";
	if (o->stored_new)
		snprintf(ratio, sizeof(ratio), "dedup+compression %.2fx",
			 (double)logical / o->stored_new);
	fprintf(stderr, "%llu files, %s read, %s reused unread, %llu new chunks, %s new stored, %s, %.2fs\n",
		(unsigned long long)o->files, rd, reused, (unsigned long long)o->chunks_new, st, ratio,
		secs);
	if (o->skipped || o->skipped_dirs) {
		char what[200];
		left_out(what, sizeof(what), o, "skipped");
		fprintf(stderr, "%s\n", what);
	}
	if (o->torn)
		fprintf(stderr, "%llu %s written while read (recorded as read)\n",
			(unsigned long long)o->torn, noun(o->torn, "file", "files"));
	if (o->excluded)
		fprintf(stderr, "%llu paths excluded (exclude, exclude_caches, .cairnignore)\n",
			(unsigned long long)o->excluded);
}

int cmd_snapshot(int argc, char **argv)
{
	static const struct option lo[] = {{"strict", no_argument, 0, 'S'}, {0}};
	cairn_prop props[64];
	cairn_snapshot_opts o = {.progress = cli_progress, .warn = cli_warn};
	bool verbose = false, exact = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "rvpo:", lo, NULL)) != -1) {
		switch (ch) {
		case 'r':
			o.recursive = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'p':
			exact = true;
			break;
		case 'S':
			o.strict = true;
			break;
		case 'o':
			if (o.nprops == 64 || cli_parse_prop(optarg, &props[o.nprops]) < 0)
				return cli_usage(u, "bad property assignment '%s'", optarg);
			o.nprops++;
			break;
		default:
			return cli_usage(u, NULL);
		}
	}
	if (optind >= argc)
		return cli_usage(u, "expected at least one DATASET@NAME");
	o.props = props;
	/* The walk holds a directory fd per level (and the statahead helper
	 * some more): under the usual soft limit of 1,024, a tree about a
	 * thousand levels deep lost its lower part to EMFILE. */
	cli_raise_nofile();
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = cairn_snapshot_create(st, (const char *const *)argv + optind, argc - optind, &o);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cli_progress_done();
	int rc = 0;
	if (r == CAIRN_EPARTIAL) {
		char what[200];
		left_out(what, sizeof(what), &o, "could not be read");
		cli_err(NULL, "snapshot taken, but %s", what);
		rc = 1;
	} else if (r < 0) {
		rc = cli_fail(st, argv[optind], r);
	}
	if (verbose && (r == 0 || r == CAIRN_EPARTIAL))
		summary(&o, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, exact);
	cairn_store_close(st);
	return rc;
}
