/* main.c - the cairn command: global options and the verb table. */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <sqlite3.h>
#include <unistd.h>

#include "cli.h"
#include "zfs_compat.h"

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
	{"rollback", cmd_rollback, "destroy the snapshots after a snapshot"},
	{"help", cmd_help, "show a verb's manual page (else its usage)"},
	{"load-key", cmd_load_key, "load encryption keys into the kernel keyring"},
	{"unload-key", cmd_unload_key, "remove encryption keys from the kernel keyring"},
	{"change-key", cmd_change_key, "rewrap an encryption root's key (new passphrase)"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn [-s STORE] VERB [ARGS...]\n\nverbs:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
	fprintf(f, "\nThe store is -s STORE, else $CAIRN_STORE, else /var/lib/cairn (root) or\n"
		   "$XDG_DATA_HOME/cairn if that is absolute, else ~/.local/share/cairn (others).\n");
}

/* `cairn help` without a verb. */
int cairn_main_usage(void)
{
	usage(stdout);
	return 0;
}

/* A non-root user's data directory: $XDG_DATA_HOME when absolute (the XDG
 * Base Directory spec says a relative value is invalid and must be
 * ignored; it would put the store under whatever directory cairn runs
 * in), else ~/.local/share. */
static void user_data_dir(char *out, size_t len)
{
	const char *xdg = getenv("XDG_DATA_HOME");
	if (xdg && xdg[0] == '/') {
		snprintf(out, len, "%s", xdg);
		return;
	}
	/* No $HOME (cron, env -i): the account's home, not "//.local". */
	const char *home = getenv("HOME");
	struct passwd *pw;
	if ((!home || !*home) && (pw = getpwuid(geteuid())))
		home = pw->pw_dir;
	snprintf(out, len, "%s/.local/share", home && strcmp(home, "/") ? home : "");
}

static const char *default_store(void)
{
	const char *e = getenv("CAIRN_STORE");
	if (e && *e)
		return e;
	g_cli.store_default = true;
	if (geteuid() == 0)
		return "/var/lib/cairn";
	static char path[4096];
	char dir[4096 - sizeof("/cairn")];
	user_data_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/cairn", dir);
	return path;
}

/* zfs's form: "cannot ACTION 'OBJECT': REASON", or the bare reason. */
static void zfs_err(const char *object, const char *msg)
{
	if (object)
		fprintf(stderr, "cannot %s '%s': %s\n", zfs_compat_action(g_cli.verb), object, msg);
	else
		fprintf(stderr, "%s\n", msg);
}

void cli_err(const char *object, const char *fmt, ...)
{
	va_list ap;
	char msg[2048];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (g_cli.zfs) {
		zfs_err(object, msg);
		return;
	}
	fprintf(stderr, "cairn: %s: ", g_cli.verb ? g_cli.verb : "error");
	if (object)
		fprintf(stderr, "%s: ", object);
	fprintf(stderr, "%s\n", msg);
}

/* The library's detail "OBJECT: reason" in zfs's words: a missing
 * snapshot or bookmark is a "dataset" that "does not exist" to zfs. */
static void zfs_detail(const char *d, int err)
{
	const char *sep = strstr(d, ": ");
	if (!sep || memchr(d, ' ', sep - d)) {
		zfs_err(NULL, d);
		return;
	}
	char obj[512];
	snprintf(obj, sizeof(obj), "%.*s", (int)(sep - d), d);
	const char *why = sep + 2;
	if (err == -ENOENT && strstr(why, "does not exist") && !strstr(why, "parent"))
		why = "dataset does not exist";
	else if (err == -EEXIST && strstr(why, "exists"))
		why = "dataset already exists";
	zfs_err(obj, why);
}

int cli_fail(cairn_store *st, const char *object, int err)
{
	cli_progress_done();
	const char *d = cairn_store_errdetail(st);
	if (g_cli.zfs && d && *d)
		zfs_detail(d, err);
	else if (g_cli.zfs)
		zfs_err(object, err == -ENOENT ? "dataset does not exist"
				: err == -EEXIST ? "dataset already exists"
						 : cairn_strerror(err));
	else if (d && *d)
		cli_err(NULL, "%s", d);
	else
		cli_err(object, "%s", cairn_strerror(err));
	return 1;
}

/* A usage text names the command as "cairn VERB"; zfs mode says "zfs". */
static void print_usage_text(FILE *f, const char *u)
{
	fprintf(f, "usage: %s ", g_cli.zfs ? "zfs" : "cairn");
	for (const char *p = u; *p; p++) {
		if (g_cli.zfs && !strncmp(p, "cairn ", 6)) {
			fputs("zfs ", f);
			p += 5;
		} else {
			fputc(*p, f);
		}
	}
	fputc('\n', f);
}

