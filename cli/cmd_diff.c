/* cmd_diff.c - cairn diff: what changed between two snapshots, in zfs
 * diff's output format, or as one JSON document. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "props.h"

static const char *u = "diff [-FHhpt] [-j|--json [--json-int]] SNAPSHOT [SNAPSHOT|DATASET]";

typedef struct dout {
	const char *prefix; /* the dataset's source, like zfs's mountpoint */
	bool classify, scripted, timestamps, raw, json, json_int;
	bool first; /* JSON: nothing written yet (no head, no comma) */
	char *path; /* JSON: a path as the text output would write it */
	size_t pathcap;
} dout_t;

/* zfs diff's escaping: printable ASCII other than space and backslash as
 * is, every other byte as \0ooo. */
static void put_escaped(FILE *f, const char *s, bool raw)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (raw || (*p > ' ' && *p != '\\' && *p < 0177))
			fputc(*p, f);
		else
			fprintf(f, "\\%04o", *p);
	}
}

static void put_path(FILE *f, const dout_t *o, const char *path)
{
	put_escaped(f, o->prefix, o->raw);
	fputc('/', f);
	put_escaped(f, path, o->raw);
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

/* An inode change time as zfs diff -t writes it: seconds.nanoseconds. */
static void format_ctime(char out[32], int64_t ctime_ns)
{
	long long s = ctime_ns / 1000000000, ns = ctime_ns % 1000000000;
	if (ns < 0)
		s--, ns += 1000000000;
	snprintf(out, 32, "%lld.%09lld", s, ns);
}

static int print_line(const cairn_diff_change *c, const dout_t *o)
{
	if (o->timestamps) {
		char t[32];
		format_ctime(t, c->ctime_ns);
		printf("%20s\t", t);
	}
	printf("%c\t", c->kind);
	if (o->classify)
		printf("%c\t", type_letter(c->mode));
	put_path(stdout, o, c->path);
	if (c->kind == 'R') {
		fputs(o->scripted ? "\t" : " -> ", stdout);
		put_path(stdout, o, c->new_path);
	}
	if (c->kind == 'M' && c->link_delta)
		printf("\t(%+d)", c->link_delta);
	putchar('\n');
	return 0;
}

/* A path as the text output would write it (escaped unless -h), then as
 * a JSON string: with the escapes, any name survives the trip; with -h a
 * name that is not UTF-8 gets U+FFFD, since JSON strings cannot hold it. */
static int json_path(dout_t *o, const char *key, const char *path)
{
	free(o->path); /* open_memstream makes a new buffer each time */
	o->path = NULL;
	FILE *m = open_memstream(&o->path, &o->pathcap);
	if (!m)
		return -1;
	put_path(m, o, path);
	if (fclose(m))
		return -1;
	printf(",\"%s\":", key);
	json_str(stdout, o->path);
	return 0;
}

/* One change as a JSON object.  Every field is always there (the type
 * letter too, which the text output shows only with -F); numbers are
 * strings unless --json-int, as in the other listings' documents. */
static int print_json(const cairn_diff_change *c, dout_t *o)
{
	char t[32];
	format_ctime(t, c->ctime_ns);
	if (o->first)
		json_begin_array("diff", "changes");
	printf("%s{\"change\":\"%c\",\"type\":\"%c\"", o->first ? "" : ",", c->kind,
	       type_letter(c->mode));
	o->first = false;
	if (json_path(o, "path", c->path) < 0)
		return -1;
	if (c->kind == 'R' && json_path(o, "new_path", c->new_path) < 0)
		return -1;
	printf(o->json_int ? ",\"ctime\":%s,\"link_delta\":%d}" : ",\"ctime\":\"%s\",\"link_delta\":\"%d\"}",
	       t, c->kind == 'M' ? c->link_delta : 0);
	return 0;
}

static int print_change(const cairn_diff_change *c, void *arg)
{
	dout_t *o = arg;
	if ((o->json ? print_json(c, o) : print_line(c, o)) < 0)
		return -ENOMEM;
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
	static const struct option lo[] = {{"help", no_argument, 0, 1},
					   {"json", no_argument, 0, 'j'},
					   {"json-int", no_argument, 0, 'I'},
					   {0}};
	dout_t o = {.first = true};
	int ch;
	while ((ch = getopt_long(argc, argv, "FHhjpt", lo, NULL)) != -1) {
		if (ch == 'F')
			o.classify = true;
		else if (ch == 'H')
			o.scripted = true;
		else if (ch == 'h')
			o.raw = true;
		else if (ch == 'j')
			o.json = true;
		else if (ch == 'I')
			o.json_int = true;
		else if (ch == 'p')
			; /* every number diff prints is already exact */
		else if (ch == 't')
			o.timestamps = true;
		else if (ch == 1) {
			printf("usage: cairn %s\n"
			       "  -F  show each object's type (F / @ | = B C)\n"
			       "  -H  tab-separated renames, for scripts\n"
			       "  -h  print names as they are (no \\0ooo escapes)\n"
			       "  -p  exact numbers (always so: accepted as by the other listings)\n"
			       "  -t  show each object's inode change time first\n"
			       "  -j, --json  one JSON document with every field of every change\n"
			       "  --json-int  with -j, numbers as JSON numbers instead of strings\n"
			       "Without a second argument, compares with the dataset's source as it is now.\n",
			       u);
			return 0;
		} else
			return cli_usage(u, NULL);
	}
	if (o.json_int && !o.json)
		return cli_usage(u, "--json-int needs -j");
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
	if (o.json && r == 0) {
		/* The head waits for the first change, so an error before
		 * it leaves stdout empty rather than holding half a document. */
		if (o.first)
			json_begin_array("diff", "changes");
		fputs("]}\n", stdout);
	}
	int rc = 0;
	if (r < 0)
		rc = cli_fail(st, from, r);
	else if (r > 0)
		rc = 1; /* stdout failed; main reports it */
	free(o.path);
	free(src);
	free(dsname);
	cairn_store_close(st);
	return rc;
}
