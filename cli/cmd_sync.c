/* cmd_sync.c - cairn sync: replicate a dataset to another store, sending
 * only the chunks the destination does not already have (whatever dataset
 * or source they came from there).
 *
 * ENDPOINT is DATASET (the -s store), /STORE:DATASET (another local
 * store), or HOST:/STORE:DATASET (over ssh: $CAIRN_SSH, default "ssh",
 * runs $CAIRN_REMOTE, default "cairn", on the far side).  The source must
 * be local.  Each dataset is sent from its own newest snapshot or
 * bookmark whose snapshot the destination dataset its name maps to has
 * (by guid; the same guid in another dataset there does not count, nor
 * does a bookmark there: a receive needs its source's data), with every
 * snapshot after it, in groups (one `snapshot -r` commits together).  A
 * partial receive on the destination is resumed by its token first,
 * planned the same way.  Running sync again
 * after any failure converges. */
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

static const char *u = "sync [-R] [-F] [-v] [-p] [-n|--dry-run] SOURCE DESTINATION\n"
		       "       endpoints: DATASET | /STORE:DATASET | HOST:/STORE:DATASET\n"
		       "       HOST: NAME, USER@NAME, [IPV6] or USER@[IPV6]";

typedef struct endpoint {
	char *host;  /* NULL: local */
	char *store; /* NULL: the -s store */
	char *dataset;
} endpoint_t;

static void endpoint_free(endpoint_t *e)
{
	free(e->host);
	free(e->store);
	free(e->dataset);
	memset(e, 0, sizeof(*e));
}

/* Whether s[0..n) is an IPv6 address as it goes between brackets: hex
 * digits, ':' (at least one) and '.' (an IPv4 tail), then maybe a zone
 * ("%eth0").  Loose on purpose (ssh says what it cannot resolve), but it
 * keeps out names, options ("-o...") and anything a shell would read. */
