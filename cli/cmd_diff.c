/* cmd_diff.c - cairn diff: what changed between two snapshots, in zfs
 * diff's output format. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static const char *u = "diff [-FHht] SNAPSHOT [SNAPSHOT|DATASET]";

typedef struct dout {
	const char *prefix; /* the dataset's source, like zfs's mountpoint */
	bool classify, scripted, timestamps, raw;
} dout_t;

/* zfs diff's escaping: printable ASCII other than space and backslash as
 * is, every other byte as \0ooo. */
static void put_escaped(const char *s, bool raw)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (raw || (*p > ' ' && *p != '\\' && *p < 0177))
			putchar(*p);
		else
			printf("\\%04o", *p);
	}
}

static void put_path(const dout_t *o, const char *path)
{
	put_escaped(o->prefix, o->raw);
	putchar('/');
	put_escaped(path, o->raw);
}

/* ls -F style type letters, as zfs diff -F prints them. */
static char type_letter(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFBLK: return 'B';
	case S_IFCHR: return 'C';
	case S_IFDIR: return '/';
	case S_IFIFO: return '|';
	case S_IFLNK: return '@';
	case S_IFSOCK: return '=';
	case S_IFREG: return 'F';
	default: return '?';
	}
}

static int print_change(const cairn_diff_change *c, void *arg)
{
	const dout_t *o = arg;
	if (o->timestamps) {
		long long s = c->ctime_ns / 1000000000, ns = c->ctime_ns % 1000000000;
		if (ns < 0)
			s--, ns += 1000000000;
		printf("%10lld.%09lld\t", s, ns);
	}
	printf("%c\t", c->kind);
	if (o->classify)
		printf("%c\t", type_letter(c->mode));
	put_path(o, c->path);
	if (c->kind == 'R') {
		fputs(o->scripted ? "\t" : " -> ", stdout);
		put_path(o, c->new_path);
	}
	if (c->kind == 'M' && c->link_delta)
		printf("\t(%+d)", c->link_delta);
	putchar('\n');
	return ferror(stdout) ? 1 : 0;
}

/* The dataset part of a name, for the source lookup. */
static char *dataset_of(const char *name)
{
	const char *at = strchr(name, '@');
	return at ? strndup(name, at - name) : strdup(name);
}

int cmd_diff(int argc, char **argv)
{
	static const struct option lo[] = {{"help", no_argument, 0, 1}, {0}};
	dout_t o = {0};
	int ch;
	while ((ch = getopt_long(argc, argv, "FHht", lo, NULL)) != -1) {
		if (ch == 'F')
			o.classify = true;
		else if (ch == 'H')
			o.scripted = true;
		else if (ch == 'h')
			o.raw = true;
		else if (ch == 't')
			o.timestamps = true;
		else if (ch == 1) {
			printf("usage: cairn %s\n"
			       "  -F  show each object's type (F / @ | = B C)\n"
			       "  -H  tab-separated renames, for scripts\n"
			       "  -h  print names as they are (no \\0ooo escapes)\n"
			       "  -t  show each object's inode change time first\n"
			       "Without a second argument, compares with the dataset's source as it is now.\n",
			       u);
			return 0;
		} else
			return cli_usage(u, NULL);
	}
	int n = argc - optind;
	if (n < 1 || n > 2)
		return cli_usage(u, n < 1 ? "expected a snapshot" : "too many arguments");
	const char *from = argv[optind];
	char *dsname = dataset_of(from);
	const char *to = n == 2 ? argv[optind + 1] : dsname;
	cairn_store *st;
	if (!dsname || cli_open(&st)) {
		free(dsname);
		return 1;
	}
	char *src = NULL;
	cairn_dataset_get(st, dsname, "source", &src, NULL);
	/* zfs prints paths under the mountpoint; cairn under the source. */
	if (src && (!strcmp(src, "none") || !strcmp(src, "/")))
		src[0] = 0;
	o.prefix = src ? src : "";
	cairn_diff_opts d = {.change = print_change, .arg = &o};
	int r = cairn_diff(st, from, to, &d);
	int rc = 0;
	if (r < 0)
		rc = cli_fail(st, from, r);
	else if (r > 0)
		rc = 1; /* stdout failed; main reports it */
	free(src);
	free(dsname);
	cairn_store_close(st);
	return rc;
}
