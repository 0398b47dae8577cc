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
	"gc [-n] [-v] [-H] [-p] [-j|--json] [--cache-capacity N] [--batch N]\n"
	"          [--order inode|digest|none] [--threads N]\n"
	"       cairn gc --status [-H] [-p] [-j|--json]";

static void on_signal(int sig)
{
	cairn_gc_interrupt();
}

/* How the report and the -v lines are written (-H, -p). */
typedef struct gc_out {
	bool dry, scripted, exact;
} gc_out_t;

static void item(const char *path, uint64_t bytes, void *arg)
{
	const gc_out_t *g = arg;
	char sz[32];
	cli_size(sz, sizeof(sz), bytes, g->exact);
	cli_progress_done();
	const char *what = g->dry ? "would remove" : "removed";
	if (g->scripted)
		printf("%s\t%s\t%s\n", g->dry ? "would_remove" : "removed", path, sz);
	else
		printf("%s %s (%s)\n", what, path, sz);
}

static void warn(const char *object, int err, void *arg)
{
	cli_progress_done();
	cli_err(object, "%s", err == -ENOENT ? "missing" : cairn_strerror(err));
}

/* How each status field is shown.  One table drives -j, -H and -p, so
 * the three can never disagree on names or values. */
enum fkind { F_TIME, F_BOOL, F_COUNT, F_BYTES, F_NS, F_RATIO, F_RATE };

typedef struct field {
	const char *name; /* the JSON key, and -H's first column */
	enum fkind kind;
	double v;         /* F_RATIO, F_RATE */
	int64_t i;        /* every other kind */
} field_t;

#define N_FIELDS 23

static void status_fields(const cairn_gc_status *s, field_t f[N_FIELDS])
{
	field_t t[N_FIELDS] = {
		{"start", F_TIME, 0, s->start},
		{"end", F_TIME, 0, s->end},
		{"dry_run", F_BOOL, 0, s->dry_run},
		{"snapshots", F_COUNT, 0, s->snapshots},
		{"index_bytes", F_BYTES, 0, s->index_bytes},
		{"referenced_chunks", F_COUNT, 0, s->referenced_chunks},
		{"touched", F_COUNT, 0, s->touched},
		{"cache_hits", F_COUNT, 0, s->cache_hits},
		{"cache_misses", F_COUNT, 0, s->cache_misses},
		{"missing", F_COUNT, 0, s->missing},
		{"disk_chunks", F_COUNT, 0, s->disk_chunks},
		{"disk_bytes", F_BYTES, 0, s->disk_bytes},
		{"removed_chunks", F_COUNT, 0, s->removed_chunks},
		{"removed_bytes", F_BYTES, 0, s->removed_bytes},
		{"pending_chunks", F_COUNT, 0, s->pending_chunks},
		{"pending_bytes", F_BYTES, 0, s->pending_bytes},
		{"removed_temp", F_COUNT, 0, s->removed_temp},
		{"other_files", F_COUNT, 0, s->other_files},
		{"dedup_factor", F_RATIO, s->dedup_factor, 0},
		{"avg_chunk", F_BYTES, 0, s->avg_chunk},
		{"mark_ns", F_NS, 0, s->mark_ns},
		{"sweep_ns", F_NS, 0, s->sweep_ns},
		{"touches_per_s", F_RATE, s->touches_per_s, 0},
	};
	memcpy(f, t, sizeof(t));
}

/* A local date and time, or "-" when there is none. */
static void format_time(char *out, size_t len, time_t t)
{
	struct tm tm;
	snprintf(out, len, "-");
	if (localtime_r(&t, &tm))
		strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm);
}

/* A duration: seconds to two places, or exact nanoseconds' seconds. */
static void format_secs(char *out, size_t len, int64_t ns, bool exact)
{
	if (exact)
		snprintf(out, len, "%lld.%09lld", (long long)(ns / 1000000000),
			 (long long)(ns % 1000000000));
	else
		snprintf(out, len, "%.2fs", ns / 1e9);
}

/* One field's value: exact (-p, -j) or for people. */
static void format_field(char *out, size_t len, const field_t *f, bool exact)
{
	switch (f->kind) {
	case F_TIME:
		if (exact)
			snprintf(out, len, "%lld", (long long)f->i);
		else
			format_time(out, len, f->i);
		break;
	case F_BOOL: snprintf(out, len, "%s", f->i ? "true" : "false"); break;
	case F_COUNT: snprintf(out, len, "%llu", (unsigned long long)f->i); break;
	case F_BYTES: cli_size(out, len, f->i, exact); break;
	case F_NS:
		if (exact) /* the nanoseconds the key names */
			snprintf(out, len, "%lld", (long long)f->i);
		else
			format_secs(out, len, f->i, false);
		break;
	case F_RATIO: snprintf(out, len, exact ? "%.4f" : "%.2fx", f->v); break;
	case F_RATE: snprintf(out, len, exact ? "%.1f" : "%.0f/s", f->v); break;
	}
}

/* The report for people; -p makes every number exact (bytes, epoch
 * seconds, seconds with nanoseconds) and keeps the layout. */