static bool ipv6_literal(const char *s, size_t n)
{
	size_t zone = strcspn(s, "%");
	if (zone > n)
		zone = n;
	bool colon = false;
	for (size_t i = 0; i < zone; i++) {
		if (!strchr("0123456789abcdefABCDEF:.", s[i]))
			return false;
		colon |= s[i] == ':';
	}
	for (size_t i = zone + 1; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", s[i]))
			return false;
	return colon && (zone == n || zone + 1 < n);
}

/* The host of "[ADDR]:/..." or "USER@[ADDR]:/..." (s begins with it):
 * "ADDR" or "USER@ADDR", as ssh takes an IPv6 address (it does not strip
 * brackets), malloc'ed, and *rest set to the "/STORE:DATASET" after it.
 * NULL with *why for a malformed one. */
static char *bracketed_host(const char *s, const char **rest, const char **why)
{
	const char *lb = strchr(s, '['), *rb = strchr(lb, ']');
	if (!rb) {
		*why = "'[' without a closing ']' (an IPv6 host is [ADDR] or USER@[ADDR])";
		return NULL;
	}
	if (!ipv6_literal(lb + 1, rb - lb - 1)) {
		*why = "not an IPv6 address between '[' and ']'";
		return NULL;
	}
	if (strncmp(rb + 1, ":/", 2)) {
		*why = "a host in brackets must be followed by ':/STORE:DATASET'";
		return NULL;
	}
	char *host = NULL;
	if (asprintf(&host, "%.*s%.*s", (int)(lb - s), s, (int)(rb - lb - 1), lb + 1) < 0) {
		*why = strerror(ENOMEM);
		return NULL;
	}
	*rest = rb + 2;
	return host;
}

/* Splits s into e; -1 with *why set for a malformed endpoint or no
 * memory, and then e holds nothing.  A host is NAME, USER@NAME, or an IPv6
 * address in brackets, [ADDR] or USER@[ADDR] (as scp and rsync write it:
 * "::1:/store:ds" also works, read up to the first ":/"). */
static int parse_endpoint(const char *s, endpoint_t *e, const char **why)
{
	memset(e, 0, sizeof(*e));
	*why = NULL;
	const char *p = s;
	const char *hostsep = strstr(s, ":/");
	size_t user = strcspn(s, "@:/[]");
	bool ok = true;
	if ((user == 0 && s[0] == '[') || (s[user] == '@' && s[user + 1] == '[')) {
		/* "[" first, or right after "USER@": a bracketed host */
		ok = (e->host = bracketed_host(s, &p, why)) != NULL;
	} else if (s[0] != '/' && hostsep) {
		e->host = strndup(s, hostsep - s);
		p = hostsep + 1;
		ok = e->host != NULL;
		if (ok && strpbrk(e->host, "[]")) {
			*why = "'[' or ']' in a host, other than around a whole IPv6 address";
			ok = false;
		}
	}
	if (ok && p[0] == '/') {
		const char *colon = strchr(p, ':');
		ok = colon && colon[1];
		if (ok) {
			e->store = strndup(p, colon - p);
			e->dataset = strdup(colon + 1);
			ok = e->store && e->dataset;
		}
	} else if (ok) {
		ok = !e->host && (e->dataset = strdup(p)) != NULL;
	}
	if (!ok)
		endpoint_free(e);
	return ok ? 0 : -1;
}

static char *shell_quote(const char *s)
{
	size_t n = 3;
	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 4 : 1;
	char *q = malloc(n), *o = q;
	if (!q)
		return NULL;
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

/* The program that reaches a remote destination: $CAIRN_SSH, else ssh. */
static const char *ssh_program(void)
{
	return getenv("CAIRN_SSH") ?: "ssh";
}

/* argv for running cairn VERB... on the destination side; NULL for no
 * memory.  Over ssh the remote command is one string, each word quoted,
 * as long as it needs to be (never cut short: a cut command line could
 * name another store or dataset). */
static char **dest_argv(const endpoint_t *d, const char *const *verb)
{
	static char self[4096];
	char **av = calloc(32, sizeof(char *));
	size_t n = 0;
	if (!av)
		return NULL;
	if (d->host) {
		const char *ssh = ssh_program();
		const char *remote = getenv("CAIRN_REMOTE") ?: "cairn";
		char *cmd = NULL;
		size_t cl = 0;
		FILE *f = open_memstream(&cmd, &cl);
		if (!f) {
			free(av);
			return NULL;
		}
		char *q = shell_quote(d->store);
		bool ok = q != NULL;
		fprintf(f, "%s -s %s", remote, q ? q : "");
		free(q);
		for (size_t i = 0; verb[i]; i++) {
			q = shell_quote(verb[i]);
			ok &= q != NULL;
			fprintf(f, " %s", q ? q : "");
			free(q);
		}
		if (fclose(f) || !ok) {
			free(cmd);
			free(av);
			return NULL;
		}
		char *prog = strdup(ssh), *host = strdup(d->host);
		if (!prog || !host) {
			free(prog);
			free(host);
			free(cmd);
			free(av);
			return NULL;
		}
		av[n++] = prog;
		av[n++] = host;
		av[n++] = cmd;
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
	if (!av)
		return;
	for (size_t i = 0; av[i]; i++)
		free(av[i]);
	free(av);
}

/* Spawns av with pipes: *to_child writes its stdin, *from_child (if not
 * NULL) reads its stdout; its stderr goes to errfd (-1: ours). */
static pid_t spawn_piped(char **av, int *to_child, int *from_child, int errfd)
{
	int in[2], out[2] = {-1, -1};
	if (!av) {
		errno = ENOMEM;
		return -1;
	}
	if (pipe2(in, O_CLOEXEC) < 0 || (from_child && pipe2(out, O_CLOEXEC) < 0))
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	if (from_child)
		posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	if (errfd >= 0)
		posix_spawn_file_actions_adddup2(&fa, errfd, 2);
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

/* A child's stderr goes to an unlinked temporary file, read once it has
 * exited: its reason for failing is then reported with ours, and a child
 * that writes much to stderr can never block on a pipe nobody reads. */
static int errfile_open(void)
{
	char path[] = "/tmp/cairn-sync-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}

/* The whole content of errfile fd (NUL terminated, malloc'ed); closes it. */
static char *errfile_read(int fd)
{
	size_t len = 0, cap = 1024;
	char *b = malloc(cap);
	if (fd >= 0 && lseek(fd, 0, SEEK_SET) == 0)
		for (ssize_t k; b; len += k) {
			if (len + 512 > cap) {
				char *p = realloc(b, cap *= 2);
				if (!p)
					break;
				b = p;
			}
			k = read(fd, b + len, cap - len - 1);
			if (k <= 0)
				break;
		}
	if (fd >= 0)
		close(fd);
	if (b)
		b[len] = 0;
	return b;
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
	int errfd;   /* its stderr */
	bool broken; /* the pipe to it failed: its reason is reported */
} remote_have_t;

static int have_local(const uint8_t (*d)[32], size_t n, uint8_t *present, void *arg)
{
	return cairn_chunks_present(arg, d, n, present);
}

/* A dry run asks without touching: it must leave both stores as they were. */
static int have_local_dry(const uint8_t (*d)[32], size_t n, uint8_t *present, void *arg)
{
	return cairn_chunks_peek(arg, d, n, present);
}

static int have_remote(const uint8_t (*d)[32], size_t n, uint8_t *present, void *arg)
{
	remote_have_t *h = arg;
	uint8_t hdr[4] = {n, n >> 8, n >> 16, n >> 24};
	if (write(h->to, hdr, 4) != 4 || write(h->to, d, n * 32) != (ssize_t)(n * 32)) {
		h->broken = true;
		return -EPIPE;
	}
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(h->from, present + got, n - got);
		if (k <= 0) {
			h->broken = true;
			return -EPIPE;
		}
		got += k;
	}
	return 0;
}

/* Why a child failed, from its stderr: its "cairn: VERB: " lines without
 * that prefix (joined by "; "), else its last line (ssh's, say), else how
 * it ended.  A line right after such a line, without the prefix, goes on
 * with its message (recv's "destination has snapshots (eg. X)" is followed
 * by "must destroy them to overwrite it", in zfs's words): it is part of
 * the reason, not passed on ahead of it.  With pass_on, its other lines
 * (recv -v) go to our stderr.  *kept is set when the receiver kept
 * resumable partial state.  Returns a malloc'ed string. */
static char *child_reason(const char *err, int status, bool pass_on, bool *kept)
{
	char *why = NULL, *last = NULL;
	size_t wl = 0;
	FILE *f = open_memstream(&why, &wl);
	if (!f)
		return strdup(err && *err ? err : "out of memory");
	bool any = false, in_reason = false;
	for (const char *l = err ? err : ""; *l;) {
		size_t n = strcspn(l, "\n");
		const char *verb = !strncmp(l, "cairn: ", 7) ? l + 7 : NULL;
		const char *colon = verb ? memchr(verb, ':', n - 7) : NULL;
		if (n && strstr(l, "partial state kept; resume with") &&
		    (size_t)(strstr(l, "partial state kept; resume with") - l) < n) {
			if (kept)
				*kept = true; /* sync resumes by itself */
			in_reason = false;
		} else if (colon && colon[1] == ' ') {
			fprintf(f, "%s%.*s", any ? "; " : "", (int)(n - (colon + 2 - l)), colon + 2);
			any = in_reason = true;
		} else if (n && in_reason && !verb) {
			fprintf(f, "; %.*s", (int)n, l); /* the message goes on */
		} else if (n) {
			in_reason = false;
			if (pass_on)
				fprintf(stderr, "%.*s\n", (int)n, l);
			free(last);
			last = strndup(l, n);
		}
		l += n + (l[n] == '\n');
	}
	if (!any && last)
		fprintf(f, "%s", last);
	else if (!any && status > 128 && status < 128 + 65)
		fprintf(f, "ended by signal %d (exit status %d)", status - 128, status);
	else if (!any)
		fprintf(f, "exited with status %d", status);
	fclose(f);
	free(last);
	return why;
}

/* Whether running sync again can get past a failed receive on the
 * destination: it was killed or stopped by a signal, its link cut (ssh
 * says 255), the stream stopped short, or the disk was full or failing.
 * A refusal (the target diverged, needs -F, is encrypted otherwise...) is
 * not: the same sync would be refused the same way, so it gets no "run
 * sync again". */
static bool recv_retryable(int status, const char *why)
{
	if (status > 128 || status == 255)
		return true;
	const char *transient[] = {"stream truncated", ": interrupted", strerror(EIO),
				   strerror(ENOSPC), strerror(EDQUOT)};
	for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
		if (why && strstr(why, transient[i]))
			return true;
	return false;
}

/* Runs `cairn VERB...` on the destination and returns its stdout (NUL
 * terminated, malloc'ed), its stderr in *err if err is not NULL (else it
 * is passed on), and its exit status. */
static int dest_output(const endpoint_t *d, const char *const *verb, char **out, char **err)
{
	char **av = dest_argv(d, verb);
	int to, from, efd = err ? errfile_open() : -1;
	pid_t pid = spawn_piped(av, &to, &from, efd);
	argv_free(av);
	*out = NULL;
	if (err)
		*err = NULL;
	if (pid < 0) {
		int e = -errno;
		if (efd >= 0)
			close(efd);
		return e;
	}
	close(to);
	size_t len = 0, cap = 0;
	char *buf = NULL;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			char *p = realloc(buf, cap);
			if (!p)
				break;
			buf = p;
		}
		ssize_t k = read(from, buf + len, cap - len - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += k;
	}
	close(from);
	if (buf)
		buf[len] = 0;
	*out = buf;
	int rc = wait_child(pid);
	if (err)
		*err = errfile_read(efd);
	return rc;
}

/* What the destination has: the guid of every snapshot under the
 * destination dataset, sorted, and for each the dataset that holds it,
 * as the rest of its name after the destination's ("" for the
 * destination itself, "/kid" for DEST/kid): a source dataset is matched
 * with the one its name maps to there, never with a copy elsewhere.
 * Bookmarks are kept apart: they tell which datasets there are copies of
 * the source's, but a receive cannot start from one (it has no data). */
typedef struct dest_have {
	uint64_t *guids;
	char **rels;
	char **names; /* the snapshots' full names there, "DEST/kid@s" */
	size_t n;
	uint64_t *bmguids;
	char **bmrels;
	size_t nbm;
	/* The datasets there: their guids and rels, in listing order. */
	uint64_t *dsguids;
	char **dsrels;
	size_t nds;
	/* The first snapshot or bookmark of the destination dataset itself,
	 * and the first of a dataset under it (NULL: none), to name in a
	 * refusal the dataset that does have them. */
	char *top_example;
	char *sub_example;
	char *top_snap; /* the first snapshot of the destination itself */
} dest_have_t;

typedef struct guid_rel {
	uint64_t guid;
	char *rel;
	char *name;
} guid_rel_t;

static int cmp_guid_rel(const void *a, const void *b)
{
	const guid_rel_t *x = a, *y = b;
	return x->guid < y->guid ? -1 : x->guid > y->guid;
}

static void dest_have_free(dest_have_t *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->rels[i]);
		free(h->names[i]);
	}
	for (size_t i = 0; i < h->nbm; i++)
		free(h->bmrels[i]);
	for (size_t i = 0; i < h->nds; i++)
		free(h->dsrels[i]);
	free(h->guids);
	free(h->rels);
	free(h->names);
	free(h->bmguids);
	free(h->bmrels);
	free(h->dsguids);
	free(h->dsrels);
	free(h->top_example);
	free(h->sub_example);
	free(h->top_snap);
	memset(h, 0, sizeof(*h));
}

/* A dataset line ("DEST/kid\tGUID") of the destination: kept in h's
 * dataset list (rels are matched with the source's datasets by guid, for
 * renames). */
static int dest_ds_add(dest_have_t *h, const char *line, size_t nl, size_t dl, uint64_t guid)
{
	uint64_t *g = realloc(h->dsguids, (h->nds + 1) * sizeof(*g));
	if (g)
		h->dsguids = g;
	char **rl = g ? realloc(h->dsrels, (h->nds + 1) * sizeof(*rl)) : NULL;
	if (!rl)
		return -ENOMEM;
	h->dsrels = rl;
	if (!(rl[h->nds] = strndup(line + dl, nl - dl)))
		return -ENOMEM;
	h->dsguids[h->nds++] = guid;
	return 0;
}

/* (guid, rel, name) triples for grv_add's growing vector. */
typedef struct grvec {
	guid_rel_t *v;
	size_t n, cap;
} grvec_t;

static int grv_add(grvec_t *g, uint64_t guid, const char *rel, size_t rl, const char *name,
		   size_t nl)
{
	if (g->n == g->cap) {
		guid_rel_t *q = realloc(g->v, (g->cap = g->cap ? g->cap * 2 : 64) * sizeof(*q));
		if (!q)
			return -ENOMEM;
		g->v = q;
	}
	if (!(g->v[g->n].rel = strndup(rel, rl)))
		return -ENOMEM;
	if (!(g->v[g->n].name = strndup(name, nl))) {
		free(g->v[g->n].rel);
		return -ENOMEM;
	}
	g->v[g->n++].guid = guid;
	return 0;
}

/* Moves g, sorted by guid, into the arrays *guids, *rels and (if not
 * NULL) *names (*n long); after an error r, only frees g.  Returns r, or
 * -ENOMEM. */
static int grv_finish(grvec_t *g, int r, uint64_t **guids, char ***rels, char ***names,
		      size_t *n)
{
	if (g->n)
		qsort(g->v, g->n, sizeof(*g->v), cmp_guid_rel);
	*guids = calloc(g->n + 1, sizeof(**guids));
	*rels = calloc(g->n + 1, sizeof(**rels));
	if (names && !(*names = calloc(g->n + 1, sizeof(**names))))
		r = -ENOMEM;
	if (!*guids || !*rels)
		r = -ENOMEM;
	for (size_t i = 0; i < g->n; i++) {
		if (r == 0) {
			(*guids)[i] = g->v[i].guid;
			(*rels)[i] = g->v[i].rel;
		} else {
			free(g->v[i].rel);
		}
		if (r == 0 && names)
			(*names)[i] = g->v[i].name;
		else
			free(g->v[i].name);
	}
	*n = r == 0 ? g->n : 0;
	free(g->v);
	return r;
}

/* Parses `list -H -p -t all -o name,guid` lines ("DEST/kid@s\tGUID",
 * "DEST/kid#b\tGUID", "DEST/kid\tGUID") of the destination dest into h. */
static int dest_have_parse(char *out, const char *dest, dest_have_t *h)
{
	size_t dl = strlen(dest);
	grvec_t snaps = {0}, bms = {0};
	int r = 0;
	for (char *line = out, *next; r == 0 && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char *tab = strchr(line, '\t');
		size_t nl = strcspn(line, "@#");
		if (tab && nl > (size_t)(tab - line) && (size_t)(tab - line) >= dl) {
			r = dest_ds_add(h, line, tab - line, dl, strtoull(tab + 1, NULL, 10));
			continue; /* a dataset line */
		}
		if (!tab || nl < dl || nl > (size_t)(tab - line))
			continue; /* not a snapshot or bookmark line */
		char **example = nl == dl ? &h->top_example : &h->sub_example;
		if (!*example && !(*example = strndup(line, tab - line))) {
			r = -ENOMEM;
			break;
		}
		if (nl == dl && line[nl] == '@' && !h->top_snap &&
		    !(h->top_snap = strndup(line, tab - line))) {
			r = -ENOMEM;
			break;
		}
		r = grv_add(line[nl] == '#' ? &bms : &snaps, strtoull(tab + 1, NULL, 10), line + dl,
			    nl - dl, line, tab - line);
	}
	r = grv_finish(&snaps, r, &h->guids, &h->rels, &h->names, &h->n);
	return grv_finish(&bms, r, &h->bmguids, &h->bmrels, NULL, &h->nbm);
}

/* What the destination dataset and its subtree hold (nothing if it does
 * not exist yet). */
static int dest_guids(const endpoint_t *d, dest_have_t *h)
{
	memset(h, 0, sizeof(*h));
	const char *verb[] = {"list", "-H", "-p", "-r", "-t", "all", "-o", "name,guid",
			      d->dataset, NULL};
	char *out, *err;
	int rc = dest_output(d, verb, &out, &err);
	if (rc < 0) {
		/* spawning failed: no ssh there, or $CAIRN_SSH is not one program */
		cli_err(d->dataset, "cannot list the destination: cannot run '%s': %s",
			d->host ? ssh_program() : "/proc/self/exe", strerror(-rc));
		free(err);
		return rc;
	}
	/* "does not exist" is expected for a first sync; anything else (no
	 * store there, ssh failing...) stops the sync with its reason. */
	if (rc && !(err && strstr(err, "dataset does not exist"))) {
		char *why = child_reason(err, rc, false, NULL);
		cli_err(d->dataset, "cannot list the destination: %s", why);
		free(why);
		free(err);
		free(out);
		return -EIO;
	}
	free(err);
	int r = dest_have_parse(rc ? NULL : out, d->dataset, h);
	free(out);
	if (r < 0)
		cli_err(d->dataset, "cannot list the destination: %s", strerror(-r));
	return r;
}

/* Each of the n rels that is old becomes rel.  0 or -ENOMEM. */
static int rels_rename(char **rels, size_t n, const char *old, const char *rel)
{
	for (size_t k = 0; k < n; k++) {
		if (strcmp(rels[k], old))
			continue;
		char *nr = strdup(rel);
		if (!nr)
			return -ENOMEM;
		free(rels[k]);
		rels[k] = nr;
	}
	return 0;
}

/* -R: a destination dataset with the guid of a source dataset whose name
 * maps elsewhere is that dataset, renamed on the source: the stream
 * renames it there (recv -R matches datasets by guid), so its snapshots
 * and bookmarks count for the name it is renamed to.  (Counted under its
 * old name, the renamed dataset was planned whole, and the full stream
 * was refused onto the dataset the receiver had just renamed, on every
 * run.)  Not when a dataset of the new name is there already: the
 * receiver's rename is in the way, and says so.  say (sync -n): the
 * destination dataset's name, and each rename is printed ("would rename
 * DEST/old to DEST/new").  Returns how many destination datasets are so
 * renamed, or <0. */
static int remap_renamed(cairn_store *st, const char *ds, dest_have_t *h, const char *say)
{
	if (!h->nds)
		return 0;
	cairn_list_spec spec = {.roots = &ds, .nroots = 1, .depth = -1,
				.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME,
				.fields = 1u << CAIRN_F_GUID};
	cairn_list *l;
	int r = cairn_list_open(st, &spec, &l);
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	size_t dl = strlen(ds);
	int nrenamed = 0;
	while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0)
		for (size_t i = 0; r >= 0 && i < b.n; i++) {
			const char *rel = b.name[i] + dl; /* "" or "/kid" */
			uint64_t g = b.field[CAIRN_F_GUID][i];
			if (!*rel)
				continue; /* the top always maps to the destination */
			size_t at = SIZE_MAX;
			bool taken = false;
			for (size_t k = 0; k < h->nds; k++) {
				if (h->dsguids[k] == g && strcmp(h->dsrels[k], rel))
					at = k;
				taken |= !strcmp(h->dsrels[k], rel);
			}
			if (at == SIZE_MAX || taken)
				continue;
			char *old = h->dsrels[at];
			if (r >= 0)
				r = rels_rename(h->rels, h->n, old, rel);
			if (r >= 0)
				r = rels_rename(h->bmrels, h->nbm, old, rel);
			char *nr = r >= 0 ? strdup(rel) : NULL;
			if (!nr)
				r = -ENOMEM;
			else {
				if (say)
					printf("would rename %s%s to %s%s\n", say, old, say, rel);
				free(old);
				h->dsrels[at] = nr;
				nrenamed++;
			}
		}
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	return r < 0 ? r : nrenamed;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether one of the nh (guids, rels) is in the dataset rel and its guid
 * in src (sorted, n long). */
static bool rel_holds_any(const uint64_t *guids, char *const *rels, size_t nh, const char *rel,
			  const uint64_t *src, size_t n)
{
	for (size_t i = 0; n && i < nh; i++)
		if (!strcmp(rels[i], rel) && bsearch(&guids[i], src, n, sizeof(*src), cmp_u64))
			return true;
	return false;
}

/* Whether the destination dataset k holds a snapshot or bookmark whose
 * guid is in src (sorted). */
static bool holds_any(const dest_have_t *h, size_t k, const uint64_t *src, size_t n)
{
	return rel_holds_any(h->guids, h->rels, h->n, h->dsrels[k], src, n) ||
	       rel_holds_any(h->bmguids, h->bmrels, h->nbm, h->dsrels[k], src, n);
}

/* The source's subtree under ds: its datasets' guids and names below ds
 * ("" or "/kid"), its snapshots' and bookmarks' guids, each sorted.  A
 * bookmark's guid is its snapshot's: the source keeps that point of its
 * history (and sends from it), if not the data. */
typedef struct src_sets {
	uint64_t *guids[2]; /* datasets', snapshots' and bookmarks' */
	char **rels;	    /* the datasets', by n[0] */
	size_t n[2];
} src_sets_t;

static void src_sets_free(src_sets_t *s)
{
	for (size_t i = 0; s->rels && i < s->n[0]; i++)
		free(s->rels[i]);
	free(s->rels);
	free(s->guids[0]);
	free(s->guids[1]);
}

static int src_sets_load(cairn_store *st, const char *ds, src_sets_t *s)
{
	memset(s, 0, sizeof(*s));
	cairn_list_spec spec = {.roots = &ds, .nroots = 1, .depth = -1,
				.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME |
					 CAIRN_TYPE_SNAPSHOT | CAIRN_TYPE_BOOKMARK,
				.fields = 1u << CAIRN_F_GUID};
	cairn_list *l;
	int r = cairn_list_open(st, &spec, &l);
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	size_t *n = s->n, cap[2] = {0, 0}, dl = strlen(ds);
	while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0)
		for (size_t i = 0; r >= 0 && i < b.n; i++) {
			int k = strpbrk(b.name[i], "@#") != NULL;
			if (n[k] == cap[k]) {
				uint64_t *p = realloc(s->guids[k], (cap[k] ? cap[k] * 2 : 64) * sizeof(*p));
				char **q = p && !k ? realloc(s->rels, (cap[k] ? cap[k] * 2 : 64) *
									  sizeof(*q))
						   : NULL;
				s->guids[k] = p ? p : s->guids[k];
				s->rels = q ? q : s->rels;
				if (!p || (!k && !q)) {
					r = -ENOMEM;
					break;
				}
				cap[k] = cap[k] ? cap[k] * 2 : 64;
			}
			if (!k && !(s->rels[n[k]] = strdup(b.name[i] + dl))) {
				r = -ENOMEM;
				break;
			}
			s->guids[k][n[k]++] = b.field[CAIRN_F_GUID][i];
		}
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	for (int k = 0; r >= 0 && k < 2; k++)
		if (n[k])
			qsort(s->guids[k], n[k], sizeof(*s->guids[k]), cmp_u64);
	if (r >= 0 && n[0])
		qsort(s->rels, n[0], sizeof(*s->rels), cmp_strp);
	if (r < 0)
		src_sets_free(s);
	return r < 0 ? r : 0;
}

