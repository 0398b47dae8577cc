/* cmd_sync.c - cairn sync: replicate a dataset to another store, sending
 * only the chunks the destination does not already have (whatever dataset
 * or source they came from there).
 *
 * ENDPOINT is DATASET (the -s store), /STORE:DATASET (another local
 * store), or HOST:/STORE:DATASET (over ssh: $CAIRN_SSH, default "ssh",
 * runs $CAIRN_REMOTE, default "cairn", on the far side).  The source must
 * be local.  The newest snapshot both sides share (by guid) is the
 * incremental base; everything newer is sent with its intermediates. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

static const char *u = "sync [-R] [-F] [-v] [--dry-run] SOURCE DESTINATION\n"
		       "       endpoints: DATASET | /STORE:DATASET | HOST:/STORE:DATASET";

typedef struct endpoint {
	char *host;  /* NULL: local */
	char *store; /* NULL: the -s store */
	char *dataset;
} endpoint_t;

static int parse_endpoint(const char *s, endpoint_t *e)
{
	memset(e, 0, sizeof(*e));
	const char *p = s;
	const char *hostsep = strstr(s, ":/");
	if (s[0] != '/' && hostsep) {
		e->host = strndup(s, hostsep - s);
		p = hostsep + 1;
	}
	if (p[0] == '/') {
		const char *colon = strchr(p, ':');
		if (!colon || !colon[1])
			return -1;
		e->store = strndup(p, colon - p);
		e->dataset = strdup(colon + 1);
	} else {
		if (e->host)
			return -1;
		e->dataset = strdup(p);
	}
	return 0;
}

static char *shell_quote(const char *s)
{
	size_t n = 3;
	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 4 : 1;
	char *q = malloc(n), *o = q;
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = 0;
	return q;
}

/* argv for running cairn VERB... on the destination side. */
static char **dest_argv(const endpoint_t *d, const char *const *verb)
{
	static char self[4096];
	char **av = calloc(32, sizeof(char *));
	size_t n = 0;
	if (d->host) {
		const char *ssh = getenv("CAIRN_SSH") ?: "ssh";
		const char *remote = getenv("CAIRN_REMOTE") ?: "cairn";
		char cmd[8192];
		int len = snprintf(cmd, sizeof(cmd), "%s -s ", remote);
		char *q = shell_quote(d->store);
		len += snprintf(cmd + len, sizeof(cmd) - len, "%s", q);
		free(q);
		for (size_t i = 0; verb[i]; i++) {
			q = shell_quote(verb[i]);
			len += snprintf(cmd + len, sizeof(cmd) - len, " %s", q);
			free(q);
		}
		av[n++] = strdup(ssh);
		av[n++] = strdup(d->host);
		av[n++] = strdup(cmd);
	} else {
		ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[k > 0 ? k : 0] = 0;
		av[n++] = strdup(self);
		av[n++] = strdup("-s");
		av[n++] = strdup(d->store ? d->store : g_cli.store_path);
		for (size_t i = 0; verb[i]; i++)
			av[n++] = strdup(verb[i]);
	}
	return av;
}

static void argv_free(char **av)
{
	for (size_t i = 0; av[i]; i++)
		free(av[i]);
	free(av);
}

/* Spawns av with pipes: *to_child writes its stdin, *from_child (if not
 * NULL) reads its stdout. */
static pid_t spawn_piped(char **av, int *to_child, int *from_child, bool quiet)
{
	int in[2], out[2] = {-1, -1};
	if (pipe2(in, O_CLOEXEC) < 0 || (from_child && pipe2(out, O_CLOEXEC) < 0))
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	if (from_child)
		posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int e = posix_spawnp(&pid, av[0], &fa, NULL, av, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	if (from_child)
		close(out[1]);
	if (e) {
		close(in[1]);
		if (from_child)
			close(out[0]);
		errno = e;
		return -1;
	}
	*to_child = in[1];
	if (from_child)
		*from_child = out[0];
	return pid;
}

static int wait_child(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- what the destination has ---- */

typedef struct remote_have {
	int to, from;
	pid_t pid;
} remote_have_t;

static int have_local(const uint8_t (*d)[32], size_t n, uint8_t *present, void *arg)
{
	return cairn_chunks_present(arg, d, n, present);
}

static int have_remote(const uint8_t (*d)[32], size_t n, uint8_t *present, void *arg)
{
	remote_have_t *h = arg;
	uint8_t hdr[4] = {n, n >> 8, n >> 16, n >> 24};
	if (write(h->to, hdr, 4) != 4 || write(h->to, d, n * 32) != (ssize_t)(n * 32))
		return -EPIPE;
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(h->from, present + got, n - got);
		if (k <= 0)
			return -EPIPE;
		got += k;
	}
	return 0;
}

/* Snapshot guids of the destination dataset (none if it does not exist). */
static int dest_guids(const endpoint_t *d, uint64_t **guids, size_t *n)
{
	*guids = NULL;
	*n = 0;
	const char *verb[] = {"list", "-H", "-p", "-t", "snapshot", "-d", "1", "-o", "guid",
			      d->dataset, NULL};
	char **av = dest_argv(d, verb);
	int to, from;
	/* stderr of the child passes through: "does not exist" is expected
	 * for a first sync, so silence it by checking existence separately. */
	pid_t pid = spawn_piped(av, &to, &from, true);
	argv_free(av);
	if (pid < 0)
		return -errno;
	close(to);
	FILE *f = fdopen(from, "r");
	char line[64];
	while (f && fgets(line, sizeof(line), f)) {
		uint64_t *p = realloc(*guids, (*n + 1) * sizeof(*p));
		if (!p)
			break;
		*guids = p;
		(*guids)[(*n)++] = strtoull(line, NULL, 10);
	}
	if (f)
		fclose(f);
	wait_child(pid);
	return 0;
}

/* Newest snapshot of the source dataset whose guid the destination has. */
static int find_common(cairn_store *st, const char *ds, const uint64_t *guids, size_t ng,
		       char **common, char **newest)
{
	cairn_list_spec spec = {.roots = &ds, .nroots = 1, .depth = 1,
				.types = CAIRN_TYPE_SNAPSHOT, .fields = 1u << CAIRN_F_GUID};
	cairn_list *l;
	int r = cairn_list_open(st, &spec, &l);
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	*common = *newest = NULL;
	while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0)
		for (size_t i = 0; i < b.n; i++) {
			free(*newest);
			*newest = strdup(b.name[i]);
			for (size_t k = 0; k < ng; k++)
				if (guids[k] == b.field[CAIRN_F_GUID][i]) {
					free(*common);
					*common = strdup(strchr(b.name[i], '@'));
				}
		}
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	return r;
}