int cli_usage(const char *u, const char *fmt, ...)
{
	va_list ap;
	if (g_cli.help) {
		/* VERB -h / --help: the usage on stdout, success. */
		print_usage_text(stdout, u);
		return 0;
	}
	if (fmt) {
		if (!g_cli.zfs)
			fprintf(stderr, "cairn: %s: ", g_cli.verb);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	print_usage_text(stderr, u);
	return EXIT_USAGE;
}

void cli_raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int cli_open(cairn_store **st)
{
	int r = cairn_store_open(g_cli.store_path, st);
	if (r == 0) {
		cairn_store_set_warn(*st, cli_warn, NULL); /* e.g. prune's skipped space figures */
		/* A bad CAIRN_<KEY> override fails the verb: the library's own
		 * reads would fall back to the built-in default, silently
		 * overriding the store's setting (a junk CAIRN_GC_ATIME_CUTOFF
		 * made gc sweep with 1445 minutes whatever the store said). */
		int e = cairn_config_check_env(*st);
		if (e < 0) {
			cli_fail(*st, NULL, e);
			cairn_store_close(*st);
			*st = NULL;
			return 1;
		}
		return 0;
	}
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

/* A warning, not a failure: as zfs it must not read "cannot VERB". */
void cli_warn(const char *object, int err, void *arg)
{
	/* A file written while it was read is kept, as read. */
	const char *what = err == CAIRN_ETORN ? "recorded as read" : "skipped";
	cli_progress_done();
	if (g_cli.zfs)
		fprintf(stderr, "warning: %s: %s (%s)\n", object, cairn_strerror(err), what);
	else
		cli_err(object, "%s (%s)", cairn_strerror(err), what);
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

int cli_run_verb(int argc, char **argv)
{
	for (size_t k = 0; k < sizeof(verbs) / sizeof(verbs[0]); k++)
		if (!strcmp(verbs[k].name, argv[0])) {
			g_cli.verb = verbs[k].name;
			optind = 0; /* full getopt reset: zfs mode runs verbs more than once */
			/* -h/--help: the verb's option parsing refuses it and asks for
			 * its usage, which cli_usage then prints to stdout.  diff -h
			 * (raw names) and send -h (--holds) are options: there -h is
			 * help only alone, and never as zfs (zfs has no such help);
			 * with operands a usage error must still be one (exit 2). */
			bool h_opt = !strcmp(argv[0], "diff") || !strcmp(argv[0], "send");
			g_cli.help = argc > 1 && (!strcmp(argv[1], "--help") ||
						  (!strcmp(argv[1], "-h") &&
						   !(h_opt && (g_cli.zfs || argc > 2))));
			opterr = !g_cli.help;
			/* getopt names argv[0] in its own messages ("option '--d' is
			 * ambiguous"): make those read like every other error. */
			char prog[64], *verb = argv[0];
			snprintf(prog, sizeof(prog), g_cli.zfs ? "%s" : "cairn: %s", verb);
			argv[0] = prog;
			int rc = verbs[k].fn(argc, argv);
			argv[0] = verb;
			opterr = 1;
			cli_progress_done();
			if (fflush(stdout) != 0 || ferror(stdout)) {
				if (errno != EPIPE)
					cli_err(NULL, "writing output: %s", strerror(errno));
				return 1;
			}
			return rc;
		}
	fprintf(stderr, "cairn: unknown verb '%s'\n", argv[0]);
	usage(stderr);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	/* Keys and decrypted data must not reach a core file, nor another
	 * process of the same user through /proc or ptrace. */
	prctl(PR_SET_DUMPABLE, 0);
	/* No up-front bulk of 20 page-cache slots per connection: a short
	 * command reads a handful of pages, and every fresh heap page costs a
	 * page fault (issue 16, BENCHMARKS.md "Listing process floor"). */
	sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0);
	if (argc > 0 && zfs_compat_invoked(argv[0]))
		return zfs_compat_main(argc, argv);
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
		} else if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("cairn %d.%d\n", CAIRN_VERSION_MAJOR, CAIRN_VERSION_MINOR);
			return 0;
		} else {
			if (!strcmp(argv[i], "-s"))
				fprintf(stderr, "cairn: option '-s' needs a STORE\n");
			else
				fprintf(stderr, "cairn: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (store && !*store) {
		/* "" would reach the verb, whose error then names an empty
		 * object ("cairn: init: : No such file or directory"). */
		fprintf(stderr, "cairn: option '-s': the store path is empty\n");
		return EXIT_USAGE;
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	g_cli.store_path = store ? store : default_store();
	g_cli.progress = isatty(2);
	return cli_run_verb(argc - i, argv + i);
}