/* -R -F: how many datasets under the destination the receiver of a -R -F
 * stream would destroy (as zfs recv -F does with an incremental -R
 * stream), or <0: those that are not the source's, by the receiver's
 * rules (lib/repl/recv.c, reconcile): a dataset is the source's when it
 * has the guid of a source dataset (renames included), or the name of
 * one (the stream receives into it by name), or holds a snapshot or
 * bookmark with the guid of a source snapshot (a copy made by a sync
 * without -R has a dataset guid of its own); one with such a dataset
 * below it stays too.  The stream carries the destroy even when
 * it has no snapshot to send: so sync sends one when the source's only
 * change is a destroyed dataset, instead of calling the destination up
 * to date and leaving it there.  say (sync -n): the destination
 * dataset's name, and each dataset so destroyed is printed ("would
 * destroy DEST/kid", as recv -n -v says it; not those below one).
 * *first (if not NULL): the first one's rel ("/kid", in h), or NULL. */
static int dest_extra(cairn_store *st, const char *ds, const dest_have_t *h, const char *say,
		      const char **first)
{
	if (first)
		*first = NULL;
	if (h->nds < 2)
		return 0; /* the top alone, or nothing */
	src_sets_t ss;
	int r = src_sets_load(st, ds, &ss);
	if (r < 0)
		return r;
	uint64_t **src = ss.guids;
	char **rels = ss.rels;
	size_t *n = ss.n;
	bool *kept = calloc(h->nds, sizeof(*kept));
	if (!kept)
		r = -ENOMEM;
	for (size_t k = 0; r >= 0 && k < h->nds; k++) {
		const char *rel = h->dsrels[k];
		kept[k] = !rel[0] || /* the top always maps */
			  (n[0] && bsearch(&h->dsguids[k], src[0], n[0], sizeof(*src[0]), cmp_u64)) ||
			  /* the stream receives into it by name (recv's reconcile keeps it) */
			  (n[0] && bsearch(&rel, rels, n[0], sizeof(*rels), cmp_strp)) ||
			  holds_any(h, k, src[1], n[1]);
	}
	int extra = 0;
	const char *last = NULL; /* the last one printed: those below it go with it */
	for (size_t k = 0; r >= 0 && k < h->nds; k++) {
		size_t rl = strlen(h->dsrels[k]);
		bool below = false;
		for (size_t j = 0; !kept[k] && !below && j < h->nds; j++)
			below = kept[j] && !strncmp(h->dsrels[j], h->dsrels[k], rl) &&
				h->dsrels[j][rl] == '/';
		if (kept[k] || below)
			continue;
		if (first && !extra)
			*first = h->dsrels[k];
		extra++;
		size_t ll = last ? strlen(last) : 0;
		if (say && !(last && !strncmp(h->dsrels[k], last, ll) && h->dsrels[k][ll] == '/')) {
			printf("would destroy %s%s\n", say, h->dsrels[k]);
			last = h->dsrels[k];
		}
	}
	free(kept);
	src_sets_free(&ss);
	return r < 0 ? r : extra;
}

