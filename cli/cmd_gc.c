/* cmd_gc.c - cairn gc: mark and sweep unreferenced chunks; gc --status. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "parse.h"

static const char *u =
	"gc [-n] [-v] [-j|--json] [--cache-capacity N] [--batch N] [--order inode|digest|none]\n"
	"          [--threads N]\n"
	"       cairn gc --status [-j|--json]";

static void on_signal(int sig)
{
	cairn_gc_interrupt();
}

static void item(const char *path, uint64_t bytes, void *arg)
{
	bool dry = *(bool *)arg;
	char sz[32];
	cli_size(sz, sizeof(sz), bytes, false);
	cli_progress_done();
	printf("%s %s (%s)\n", dry ? "would remove" : "removed", path, sz);
}

static void warn(const char *object, int err, void *arg)
{
	cli_progress_done();
	cli_err(object, "%s", err == -ENOENT ? "missing" : cairn_strerror(err));
}

static double secs(int64_t ns)
{
	return ns / 1e9;
}

static void print_text(const cairn_gc_status *s)
{
	char a[32], b[32], c[32], d[32];
	char when[64] = "-";
	time_t t = s->start;
	struct tm tm;
	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%-16s %s%s, %.1fs\n", "started", when, s->dry_run ? " (dry run)" : "",
	       (double)(s->end - s->start));
	cli_size(a, sizeof(a), s->index_bytes, false);
	printf("%-16s %s in %llu snapshots\n", "index data", a, (unsigned long long)s->snapshots);
	cli_size(a, sizeof(a), s->disk_bytes, false);
	cli_size(b, sizeof(b), s->avg_chunk, false);
	printf("%-16s %s in %llu chunks (average %s)\n", "on disk", a,
	       (unsigned long long)s->disk_chunks, b);
	cli_size(c, sizeof(c), s->removed_bytes, false);
	printf("%-16s %llu chunks, %s; %llu temporary files\n",
	       s->dry_run ? "would remove" : "removed", (unsigned long long)s->removed_chunks, c,
	       (unsigned long long)s->removed_temp);
	cli_size(d, sizeof(d), s->pending_bytes, false);
	printf("%-16s %llu chunks, %s (unreferenced, inside the atime cutoff)\n", "pending",
	       (unsigned long long)s->pending_chunks, d);
	if (s->other_files)
		printf("%-16s %llu (other names, e.g. .bad: left alone)\n", "other files",
		       (unsigned long long)s->other_files);
	if (s->missing)
		printf("%-16s %llu referenced chunks\n", "MISSING", (unsigned long long)s->missing);
	printf("%-16s %.2fx\n", "dedup factor", s->dedup_factor);
	printf("%-16s %llu references, %llu hits, %llu misses\n", "cache",
	       (unsigned long long)s->referenced_chunks, (unsigned long long)s->cache_hits,
	       (unsigned long long)s->cache_misses);
	printf("%-16s %.2fs, %llu touches (%.0f/s)\n", "mark", secs(s->mark_ns),
	       (unsigned long long)s->touched, s->touches_per_s);
	printf("%-16s %.2fs\n", "sweep", secs(s->sweep_ns));
}

static void print_json(const cairn_gc_status *s)
{
	printf("{\"start\":%lld,\"end\":%lld,\"dry_run\":%s,\"snapshots\":%llu,"
	       "\"index_bytes\":%llu,\"referenced_chunks\":%llu,\"touched\":%llu,"
	       "\"cache_hits\":%llu,\"cache_misses\":%llu,\"missing\":%llu,"
	       "\"disk_chunks\":%llu,\"disk_bytes\":%llu,\"removed_chunks\":%llu,"
	       "\"removed_bytes\":%llu,\"pending_chunks\":%llu,\"pending_bytes\":%llu,"
	       "\"removed_temp\":%llu,\"other_files\":%llu,\"dedup_factor\":%.4f,"
	       "\"avg_chunk\":%llu,\"mark_ns\":%lld,\"sweep_ns\":%lld,\"touches_per_s\":%.1f}\n",
	       (long long)s->start, (long long)s->end, s->dry_run ? "true" : "false",
	       (unsigned long long)s->snapshots, (unsigned long long)s->index_bytes,
	       (unsigned long long)s->referenced_chunks, (unsigned long long)s->touched,
	       (unsigned long long)s->cache_hits, (unsigned long long)s->cache_misses,
	       (unsigned long long)s->missing, (unsigned long long)s->disk_chunks,
	       (unsigned long long)s->disk_bytes, (unsigned long long)s->removed_chunks,
	       (unsigned long long)s->removed_bytes, (unsigned long long)s->pending_chunks,
	       (unsigned long long)s->pending_bytes, (unsigned long long)s->removed_temp,
	       (unsigned long long)s->other_files, s->dedup_factor,
	       (unsigned long long)s->avg_chunk, (long long)s->mark_ns, (long long)s->sweep_ns,
	       s->touches_per_s);
}

static int parse_count(const char *s, int64_t max, int64_t *out)
{
	uint64_t v;
	if (parse_scaled_uint(s, 0, (uint64_t)max, &v) < 0)
		return -1;
	*out = (int64_t)v;
	return 0;
}

int cmd_gc(int argc, char **argv)
{
	static const struct option lo[] = {{"status", no_argument, 0, 'S'},
					   {"cache-capacity", required_argument, 0, 'c'},
					   {"batch", required_argument, 0, 'b'},
					   {"order", required_argument, 0, 'o'},
					   {"threads", required_argument, 0, 't'},
					   {"json", no_argument, 0, 'j'},
					   {0}};
	cairn_gc_opts o = {.cache_capacity = -1, .progress = cli_progress, .warn = warn};
	bool verbose = false, json = false, status = false;
	bool tuned = false; /* an option for a run, not for --status */
	int ch;
	int64_t v;
	while ((ch = getopt_long(argc, argv, "nvj", lo, NULL)) != -1) {
		switch (ch) {
		case 'n': o.dry_run = true; break;
		case 'v': verbose = true; break;
		case 'j': json = true; break;
		case 'S': status = true; break;
		case 'c':
			tuned = true;
			if (parse_count(optarg, 64 << 20, &v) < 0)
				return cli_usage(u, "invalid cache capacity '%s' (0..64M digests)",
						 optarg);
			o.cache_capacity = v;
			break;
		case 'b':
			tuned = true;
			if (parse_count(optarg, 16 << 20, &v) < 0 || v < 1)
				return cli_usage(u, "invalid batch '%s' (1..16M entries)", optarg);
			o.batch = v;
			break;
		case 't':
			tuned = true;
			if (parse_count(optarg, 64, &v) < 0 || v < 1)
				return cli_usage(u, "invalid thread count '%s' (1..64)", optarg);
			o.threads = v;
			break;
		case 'o':
			tuned = true;
			if (!strcmp(optarg, "inode"))
				o.order = CAIRN_GC_ORDER_INODE;
			else if (!strcmp(optarg, "digest"))
				o.order = CAIRN_GC_ORDER_DIGEST;
			else if (!strcmp(optarg, "none"))
				o.order = CAIRN_GC_ORDER_NONE;
			else
				return cli_usage(u, "invalid order '%s' (inode, digest or none)",
						 optarg);
			break;
		default:
			return cli_usage(u, NULL);
		}
	}
	if (optind < argc)
		return cli_usage(u, "unexpected argument '%s'", argv[optind]);
	if (status && (o.dry_run || verbose || tuned))
		return cli_usage(u, "--status takes only -j");
	/* The first signal stops GC at its next safe point; a second one
	 * (SA_RESETHAND) kills as usual.  Installed before the store is
	 * opened and kept until exit: a signal that comes before GC starts
	 * stops it at its first safe point, one that comes after it finished
	 * changes nothing. */
	if (!status) {
		struct sigaction sa = {.sa_handler = on_signal,
				       .sa_flags = SA_RESETHAND | SA_RESTART};
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	cairn_gc_status s;
	int rc = 0;
	if (status) {
		int r = cairn_gc_last_status(st, &s);
		if (r < 0)
			rc = cli_fail(st, NULL, r);
		else if (json)
			print_json(&s);
		else
			print_text(&s);
		cairn_store_close(st);
		return rc;
	}
	cli_raise_nofile(); /* a flush holds a directory fd per directory */
	bool dry = o.dry_run;
	/* With -j standard output is one JSON document: no chunk lines. */
	if (verbose && !json) {
		o.item = item;
		o.arg = &dry;
	}
	int r = cairn_gc(st, &o, &s);
	cli_progress_done();
	if (r < 0)
		rc = cli_fail(st, NULL, r);
	bool ran = r == 0 || r == CAIRN_ECORRUPT;
	if (ran && json) {
		print_json(&s);
	} else if (ran && (verbose || dry)) {
		if (dry && !verbose) {
			char a[32];
			cli_size(a, sizeof(a), s.removed_bytes, false);
			printf("would remove %llu chunks (%s) and %llu temporary files\n",
			       (unsigned long long)s.removed_chunks, a,
			       (unsigned long long)s.removed_temp);
		} else {
			print_text(&s);
		}
	}
	cairn_store_close(st);
	return rc;
}
