/* sync_link.c - sync's link to the destination (see sync_link.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "sync_link.h"

extern char **environ;


void endpoint_free(endpoint_t *e)
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

int parse_endpoint(const char *s, endpoint_t *e, const char **why)
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

const char *ssh_program(void)
{
	return getenv("CAIRN_SSH") ?: "ssh";
}

char **dest_argv(const endpoint_t *d, const char *const *verb)
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

void argv_free(char **av)
{
	if (!av)
		return;
	for (size_t i = 0; av[i]; i++)
		free(av[i]);
	free(av);
}

pid_t spawn_piped(char **av, int *to_child, int *from_child, int errfd)
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
	/* sync ignores SIGPIPE (a far side that dies is an EPIPE it reports);
	 * the child gets the default back, as if run from a shell. */
	posix_spawnattr_t at;
	sigset_t def;
	posix_spawnattr_init(&at);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF);
	pid_t pid;
	int e = posix_spawnp(&pid, av[0], &fa, &at, av, environ);
	posix_spawnattr_destroy(&at);
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

int errfile_open(void)
{
	char path[] = "/tmp/cairn-sync-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}

char *errfile_read(int fd)
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

int wait_child(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- what the destination has ---- */


int have_local(const uint8_t (*d)[32], size_t n, uint8_t *present, void *arg)
{
	return cairn_chunks_present(arg, d, n, present);
}

int have_local_dry(const uint8_t (*d)[32], size_t n, uint8_t *present, void *arg)
{
	return cairn_chunks_peek(arg, d, n, present);
}

int have_remote(const uint8_t (*d)[32], size_t n, uint8_t *present, void *arg)
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

char *child_reason(const char *err, int status, bool pass_on, bool *kept)
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

bool recv_retryable(int status, const char *why)
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

int dest_output(const endpoint_t *d, const char *const *verb, char **out, char **err)
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

bool bad_host(const endpoint_t *e)
{
	return e->host && (!e->host[0] || e->host[0] == '-');
}