/* Snapshot names "DS@S" by dataset, then snapshot ("d@b" before "d/k@a"). */
static int cmp_snapname(const void *a, const void *b)
{
	const unsigned char *x = *(const unsigned char *const *)a,
			    *y = *(const unsigned char *const *)b;
	while (*x && *x == *y)
		x++, y++;
	int cx = *x == '@' ? 1 : *x ? *x + 2 : 0, cy = *y == '@' ? 1 : *y ? *y + 2 : 0;
	return cx - cy;
}

/* Prints "would destroy NAME" for each of the n names, sorted. */
static void say_destroys(const char **names, size_t n)
{
	if (n)
		qsort(names, n, sizeof(*names), cmp_snapname);
	for (size_t i = 0; i < n; i++)
		printf("would destroy %s\n", names[i]);
}

/* The source's snapshots and bookmarks under ds: each one's dataset
 * ("" or "/kid"), guid and createtxg. */
typedef struct src_points {
	char **rels;
	uint64_t *guids, *txgs;
	bool *isbm;
	size_t n;
} src_points_t;

static void src_points_free(src_points_t *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->rels[i]);
	free(p->rels);
	free(p->guids);
	free(p->txgs);
	free(p->isbm);
	memset(p, 0, sizeof(*p));
}

static int src_points_add(src_points_t *p, size_t *cap, const char *rel, uint64_t g,
			  uint64_t txg, bool bm)
{
	if (p->n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		char **r = realloc(p->rels, c * sizeof(*r));
		p->rels = r ? r : p->rels;
		uint64_t *a = realloc(p->guids, c * sizeof(*a));
		p->guids = a ? a : p->guids;
		uint64_t *t = realloc(p->txgs, c * sizeof(*t));
		p->txgs = t ? t : p->txgs;
		bool *b = realloc(p->isbm, c * sizeof(*b));
		p->isbm = b ? b : p->isbm;
		if (!r || !a || !t || !b)
			return -ENOMEM;
		*cap = c;
	}
	p->rels[p->n] = strndup(rel, strcspn(rel, "@#"));
	if (!p->rels[p->n])
		return -ENOMEM;
	p->guids[p->n] = g;
	p->txgs[p->n] = txg;
	p->isbm[p->n++] = bm;
	return 0;
}

