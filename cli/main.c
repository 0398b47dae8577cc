/* main.c - the cairn command: global options and the verb table. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

cli_t g_cli;

static const struct verb {
	const char *name;
	int (*fn)(int, char **);
	const char *summary;
} verbs[] = {
	{"init", cmd_init, "create a store"},
	{"config", cmd_config, "show or change store settings"},
	{"create", cmd_create, "create a dataset"},
	{"snapshot", cmd_snapshot, "take snapshots (back up datasets' sources)"},
	{"restore", cmd_restore, "restore a snapshot into a directory or image"},
	{"list", cmd_list, "list datasets and snapshots"},
	{"get", cmd_get, "show dataset properties"},
	{"set", cmd_set, "set dataset properties"},
	{"inherit", cmd_inherit, "drop local properties so they inherit"},
	{"rename", cmd_rename, "rename snapshots and datasets"},
	{"destroy", cmd_destroy, "destroy datasets, snapshots and bookmarks"},
	{"hold", cmd_hold, "hold snapshots (they cannot be destroyed)"},
	{"holds", cmd_holds, "list holds"},
	{"release", cmd_release, "release holds"},
	{"bookmark", cmd_bookmark, "bookmark a snapshot"},
	{"prune", cmd_prune, "remove snapshots by keep rules"},
	{"gc", cmd_gc, "remove chunks no snapshot references (garbage collection)"},
	{"verify", cmd_verify, "re-read and check the chunks of snapshots"},
	{"send", cmd_send, "write a replication stream"},
	{"recv", cmd_recv, "receive a replication stream"},
	{"receive", cmd_recv, "receive a replication stream"},
	{"sync", cmd_sync, "replicate to another store, sending only missing chunks"},
	{"have", cmd_have, "(internal) answer which chunks this store has"},
	{"diff", cmd_diff, "show what changed between snapshots (zfs diff format)"},
	{"mount", cmd_mount, "browse snapshots through a read-only FUSE file system"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn [-s STORE] VERB [ARGS...]\n\nverbs:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
	fprintf(f, "\nThe store is -s STORE, else $CAIRN_STORE, else /var/lib/cairn (root) or\n"
		   "$XDG_DATA_HOME/cairn (others).\n");
}

static const char *default_store(void)
{
	const char *e = getenv("CAIRN_STORE");
	if (e && *e)
		return e;
	if (geteuid() == 0)
		return "/var/lib/cairn";
	static char path[4096];
	const char *xdg = getenv("XDG_DATA_HOME");
	if (xdg && *xdg)
		snprintf(path, sizeof(path), "%s/cairn", xdg);
	else
		snprintf(path, sizeof(path), "%s/.local/share/cairn", getenv("HOME") ?: "/");
	return path;
}

void cli_err(const char *object, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "cairn: %s: ", g_cli.verb ? g_cli.verb : "error");
	if (object)
		fprintf(stderr, "%s: ", object);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_fail(cairn_store *st, const char *object, int err)
{
	cli_progress_done();
	const char *d = cairn_store_errdetail(st);
	if (d && *d)
		cli_err(NULL, "%s", d);
	else
		cli_err(object, "%s", cairn_strerror(err));
	return 1;
}

int cli_usage(const char *u, const char *fmt, ...)
{
	va_list ap;
	if (fmt) {
		fprintf(stderr, "cairn: %s: ", g_cli.verb);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	fprintf(stderr, "usage: cairn %s\n", u);
	return EXIT_USAGE;
}

int cli_open(cairn_store **st)
{
	int r = cairn_store_open(g_cli.store_path, st);
	if (r == 0)
		return 0;
	if (r == CAIRN_ENOTSTORE || r == -ENOENT)
		cli_err(g_cli.store_path,
			"no cairn store here (create one with 'cairn -s %s init')",
			g_cli.store_path);
	else
		cli_err(g_cli.store_path, "cannot open store: %s", cairn_strerror(r));
	return 1;
}

static int64_t progress_start;

static int64_t mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static bool progress_shown;

void cli_progress(const cairn_progress *p, void *arg)
{
	if (!g_cli.progress)
		return;
	char b[32], rate[32];
	if (!progress_start)
		progress_start = mono_now();
	double secs = (mono_now() - progress_start) / 1e9;
	cli_size(b, sizeof(b), p->bytes, false);
	cli_size(rate, sizeof(rate), secs > 0.1 ? (uint64_t)(p->bytes / secs) : 0, false);
	fprintf(stderr, "\r\033[K%s %s: %llu files, %s, %s/s", p->phase,
		p->object ? p->object : "", (unsigned long long)p->files, b, rate);
	progress_shown = true;
}

void cli_progress_done(void)
{
	if (progress_shown)
		fprintf(stderr, "\r\033[K");
	progress_shown = false;
}

void cli_warn(const char *object, int err, void *arg)
{
	cli_progress_done();
	cli_err(object, "%s (skipped)", cairn_strerror(err));
}

void cli_size(char *out, size_t len, uint64_t v, bool exact)
{
	static const char units[] = "BKMGTPE";
	if (exact || v < 1024) {
		snprintf(out, len, exact ? "%llu" : "%lluB", (unsigned long long)v);
		return;
	}
	double d = v;
	int u = 0;
	while (d >= 1024 && u < 6) {
		d /= 1024;
		u++;
	}
	if (d < 10)
		snprintf(out, len, "%.2f%c", d, units[u]);
	else if (d < 100)
		snprintf(out, len, "%.1f%c", d, units[u]);
	else
		snprintf(out, len, "%.0f%c", d, units[u]);
}

int cli_parse_prop(char *s, cairn_prop *out)
{
	char *eq = strchr(s, '=');
	if (!eq || eq == s)
		return -1;
	*eq = 0;
	out->name = s;
	out->value = eq + 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *store = NULL;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-s") && i + 1 < argc)
			store = argv[++i];
		else if (!strncmp(argv[i], "-s", 2) && argv[i][2])
			store = argv[i] + 2;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "cairn: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	g_cli.store_path = store ? store : default_store();
	g_cli.progress = isatty(2);
	for (size_t k = 0; k < sizeof(verbs) / sizeof(verbs[0]); k++)
		if (!strcmp(verbs[k].name, argv[i])) {
			g_cli.verb = verbs[k].name;
			optind = 1;
			int rc = verbs[k].fn(argc - i, argv + i);
			cli_progress_done();
			if (fflush(stdout) != 0 || ferror(stdout)) {
				if (errno != EPIPE)
					cli_err(NULL, "writing output: %s", strerror(errno));
				return 1;
			}
			return rc;
		}
	fprintf(stderr, "cairn: unknown verb '%s'\n", argv[i]);
	usage(stderr);
	return EXIT_USAGE;
}