static void print_text(const cairn_gc_status *s, bool exact)
{
	char a[32], b[32], when[64], dur[48];
	if (exact)
		snprintf(when, sizeof(when), "%lld", (long long)s->start);
	else
		format_time(when, sizeof(when), s->start);
	printf(exact ? "%-16s %s%s, %.0f\n" : "%-16s %s%s, %.1fs\n", "started", when,
	       s->dry_run ? " (dry run)" : "", (double)(s->end - s->start));
	cli_size(a, sizeof(a), s->index_bytes, exact);
	printf("%-16s %s in %llu snapshots\n", "index data", a, (unsigned long long)s->snapshots);
	cli_size(a, sizeof(a), s->disk_bytes, exact);
	cli_size(b, sizeof(b), s->avg_chunk, exact);
	printf("%-16s %s in %llu chunks (average %s)\n", "on disk", a,
	       (unsigned long long)s->disk_chunks, b);
	cli_size(a, sizeof(a), s->removed_bytes, exact);
	printf("%-16s %llu chunks, %s; %llu temporary files\n",
	       s->dry_run ? "would remove" : "removed", (unsigned long long)s->removed_chunks, a,
	       (unsigned long long)s->removed_temp);
	cli_size(a, sizeof(a), s->pending_bytes, exact);
	printf("%-16s %llu chunks, %s (unreferenced, inside the atime cutoff)\n", "pending",
	       (unsigned long long)s->pending_chunks, a);
	if (s->other_files)
		printf("%-16s %llu (other names, e.g. .bad: left alone)\n", "other files",
		       (unsigned long long)s->other_files);
	if (s->missing)
		printf("%-16s %llu referenced chunks\n", "MISSING", (unsigned long long)s->missing);
	printf(exact ? "%-16s %.4fx\n" : "%-16s %.2fx\n", "dedup factor", s->dedup_factor);
	printf("%-16s %llu references, %llu hits, %llu misses\n", "cache",
	       (unsigned long long)s->referenced_chunks, (unsigned long long)s->cache_hits,
	       (unsigned long long)s->cache_misses);
	format_secs(dur, sizeof(dur), s->mark_ns, exact);
	printf(exact ? "%-16s %s, %llu touches (%.1f/s)\n" : "%-16s %s, %llu touches (%.0f/s)\n",
	       "mark", dur, (unsigned long long)s->touched, s->touches_per_s);
	format_secs(dur, sizeof(dur), s->sweep_ns, exact);
	printf("%-16s %s\n", "sweep", dur);
}

/* -H: one "name<TAB>value" line a field, the JSON names. */
static void print_scripted(const cairn_gc_status *s, bool exact)
{
	field_t f[N_FIELDS];
	status_fields(s, f);
	for (int i = 0; i < N_FIELDS; i++) {
		char v[64];
		format_field(v, sizeof(v), &f[i], exact);
		printf("%s\t%s\n", f[i].name, v);
	}
}

static void print_json(const cairn_gc_status *s)
{
	field_t f[N_FIELDS];
	status_fields(s, f);
	for (int i = 0; i < N_FIELDS; i++) {
		char v[64];
		format_field(v, sizeof(v), &f[i], true);
		printf("%s\"%s\":%s", i ? "," : "{", f[i].name, v);
	}
	fputs("}\n", stdout);
}

/* The whole status in the form the options asked for. */
static void print_status(const cairn_gc_status *s, bool json, bool scripted, bool exact)
{
	if (json)
		print_json(s);
	else if (scripted)
		print_scripted(s, exact);
	else
		print_text(s, exact);
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
	gc_out_t g = {0};
	bool tuned = false; /* an option for a run, not for --status */
	int ch;
	int64_t v;
	while ((ch = getopt_long(argc, argv, "nvjHp", lo, NULL)) != -1) {
		switch (ch) {
		case 'n': o.dry_run = true; break;
		case 'v': verbose = true; break;
		case 'j': json = true; break;
		case 'H': g.scripted = true; break;
		case 'p': g.exact = true; break;
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
		return cli_usage(u, "--status takes only -j, -H and -p");
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
		else
			print_status(&s, json, g.scripted, g.exact);
		cairn_store_close(st);
		return rc;
	}
	cli_raise_nofile(); /* a flush holds a directory fd per directory */
	g.dry = o.dry_run;
	/* With -j standard output is one JSON document: no chunk lines. */
	if (verbose && !json) {
		o.item = item;
		o.arg = &g;
	}
	int r = cairn_gc(st, &o, &s);
	cli_progress_done();
	if (r < 0)
		rc = cli_fail(st, NULL, r);
	bool ran = r == 0 || r == CAIRN_ECORRUPT;
	if (ran && g.dry && !verbose && !json && !g.scripted) {
		char a[32];
		cli_size(a, sizeof(a), s.removed_bytes, g.exact);
		printf("would remove %llu chunks (%s) and %llu temporary files\n",
		       (unsigned long long)s.removed_chunks, a, (unsigned long long)s.removed_temp);
	} else if (ran && (json || verbose || g.dry || g.scripted)) {
		print_status(&s, json, g.scripted, g.exact);
	}
	cairn_store_close(st);
	return rc;
}