static int src_points_load(cairn_store *st, const char *ds, src_points_t *p)
{
	memset(p, 0, sizeof(*p));
	cairn_list_spec spec = {.roots = &ds, .nroots = 1, .depth = -1,
				.types = CAIRN_TYPE_SNAPSHOT | CAIRN_TYPE_BOOKMARK,
				.fields = 1u << CAIRN_F_GUID | 1u << CAIRN_F_CREATETXG};
	cairn_list *l;
	int r = cairn_list_open(st, &spec, &l);
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	size_t cap = 0, dl = strlen(ds);
	while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0)
		for (size_t i = 0; r >= 0 && i < b.n; i++)
			r = src_points_add(p, &cap, b.name[i] + dl, b.field[CAIRN_F_GUID][i],
					   b.field[CAIRN_F_CREATETXG][i], strchr(b.name[i], '#'));
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	if (r < 0)
		src_points_free(p);
	return r < 0 ? r : 0;
}

static bool has_guid(const dest_have_t *h, const char *rel, uint64_t g);

/* Whether sync's stream builds rel's first snapshot on g, which the
 * source has as a bookmark (not as a snapshot): rel's base is that
 * bookmark (its newest snapshot or bookmark whose snapshot the
 * destination dataset has, find_common) and rel has a newer snapshot. */
static bool builds_on_bookmark(const src_points_t *p, const dest_have_t *h, const char *rel,
			       uint64_t g)
{
	uint64_t newest = 0, base = 0, bg = 0;
	bool found = false, bm = false;
	for (size_t i = 0; i < p->n; i++) {
		if (strcmp(p->rels[i], rel))
			continue;
		if (!p->isbm[i] && p->txgs[i] > newest)
			newest = p->txgs[i];
		if (has_guid(h, rel, p->guids[i]) && (!found || p->txgs[i] > base)) {
			found = true;
			base = p->txgs[i];
			bg = p->guids[i];
			bm = p->isbm[i];
		}
	}
	return found && bm && bg == g && newest > base;
}

/* Whether a source snapshot (in any dataset) has guid g. */
static bool src_snapshot_has(const src_points_t *p, uint64_t g)
{
	for (size_t i = 0; i < p->n; i++)
		if (!p->isbm[i] && p->guids[i] == g)
			return true;
	return false;
}

/* Whether the dataset there at rel is the source's dataset ds+rel (the
 * same guid: a copy of it, which recv -R receives into by guid). */
static bool same_dataset(cairn_store *st, const char *ds, const dest_have_t *h, const char *rel)
{
	char name[1024];
	snprintf(name, sizeof(name), "%s%s", ds, rel);
	cairn_list_spec spec = {.roots = (const char *[]){name}, .nroots = 1, .depth = 0,
				.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME,
				.fields = 1u << CAIRN_F_GUID};
	cairn_list *l;
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	bool same = false;
	if (cairn_list_open(st, &spec, &l) < 0)
		return false;
	if (cairn_list_next(l, &cur, &b) > 0 && b.n)
		for (size_t k = 0; k < h->nds; k++)
			same |= h->dsguids[k] == b.field[CAIRN_F_GUID][0] && !strcmp(h->dsrels[k], rel);
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	return same;
}

/* -R: a snapshot there (its index in h) in a copy of a source child
 * (same_dataset) none of whose snapshots is one of the source child's
 * snapshots or bookmarks: the child's stream is full, and the receiver
 * refuses it onto a dataset with snapshots.  -1 when there is none; or
 * <0 - 1 (an error). */
static long child_unrelated(cairn_store *st, const char *ds, const dest_have_t *h)
{
	src_points_t sp;
	int r = src_points_load(st, ds, &sp);
	if (r < 0)
		return r - 1L;
	long at = -1;
	for (size_t i = 0; at < 0 && i < h->n; i++) {
		if (!h->rels[i][0])
			continue;
		bool child = false, common = false;
		for (size_t k = 0; k < sp.n && !common; k++) {
			if (strcmp(sp.rels[k], h->rels[i]))
				continue;
			child = true;
			common = has_guid(h, h->rels[i], sp.guids[k]);
		}
		if (child && !common && same_dataset(st, ds, h, h->rels[i]))
			at = (long)i;
	}
	src_points_free(&sp);
	return at;
}

/* -R -F: how many snapshots there the receiver of an incremental -R -F
 * stream would destroy (apply_snaplist in lib/repl/recv.c): those of a
 * destination dataset the stream receives into (a source dataset's name)
 * whose guid no source snapshot has (h lists snapshots only: bookmarks
 * stay).  So a snapshot destroyed on the source is destroyed there by the
 * next sync, as a destroyed dataset is, not only once a new snapshot
 * comes.  Not one the source kept a bookmark of that the dataset's
 * stream builds on (the receiver keeps it); one that the stream does not
 * build on goes.  say (sync -n): the destination dataset's name, and each
 * is printed ("would destroy DEST/kid@s", as recv -n -v says it: kid
 * the name remap_renamed gave it, as the receiver renames first).  Or <0. */
static int dest_stale(cairn_store *st, const char *ds, const dest_have_t *h, const char *say)
{
	src_sets_t ss;
	src_points_t sp;
	int r = src_sets_load(st, ds, &ss);
	if (r < 0)
		return r;
	r = src_points_load(st, ds, &sp);
	const char **names = say ? calloc(h->n + 1, sizeof(*names)) : NULL;
	if (r < 0 || (say && !names)) {
		free(names);
		src_sets_free(&ss);
		src_points_free(&sp);
		return r < 0 ? r : -ENOMEM;
	}
	int stale = 0;
	for (size_t i = 0; i < h->n; i++)
		if (ss.n[0] && bsearch(&h->rels[i], ss.rels, ss.n[0], sizeof(*ss.rels), cmp_strp) &&
		    !src_snapshot_has(&sp, h->guids[i]) &&
		    !builds_on_bookmark(&sp, h, h->rels[i], h->guids[i])) {
			char *nm = NULL;
			if (names && asprintf(&nm, "%s%s%s", say, h->rels[i],
					      strchr(h->names[i], '@')) < 0)
				r = -ENOMEM;
			else if (names)
				names[stale++] = nm;
			else
				stale++;
		}
	if (names && r == 0)
		say_destroys(names, stale);
	for (int i = 0; names && i < stale; i++)
		free((char *)names[i]);
	free(names);
	src_sets_free(&ss);
	src_points_free(&sp);
	return r < 0 ? r : stale;
}

/* Whether one of the n (guids sorted, rels) is guid g in dataset rel. */
static bool in_rel(const uint64_t *guids, char *const *rels, size_t n, const char *rel,
		   uint64_t g)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (guids[mid] < g)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && guids[lo] == g; lo++)
		if (!strcmp(rels[lo], rel))
			return true;
	return false;
}

/* Whether the destination dataset REL ("" or "/kid") has a snapshot of
 * guid g (a receive can start from it). */
static bool has_guid(const dest_have_t *h, const char *rel, uint64_t g)
{
	return in_rel(h->guids, h->rels, h->n, rel, g);
}

/* Whether it has g as a snapshot or as a bookmark: it is a copy of the
 * dataset g is from. */
static bool knows_guid(const dest_have_t *h, const char *rel, uint64_t g)
{
	return has_guid(h, rel, g) || in_rel(h->bmguids, h->bmrels, h->nbm, rel, g);
}

/* The common base a source bookmark gives (find_common): one whose
 * snapshot the destination dataset has is an incremental source (send
 * plans from it); one it has as a bookmark still shows it is a copy.
 * *bm ("#b") and *bmtxg: the top's newest such base so far. */
static int bookmark_row(const dest_have_t *h, const char *name, size_t dl, uint64_t g,
			uint64_t txg, char **bm, uint64_t *bmtxg, bool *related, bool *any_common)
{
	const char *hash = strchr(name, '#');
	char *rel = strndup(name + dl, hash - name - dl);
	if (!rel)
		return -ENOMEM;
	*any_common |= knows_guid(h, rel, g);
	bool top = !rel[0];
	free(rel);
	if (!top)
		return 0;
	*related |= knows_guid(h, "", g);
	if (!has_guid(h, "", g) || (*bm && txg < *bmtxg))
		return 0;
	char *c = strdup(hash);
	if (!c)
		return -ENOMEM;
	free(*bm);
	*bm = c;
	*bmtxg = txg;
	return 0;
}

