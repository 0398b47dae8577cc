/* keyprompt.c - see keyprompt.h. */
#include "keyprompt.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cli.h"

void keyprompt_wipe(uint8_t *buf, size_t len)
{
	OPENSSL_cleanse(buf, len);
}

/* A signal that came while the terminal's echo was off (tty_line). */
static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
	caught = sig;
}

/* One line from standard input, the newline dropped.  A byte at a time,
 * so the next line stays for the next read (change-key's second key). */
static int read_line(uint8_t *buf, size_t cap, size_t *len)
{
	size_t n = 0;
	int r = 0;
	for (;;) {
		char c;
		ssize_t k = read(0, &c, 1);
		if (k < 0 && errno == EINTR && !caught)
			continue;
		if (k < 0)
			r = -errno;
		if (k <= 0 || c == '\n')
			break;
		if (n == cap) {
			r = -E2BIG;
			continue;
		}
		buf[n++] = (uint8_t)c;
	}
	*len = n;
	return r;
}

/* One line from the terminal with echo off.  A signal that would end the
 * process (^C, ^\, a hangup, kill) ends the read instead: echo is turned
 * back on first and the signal then raised again, with the handler the
 * process had, so the user's terminal is not left without echo (as zfs
 * does at its passphrase prompt). */
static int tty_line(const char *prompt, uint8_t *buf, size_t cap, size_t *len)
{
	static const int sigs[] = {SIGINT, SIGQUIT, SIGHUP, SIGTERM};
	struct sigaction act = {.sa_handler = on_signal}, olds[4];
	struct termios old, quiet;
	if (tcgetattr(0, &old) < 0)
		return -errno;
	quiet = old;
	quiet.c_lflag &= ~(ECHO | ECHONL);
	fputs(prompt, stderr);
	fflush(stderr);
	caught = 0;
	sigemptyset(&act.sa_mask);
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &act, &olds[i]); /* no SA_RESTART: read stops */
	int r = tcsetattr(0, TCSAFLUSH, &quiet) < 0 ? -errno : read_line(buf, cap, len);
	tcsetattr(0, TCSAFLUSH, &old);
	fputc('\n', stderr);
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &olds[i], NULL);
	if (caught) {
		OPENSSL_cleanse(buf, cap);
		raise(caught);
		r = -EINTR; /* a handler of the process's own returned */
	}
	return r;
}

static int read_all_stdin(uint8_t *buf, size_t cap, size_t *len)
{
	size_t n = 0;
	for (;;) {
		ssize_t k = read(0, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += k;
		if (n == cap)
			break;
	}
	*len = n;
	return 0;
}

/* A line longer than the buffer is E2BIG, which strerror calls "Argument
 * list too long": say what the limits are instead. */
static void key_read_err(const char *root, const char *what, int r)
{
	if (r == -E2BIG)
		cli_err(root, "%s: too long (a passphrase is 8 to 512 bytes, a hex key 64 digits)",
			what);
	else
		cli_err(root, "%s: %s", what, strerror(-r));
}

int keyprompt_read(const char *root, const char *fmt, bool confirm, uint8_t buf[KEYPROMPT_MAX],
		   size_t *len)
{
	*len = 0;
	if (!isatty(0)) {
		/* A passphrase or hex key is a line (as zfs reads it), so a
		 * pipe can carry change-key's old and new key; raw bytes may
		 * hold a newline and take the whole input. */
		int r = strcmp(fmt, "raw") ? read_line(buf, KEYPROMPT_MAX, len)
					   : read_all_stdin(buf, KEYPROMPT_MAX, len);
		if (r < 0) {
			key_read_err(root, "reading the key from standard input", r);
			return 1;
		}
		return 0;
	}
	if (!strcmp(fmt, "raw")) {
		cli_err(root, "a raw key cannot be typed; use keylocation=file:///PATH");
		return 1;
	}
	char prompt[512];
	snprintf(prompt, sizeof(prompt), "Enter %s for '%s': ",
		 strcmp(fmt, "hex") ? "passphrase" : "hex key", root);
	int r = tty_line(prompt, buf, KEYPROMPT_MAX, len);
	if (r == 0 && confirm) {
		uint8_t again[KEYPROMPT_MAX];
		size_t alen = 0;
		snprintf(prompt, sizeof(prompt), "Re-enter %s for '%s': ",
			 strcmp(fmt, "hex") ? "passphrase" : "hex key", root);
		r = tty_line(prompt, again, sizeof(again), &alen);
		if (r == 0 && (alen != *len || memcmp(again, buf, alen))) {
			keyprompt_wipe(again, sizeof(again));
			keyprompt_wipe(buf, KEYPROMPT_MAX);
			cli_err(root, "the two entries do not match");
			return 1;
		}
		keyprompt_wipe(again, sizeof(again));
	}
	if (r < 0) {
		keyprompt_wipe(buf, KEYPROMPT_MAX);
		key_read_err(root, "reading the key", r);
		return 1;
	}
	return 0;
}

const char *keyprompt_prop(const cairn_prop *props, size_t n, const char *name)
{
	const char *v = NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(props[i].name, name))
			v = props[i].value;
	return v;
}

int keyprompt_for(const char *root, const char *fmt, const char *loc, bool confirm,
		  uint8_t buf[KEYPROMPT_MAX], cairn_key_opts *ko)
{
	if (strcmp(loc, "prompt"))
		return 0;
	if (keyprompt_read(root, fmt, confirm, buf, &ko->secret_len))
		return 1;
	ko->secret = buf;
	return 0;
}

static int keyroots_check_args(int argc, bool all, bool recursive, const char *usage)
{
	if (all ? optind != argc : optind + 1 != argc)
		return cli_usage(usage, all ? "-a takes no dataset" : "expected one dataset");
	if (all && recursive)
		return cli_usage(usage, "-a and -r exclude each other");
	return 0;
}

static int keyroots_run(cairn_store *st, const char *ds, bool all, bool recursive,
			keyroot_fn fn, void *arg, const char *verb)
{
	if (!all && !recursive)
		return fn(st, ds, false, arg) == 1;
	char **roots = NULL;
	size_t n = 0, done = 0, failed = 0;
	int r = cairn_encryption_roots(st, all ? NULL : ds, &roots, &n);
	if (r < 0)
		return cli_fail(st, all ? NULL : ds, r);
	for (size_t i = 0; i < n; i++) {
		int k = fn(st, roots[i], true, arg);
		if (k == 1)
			failed++;
		else if (k == 0)
			done++;
		free(roots[i]);
	}
	free(roots);
	printf("%zu / %zu keys %s\n", done, done + failed, verb);
	return failed ? 1 : 0;
}

int keyroots_cmd(int argc, char **argv, bool all, bool recursive, const char *usage,
		 keyroot_fn fn, void *arg, const char *verb)
{
	int rc = keyroots_check_args(argc, all, recursive, usage);
	cairn_store *st;
	if (rc || cli_open(&st))
		return rc ? rc : 1;
	rc = keyroots_run(st, all ? NULL : argv[optind], all, recursive, fn, arg, verb);
	cairn_store_close(st);
	return rc;
}
