/* cmd_help.c - cairn help [VERB]: the verb's manual page, else its usage. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static const char *u = "help [VERB]";

static bool verb_name_ok(const char *v)
{
	return *v && strspn(v, "abcdefghijklmnopqrstuvwxyz-") == strlen(v);
}

/* man/cairn-VERB.8 in the source tree this binary was built in (build/
 * sits next to man/), for a cairn run from its build directory. */
static bool source_man_page(const char *verb, char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = 0;
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(exe, '/');
		if (!slash)
			return false;
		*slash = 0;
		snprintf(out, len, "%s/man/cairn-%s.8", exe, verb);
		if (access(out, R_OK) == 0)
			return true;
	}
	return false;
}

static bool installed_man_page(const char *verb)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "man -w cairn-%s >/dev/null 2>&1", verb);
	int r = system(cmd);
	return r != -1 && WIFEXITED(r) && WEXITSTATUS(r) == 0;
}

int cmd_help(int argc, char **argv)
{
	if (argc > 2 || (argc == 2 && argv[1][0] == '-'))
		return cli_usage(u, argc > 2 ? "one verb at a time" : NULL);
	if (argc == 1) {
		extern int cairn_main_usage(void);
		return cairn_main_usage();
	}
	const char *verb = argv[1];
	if (!verb_name_ok(verb)) {
		cli_err(verb, "not a verb");
		return EXIT_USAGE;
	}
	char page[PATH_MAX + 32], name[64];
	snprintf(name, sizeof(name), "cairn-%s", verb);
	fflush(stdout);
	if (installed_man_page(verb)) {
		execlp("man", "man", name, (char *)NULL);
	} else if (source_man_page(verb, page, sizeof(page))) {
		execlp("man", "man", "-l", page, (char *)NULL);
	}
	/* No manual page (or no man): the verb's own usage. */
	char *av[] = {(char *)verb, "--help", NULL};
	return cli_run_verb(2, av);
}