/* Over the source dataset (and its subtree with -R): the top's newest
 * snapshot (*newest, "ds@s"), the top's newest snapshot the destination
 * has as a snapshot (*common, "@s"; else the newest bookmark whose
 * snapshot it has, "#b"), whether every dataset's newest
 * snapshot is already in the destination dataset its name maps to
 * (*current): the decision is per dataset, as send plans it; whether the
 * destination top has one of the top's snapshots as a snapshot or a
 * bookmark (*related: it is a copy of this source, if one a receive
 * cannot start from); and whether any dataset has one there at all
 * (*any_common: the destination is a copy of this source, even when its
 * top has no snapshot yet). */
static int find_common(cairn_store *st, const char *ds, bool recursive, const dest_have_t *h,
		       char **common, char **newest, bool *current, bool *related,
		       bool *any_common)
{
	cairn_list_spec spec = {.roots = &ds, .nroots = 1, .depth = recursive ? -1 : 1,
				.types = CAIRN_TYPE_SNAPSHOT | CAIRN_TYPE_BOOKMARK,
				.fields = 1u << CAIRN_F_GUID | 1u << CAIRN_F_CREATETXG};
	cairn_list *l;
	int r = cairn_list_open(st, &spec, &l);
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	*common = *newest = NULL;
	*current = true;
	*related = *any_common = false;
	size_t dl = strlen(ds);
	char *lastds = NULL, *bm = NULL; /* the top's bookmark base ("#b") */
	uint64_t lastguid = 0, bmtxg = 0;
	while (r >= 0 && (r = cairn_list_next(l, &cur, &b)) > 0)
		for (size_t i = 0; r >= 0 && i < b.n; i++) {
			const char *name = b.name[i];
			const char *at = strchr(name, '@');
			uint64_t g = b.field[CAIRN_F_GUID][i];
			if (!at) {
				r = bookmark_row(h, name, dl, g, b.field[CAIRN_F_CREATETXG][i], &bm,
						 &bmtxg, related, any_common);
				continue;
			}
			if (lastds && (strlen(lastds) != (size_t)(at - name) ||
				       strncmp(lastds, name, at - name))) {
				*current &= has_guid(h, lastds + dl, lastguid);
				free(lastds);
				lastds = NULL;
			}
			if (!lastds && !(lastds = strndup(name, at - name))) {
				r = -ENOMEM;
				break;
			}
			lastguid = g;
			*any_common |= knows_guid(h, lastds + dl, g);
			if ((size_t)(at - name) != dl || strncmp(name, ds, dl))
				continue; /* a child: only its newest matters */
			free(*newest);
			*newest = strdup(name);
			*related |= knows_guid(h, "", g);
			if (has_guid(h, "", g)) {
				free(*common);
				*common = strdup(at);
			}
		}
	if (lastds)
		*current &= has_guid(h, lastds + dl, lastguid);
	free(lastds);
	if (!*common) { /* no snapshot there: the newest bookmark is the base */
		*common = bm;
		bm = NULL;
	}
	free(bm);
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	return r;
}

static bool g_exact;

/* A size for people (1.2M), or with -p the exact byte count. */
static void size_str(char *b, size_t n, uint64_t bytes)
{
	if (g_exact)
		snprintf(b, n, "%llu bytes", (unsigned long long)bytes);
	else
		cli_size(b, n, bytes, false);
}

static void est(const char *kind, const char *from, const char *to, uint64_t bytes, void *arg)
{
	char b[32];
	size_str(b, sizeof(b), bytes);
	printf("would send %s%s%s: %s\n", to, from ? " from " : "", from ? from : "", b);
}

/* A host part that begins with '-' would reach ssh as an option. */
static bool bad_host(const endpoint_t *e)
{
	return e->host && (!e->host[0] || e->host[0] == '-');
}

/* One stream from here into `cairn recv ...` on the destination, sending
 * only the chunks the destination lacks.  label names what is sent
 * ("tank@7").  0 on success; otherwise a message naming the snapshot, the
 * destination dataset and the cause, from the side that failed (the
 * receiver's own reason, read from its stderr), and 1.  goes_on: a
 * failure that leaves no partial state may not be the end of this sync (a
 * resume's: sync sends again in the same run), so its message does not
 * tell the user to run sync again; 2 instead of 1 when it would have (a
 * retry may help), for the caller to say if sync stops after all. */
static int stream_to(cairn_store *st, const endpoint_t *dst, const char *snap, cairn_send_opts *o,
		     const char *const *rverb, const char *label, bool goes_on)
{
	remote_have_t rh = {-1, -1, -1, -1, false};
	cairn_store *dstore = NULL;
	int r = 0, child = 0, efd = -1;
	/* A far side that dies (or refuses have -n) must show up as EPIPE on
	 * our next write, reported with its reason, not kill sync silently;
	 * a dry run writes to have too. */
	signal(SIGPIPE, SIG_IGN);
	if (dst->host) {
		const char *verb[] = {"have", o->dry_run ? "-n" : NULL, NULL};
		char **av = dest_argv(dst, verb);
		rh.errfd = errfile_open();
		rh.pid = spawn_piped(av, &rh.to, &rh.from, rh.errfd);
		argv_free(av);
		o->have = have_remote;
		o->have_arg = &rh;
	} else {
		if (cairn_store_open(dst->store ? dst->store : g_cli.store_path, &dstore) < 0) {
			cli_err(dst->store, "cannot open the destination store");
			return 1;
		}
		o->have = o->dry_run ? have_local_dry : have_local;
		o->have_arg = dstore;
	}
	if (o->dry_run) {
		r = cairn_send(st, snap, o);
	} else {
		char **av = dest_argv(dst, rverb);
		efd = errfile_open();
		pid_t rpid = spawn_piped(av, &o->fd, NULL, efd);
		argv_free(av);
		r = rpid < 0 ? -errno : cairn_send(st, snap, o);
		if (rpid > 0) {
			close(o->fd);
			child = wait_child(rpid);
		}
	}
	int hstatus = 0;
	if (rh.pid > 0) {
		close(rh.to);
		close(rh.from);
		hstatus = wait_child(rh.pid);
	}
	char *herr = rh.errfd >= 0 ? errfile_read(rh.errfd) : NULL;
	char *rerr = efd >= 0 ? errfile_read(efd) : NULL;
	cairn_store_close(dstore);
	cli_progress_done();
	bool kept = false;
	char *rwhy = child_reason(rerr, child, true, &kept);
	int rc = 0;
	if (rh.broken && o->dry_run && hstatus == 2) {
		/* A usage error: a cairn there from before have -n.  Asking
		 * with plain have would touch chunks there, and trying again
		 * changes nothing. */
		cli_err(dst->dataset, "sending %s (dry run): its cairn does not take 'have -n' (an older "
				      "version?), which sync -n asks with so as to change nothing there; "
				      "update cairn there",
			label);
		rc = 1;
	} else if (rh.broken) {
		/* The chunk query died first: the link, or the far side. */
		char *hwhy = child_reason(herr, hstatus, false, NULL);
		cli_err(dst->dataset, "sending %s: the destination stopped answering which chunks it "
				      "has: %s%s",
			label, hwhy,
			kept	  ? "; its partial state is kept: run sync again to resume"
			: goes_on ? ""
				  : "; run sync again to retry");
		free(hwhy);
		rc = goes_on && !kept ? 2 : 1;
	} else if (r < 0 && (r != -EPIPE || child == 0)) {
		/* The sender failed by itself; the receiver only saw the stream stop. */
		const char *d = cairn_store_errdetail(st);
		size_t ll = strlen(label);
		if (d && !strncmp(d, label, ll) && !strncmp(d + ll, ": ", 2))
			d += ll + 2; /* the detail names the snapshot too: once is enough */
		/* A resume helps when the stream was cut or stopped; a failure
		 * in the source (a damaged chunk) would stop it again. */
		bool cut = r == -EINTR || r == -EPIPE || r == -EIO;
		cli_err(label, "%s%s%s", d && *d ? d : cairn_strerror(r),
			child ? "; the receive on the destination stopped with it" : "",
			!kept ? ""
			: cut ? "; the partial state is kept: run sync again to resume"
			      : "; the partial state is kept for the next sync");
		rc = 1;
	} else if (child != 0) {
		bool retry = !kept && recv_retryable(child, rwhy);
		cli_err(dst->dataset, "receiving %s: %s%s", label, rwhy,
			kept		      ? "; the partial state is kept: run sync again to resume"
			: retry && !goes_on ? "; run sync again to retry"
					      : "");
		rc = retry && goes_on ? 2 : 1;
	}
	free(rwhy);
	free(rerr);
	free(herr);
	return rc;
}