static void est(const char *kind, const char *from, const char *to, uint64_t bytes, void *arg)
{
	char b[32];
	cli_size(b, sizeof(b), bytes, false);
	printf("would send %s%s%s: %s\n", to, from ? " from " : "", from ? from : "", b);
}

int cmd_sync(int argc, char **argv)
{
	static const struct option lo[] = {{"dry-run", no_argument, 0, 'n'}, {0}};
	bool recursive = false, force = false, dry = false, verbose = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "RFvn", lo, NULL)) != -1) {
		switch (ch) {
		case 'R': recursive = true; break;
		case 'F': force = true; break;
		case 'v': verbose = true; break;
		case 'n': dry = true; break;
		default: return cli_usage(u, NULL);
		}
	}
	if (optind + 2 != argc)
		return cli_usage(u, "expected SOURCE and DESTINATION");
	endpoint_t src, dst;
	if (parse_endpoint(argv[optind], &src) < 0 || parse_endpoint(argv[optind + 1], &dst) < 0)
		return cli_usage(u, "bad endpoint");
	if (src.host) {
		cli_err(argv[optind], "the source must be a local store (run sync on the source host)");
		return 1;
	}
	if (src.store)
		g_cli.store_path = src.store;
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	uint64_t *guids;
	size_t ng;
	char *common = NULL, *newest = NULL;
	int rc = 0, r = dest_guids(&dst, &guids, &ng);
	if (r == 0)
		r = find_common(st, src.dataset, guids, ng, &common, &newest);
	if (r < 0)
		rc = cli_fail(st, src.dataset, r);
	else if (!newest) {
		cli_err(src.dataset, "has no snapshots to sync");
		rc = 1;
	} else if (ng && !common) {
		cli_err(dst.dataset, "has snapshots but none in common with %s; refusing "
				     "(destroy them or pick another destination)",
			src.dataset);
		rc = 1;
	} else if (common && !strcmp(strchr(newest, '@'), common)) {
		if (verbose || dry)
			printf("%s is up to date (%s)\n", dst.dataset, common);
	} else {
		cairn_send_opts o = {.from = common, .intermediates = true, .recursive = recursive,
				     .dry_run = dry, .progress = cli_progress};
		remote_have_t rh = {-1, -1, -1};
		cairn_store *dstore = NULL;
		if (dst.host) {
			const char *verb[] = {"have", NULL};
			char **av = dest_argv(&dst, verb);
			rh.pid = spawn_piped(av, &rh.to, &rh.from, false);
			argv_free(av);
			o.have = have_remote;
			o.have_arg = &rh;
		} else {
			if (cairn_store_open(dst.store ? dst.store : g_cli.store_path, &dstore) < 0) {
				cli_err(dst.store, "cannot open the destination store");
				rc = 1;
			}
			o.have = have_local;
			o.have_arg = dstore;
		}
		pid_t rpid = -1;
		if (!rc && dry) {
			o.estimate = est;
			r = cairn_send(st, newest, &o);
		} else if (!rc) {
			const char *verb[] = {"recv", force ? "-F" : "-s", verbose ? "-v" : "-s",
					      dst.dataset, NULL};
			char **av = dest_argv(&dst, verb);
			rpid = spawn_piped(av, &o.fd, NULL, false);
			argv_free(av);
			signal(SIGPIPE, SIG_IGN);
			r = rpid < 0 ? -errno : cairn_send(st, newest, &o);
			if (rpid > 0) {
				close(o.fd);
				int st_child = wait_child(rpid);
				if (r == 0 && st_child != 0)
					r = -EIO;
			}
		}
		if (rh.pid > 0) {
			close(rh.to);
			close(rh.from);
			wait_child(rh.pid);
		}
		cairn_store_close(dstore);
		cli_progress_done();
		if (!rc && r < 0)
			rc = cli_fail(st, src.dataset, r);
		if (!rc && (verbose || dry)) {
			char b[32];
			cli_size(b, sizeof(b), o.bytes, false);
			printf("%s %s %s -> %s: %s in %llu snapshots, %llu chunks already there\n",
			       dry ? "would sync" : "synced", newest, common ? common : "(full)",
			       dst.dataset, b, (unsigned long long)o.snapshots,
			       (unsigned long long)o.chunks_skipped);
		}
	}
	free(guids);
	free(common);
	free(newest);
	cairn_store_close(st);
	return rc;
}