/* The first snapshot a resumed stream carries (names it in messages). */
static void first_to(const char *kind, const char *from, const char *to, uint64_t bytes, void *arg)
{
	char *first = arg;
	if (!first[0])
		snprintf(first, 600, "%s", to);
}

/* Plans the stream that resumes token tok (a dry run: *plan is then the
 * options to send it with, label the first snapshot it carries).  It is
 * planned as sync plans (each dataset to its own newest snapshot, from
 * what the destination has, h): that is how sync sent it, and planned as
 * send -R -I it may be refused (a descendant without the top's snapshot
 * name) or lack the group in flight, and the partial receive would be
 * thrown away.  Only when that plan does not continue the token (one
 * from a send -R -I | recv -s run by hand) is the token's own plan
 * tried.  0, or <0 with the reason in why (the sync plan's, when both
 * fail: it is the one sync would have used). */
static int plan_resumed(cairn_store *st, const char *tok, const dest_have_t *h,
			cairn_send_opts *plan, char *label, char *why, size_t whylen)
{
	static const uint64_t no_guids[1];
	/* Encrypted datasets replicate raw: the far side never needs a key. */
	*plan = (cairn_send_opts){.resume_token = tok, .raw = true, .dry_run = true,
				  .estimate = first_to, .arg = label,
				  .base_guids = h->n ? h->guids : no_guids, .nbase_guids = h->n,
				  .base_datasets = (const char *const *)h->rels};
	int r = cairn_send(st, NULL, plan);
	if (r >= 0)
		return r;
	const char *d = cairn_store_errdetail(st);
	snprintf(why, whylen, "%s", d && *d ? d : cairn_strerror(r));
	plan->base_guids = NULL;
	plan->nbase_guids = 0;
	plan->base_datasets = NULL;
	label[0] = 0;
	int own = cairn_send(st, NULL, plan);
	return own >= 0 ? own : r;
}

/* How many snapshots the destination has now that it did not have in h (both lists are sorted by guid); <0 if it cannot be
 * listed (said). */
static long dest_gained(const endpoint_t *dst, const dest_have_t *h)
{
	dest_have_t now;
	int r = dest_guids(dst, &now);
	if (r < 0) {
		dest_have_free(&now); /* what a failed parse had filled in */
		return r;
	}
	long n = 0;
	for (size_t i = 0, k = 0; i < now.n; i++) {
		while (k < h->n && h->guids[k] < now.guids[i])
			k++;
		n += k == h->n || h->guids[k] != now.guids[i];
	}
	dest_have_free(&now);
	return n;
}

/* After a failed resume that left no partial state there: says what
 * became of it before the rest is sent.  Either the receiver discarded
 * the state (the stream could not continue it), or it committed the
 * group it resumed, and maybe more, and stopped between groups, where
 * nothing is in flight and there is no state to keep. */
static void say_resume_outcome(const endpoint_t *dst, const dest_have_t *h)
{
	long gained = dest_gained(dst, h);
	if (gained < 0)
		return; /* said; the listing that follows fails the same way */
	if (gained > 0)
		fprintf(stderr, "cairn: sync: %s: the resumed receive committed %ld snapshot(s) "
				"before it stopped and left no partial state; sending the rest\n",
			dst->dataset, gained);
	else
		fprintf(stderr, "cairn: sync: %s: the partial receive was discarded there; sending "
				"again\n",
			dst->dataset);
}

/* A partial receive on the destination is finished first, from its token
 * (send -t).  A token this store can no longer plan (its snapshot or
 * source is gone, the token is damaged) is unusable: the partial state is
 * discarded and the ordinary sync that follows starts that group again.
 * Any other failure (the link was cut, either side died) keeps the
 * partial state, so the next sync resumes where this one stopped.
 * 1 = resumed, 0 = nothing to resume (or discarded), -1 = failed (said). */
static int resume_partial(cairn_store *st, const endpoint_t *dst, const dest_have_t *h,
			  bool force, bool verbose)
{
	const char *verb[] = {"get", "-H", "-o", "value", "receive_resume_token", dst->dataset, NULL};
	char *tok, *err;
	int rc = dest_output(dst, verb, &tok, &err);
	free(err);
	if (rc != 0 || !tok) {
		free(tok);
		return 0; /* no such dataset (yet); other failures show in the listing */
	}
	tok[strcspn(tok, "\n")] = 0;
	if (!tok[0] || !strcmp(tok, "-")) {
		free(tok);
		return 0;
	}
	char label[600] = "", why[512] = "";
	cairn_send_opts plan;
	int r = plan_resumed(st, tok, h, &plan, label, why, sizeof(why));
	if (r == CAIRN_ECORRUPT || r == -ENOENT || r == -EINVAL || r == -ESTALE) {
		/* Said even without -v: progress is being thrown away. */
		fprintf(stderr, "cairn: sync: %s: discarding the partial receive (%s)\n",
			dst->dataset, why);
		const char *av2[] = {"recv", "-A", dst->dataset, NULL};
		char *out;
		rc = dest_output(dst, av2, &out, &err);
		free(out);
		if (rc) {
			char *dwhy = child_reason(err, rc, false, NULL);
			cli_err(dst->dataset, "cannot discard the partial receive (its resume token "
					      "is unusable: %s): %s",
				why, dwhy);
			free(dwhy);
		}
		free(err);
		free(tok);
		return rc ? -1 : 0;
	}
	if (r < 0) {
		cli_err(dst->dataset, "resuming the partial receive: %s", why);
		free(tok);
		return -1;
	}
	cairn_send_opts o = {.resume_token = tok, .progress = cli_progress, .raw = true,
			     .base_guids = plan.base_guids, .nbase_guids = plan.nbase_guids,
			     .base_datasets = plan.base_datasets};
	const char *rv[] = {"recv", "-s", force ? "-F" : "-s", dst->dataset, NULL};
	char what[700];
	snprintf(what, sizeof(what), "%s (resumed)", label[0] ? label : "a partial receive");
	rc = stream_to(st, dst, NULL, &o, rv, what, true);
	free(tok);
	if (rc) {
		/* A resumed receive that can never complete (its source gone
		 * there, the group in flight changed here) discards its partial
		 * state; one cut between groups has none left either.  Then the
		 * sync goes on and sends what is missing. */
		char *now = NULL;
		int grc = dest_output(dst, verb, &now, &err);
		/* "-", or no dataset: the discard took back the one it made */
		bool gone = grc == 0 ? now && (now[strcspn(now, "\n")] = 0, !strcmp(now, "-"))
				     : grc > 0 && err && strstr(err, "dataset does not exist");
		free(err);
		free(now);
		if (!gone) {
			/* sync stops here after all: say what stream_to held back */
			if (rc == 2)
				cli_err(dst->dataset, "the partial receive is still there: run sync "
						      "again to resume");
			return -1;
		}
		say_resume_outcome(dst, h);
		return 1;
	}
	if (verbose)
		printf("resumed the partial receive into %s\n", dst->dataset);
	return 1;
}

/* Sends newest (from each dataset's newest snapshot the destination has)
 * into `recv -s` on the destination.  0, or 1 after printing the error. */
static int send_to(cairn_store *st, const endpoint_t *dst, const char *newest,
		   const dest_have_t *h, bool recursive, bool force, bool dry, bool verbose,
		   const char *common)
{
	/* raw: encrypted datasets replicate as stored (no key needed there).
	 * base_guids is set even when the destination has nothing: it is
	 * what makes each dataset go to its own newest snapshot; with
	 * base_datasets a guid counts only in the dataset it is in there. */
	static const uint64_t no_guids[1];
	cairn_send_opts o = {.intermediates = true, .recursive = recursive, .dry_run = dry,
			     .progress = cli_progress, .base_guids = h->n ? h->guids : no_guids,
			     .nbase_guids = h->n, .base_datasets = (const char *const *)h->rels,
			     .raw = true, .estimate = dry ? est : NULL};
	const char *verb[] = {"recv", "-s", force ? "-F" : "-s", verbose ? "-v" : "-s",
			      dst->dataset, NULL};
	int rc = stream_to(st, dst, newest, &o, verb, newest, false);
	if (!rc && (verbose || dry)) {
		char b[32];
		size_str(b, sizeof(b), o.bytes);
		printf("%s %s %s -> %s: %s in %llu snapshots, %llu chunks already there\n",
		       dry ? "would sync" : "synced", newest, common ? common : "(full)", dst->dataset,
		       b, (unsigned long long)o.snapshots, (unsigned long long)o.chunks_skipped);
	}
	return rc;
}

static int sync_endpoints(endpoint_t *srcp, endpoint_t *dstp, char **names, bool recursive,
			  bool force, bool dry, bool verbose);

int cmd_sync(int argc, char **argv)
{
	static const struct option lo[] = {{"dry-run", no_argument, 0, 'n'}, {0}};
	bool recursive = false, force = false, dry = false, verbose = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "RFvnp", lo, NULL)) != -1) {
		switch (ch) {
		case 'R': recursive = true; break;
		case 'F': force = true; break;
		case 'v': verbose = true; break;
		case 'p': g_exact = true; break; /* byte counts, not 1.2M */
		case 'n': dry = true; break;
		default: return cli_usage(u, NULL);
		}
	}
	if (optind + 2 != argc)
		return cli_usage(u, "expected SOURCE and DESTINATION");
	endpoint_t src, dst;
	const char *why;
	if (parse_endpoint(argv[optind], &src, &why) < 0)
		return cli_usage(u, "%s: bad endpoint%s%s", argv[optind], why ? ": " : "",
				 why ? why : "");
	if (parse_endpoint(argv[optind + 1], &dst, &why) < 0) {
		endpoint_free(&src);
		return cli_usage(u, "%s: bad endpoint%s%s", argv[optind + 1], why ? ": " : "",
				 why ? why : "");
	}
	int rc = sync_endpoints(&src, &dst, argv + optind, recursive, force, dry, verbose);
	endpoint_free(&src);
	endpoint_free(&dst);
	return rc;
}

/* sync between parsed endpoints; names[0] and names[1] are them as typed. */
static int sync_endpoints(endpoint_t *srcp, endpoint_t *dstp, char **names, bool recursive,
			  bool force, bool dry, bool verbose)
{
	endpoint_t src = *srcp, dst = *dstp; /* borrowed: the caller frees them */
	if (bad_host(&src) || bad_host(&dst)) {
		cli_err(bad_host(&src) ? names[0] : names[1],
			"host name must not be empty or begin with '-'");
		return 1;
	}
	if (src.host) {
		cli_err(names[0], "the source must be a local store (run sync on the source host)");
		return 1;
	}
	/* Checked here, not only by the far side: a name reaches its command
	 * line after the options, where "-r" would be read as one. */
	char why[160];
	for (int i = 0; i < 2; i++)
		if (cairn_name_check(i ? dst.dataset : src.dataset, false, why, sizeof(why)) < 0) {
			cli_err(names[i], "bad dataset name: %s", why);
			return 1;
		}
	if (src.store)
		g_cli.store_path = src.store;
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int rc = 0;
	dest_have_t h = {0};
	char *common = NULL, *newest = NULL;
	bool current = false, related = false, any_common = false;
	/* A resume is planned from what the destination has; after one, it
	 * has more, so it is asked again. */
	/* A dataset renamed on the source is renamed there by a stream,
	 * even one with no snapshot to send. */
	int renamed = 0, extra = 0, stale = 0;
	long unrel = -1;
	const char *gone = NULL; /* -F: a destination dataset a full stream would destroy */
	int r = dest_guids(&dst, &h);
	if (r >= 0 && recursive &&
	    (r = renamed = remap_renamed(st, src.dataset, &h, dry ? dst.dataset : NULL)) < 0) {
		cli_fail(st, src.dataset, r);
		r = -1;
	}
	if (r >= 0 && !dry)
		r = resume_partial(st, &dst, &h, force, verbose);
	if (r > 0) {
		dest_have_free(&h);
		r = dest_guids(&dst, &h);
		if (r >= 0 && recursive &&
		    (r = renamed = remap_renamed(st, src.dataset, &h, NULL)) < 0) {
			cli_fail(st, src.dataset, r);
			r = -1;
		}
	}
	if (r < 0)
		rc = 1; /* said */
	else if ((r = find_common(st, src.dataset, recursive, &h, &common, &newest, &current,
				  &related, &any_common)) < 0)
		rc = cli_fail(st, src.dataset, r);
	else if (!newest) {
		cli_err(src.dataset, "has no snapshots to sync");
		rc = 1;
	} else if (h.top_example && !related) {
		/* Named by one of them: the refusal is about this dataset's own
		 * snapshots or bookmarks, not its children's. */
		bool bm = strchr(h.top_example, '#') != NULL;
		cli_err(dst.dataset, "has %s (eg. %s) but none in common with %s; refusing "
				     "(destroy them or pick another destination)",
			bm ? "bookmarks" : "snapshots", h.top_example, src.dataset);
		rc = 1;
	} else if (h.top_snap && !common) {
		/* Only a bookmark there is the source's: the full stream that
		 * would follow is refused onto a dataset with snapshots. */
		cli_err(dst.dataset, "has snapshots (eg. %s) but none in common with %s, only "
				     "bookmarks, which a receive cannot start from; refusing "
				     "(destroy the snapshots or pick another destination)",
			h.top_snap, src.dataset);
		rc = 1;
	} else if (recursive && common &&
		   (unrel = child_unrelated(st, src.dataset, &h)) != -1) {
		if (unrel < -1)
			rc = cli_fail(st, src.dataset, (int)(unrel + 1));
		else
			cli_err(dst.dataset, "%s has snapshots but none in common with %s%s, whose "
					     "stream is full; refusing (destroy them)",
				h.names[unrel], src.dataset, h.rels[unrel]);
		rc = 1;
	} else if (recursive && h.sub_example && !any_common) {
		/* The top has none, but datasets under it do, and none of them
		 * is a copy of this source's: a -R stream into it is not a
		 * sync of a copy (-F would destroy them). */
		cli_err(dst.dataset, "has no snapshots of its own, but datasets under it %s (eg. %s), "
				     "none in common with %s; refusing (destroy them or pick "
				     "another destination)",
			strchr(h.sub_example, '#') ? "have bookmarks" : "do", h.sub_example,
			src.dataset);
		rc = 1;
	} else if (recursive && force && !common && h.nds > 1 &&
		   (extra = dest_extra(st, src.dataset, &h, NULL, &gone)) != 0) {
		/* The top gets a full stream, which destroys nothing (as in zfs);
		 * but once the top is in common, the next -R -F would destroy
		 * what is not the source's under it.  Not without being asked
		 * in so many words. */
		rc = extra < 0 ? cli_fail(st, src.dataset, extra) : 1;
		if (extra > 0)
			cli_err(dst.dataset, "has no snapshots of its own; once it has, sync -R -F "
						  "would destroy %s%s, which is not on %s; refusing "
						  "(destroy it there, or sync without -F)",
				dst.dataset, gone, src.dataset);
	} else if (recursive && force && ((current && renamed <= 0) || dry) &&
		   (extra = dest_extra(st, src.dataset, &h, dry ? dst.dataset : NULL, NULL)) < 0) {
		rc = cli_fail(st, src.dataset, extra);
	} else if (recursive && force && common && ((current && renamed <= 0 && !extra) || dry) &&
		   (stale = dest_stale(st, src.dataset, &h, dry ? dst.dataset : NULL)) < 0) {
		/* (a top not in common gets a full stream, which destroys none) */
		rc = cli_fail(st, src.dataset, stale);
	} else if (current && renamed <= 0 && extra == 0 && stale == 0) {
		if (verbose || dry)
			printf("%s is up to date (%s)\n", dst.dataset, strchr(newest, '@'));
	} else {
		rc = send_to(st, &dst, newest, &h, recursive, force, dry, verbose, common);
	}
	dest_have_free(&h);
	free(common);
	free(newest);
	cairn_store_close(st);
	return rc;
}
