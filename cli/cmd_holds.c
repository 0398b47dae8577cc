/* cmd_holds.c - cairn holds: NAME, TAG, TIMESTAMP of each hold. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "props.h"

static const char *u = "holds [-r] [-H] [-p] [-j|--json [--json-int]] SNAPSHOT...";

/* A table row, kept until every row is known: the columns are as wide
 * as their longest value (a restore's temporary tag is long). */
typedef struct hrow {
	char *snap, *tag, *ts;
	int pid;
} hrow_t;

typedef struct hopts {
	bool scripted, exact, json, json_int;
	char *open_snap; /* -j: the snapshot whose object is open (a copy) */
	hrow_t *rows;    /* the table (not -H, not -j) */
	size_t nrows, caprows;
} hopts_t;

/* -j: a snapshot's object opens at its first hold and closes at the next
 * snapshot's (or the end): snapshots without holds print nothing, as in
 * the table. */
static void json_close_snap(hopts_t *o)
{
	if (o->open_snap)
		fputs("}}", stdout);
	free(o->open_snap);
	o->open_snap = NULL;
}

static int json_hold(hopts_t *o, const char *snap, const char *tag, const char *ts, int64_t t,
		      int pid)
{
	if (!o->open_snap || strcmp(o->open_snap, snap)) {
		json_close_snap(o);
		if (!(o->open_snap = strdup(snap)))
			return -ENOMEM;
		json_object_sep();
		json_str(stdout, snap);
		fputs(":{\"name\":", stdout);
		json_str(stdout, snap);
		fputs(",\"holds\":{", stdout);
	} else {
		putchar(',');
	}
	json_str(stdout, tag);
	fputs(":{\"timestamp\":", stdout);
	if (o->json_int)
		printf("%lld", (long long)t);
	else
		json_str(stdout, ts);
	printf(",\"temporary\":%s", pid ? "true" : "false");
	if (pid)
		printf(o->json_int ? ",\"pid\":%d" : ",\"pid\":\"%d\"", pid);
	putchar('}');
	return 0;
}

static int keep_row(hopts_t *o, const char *snap, const char *tag, const char *ts, int pid)
{
	if (o->nrows == o->caprows) {
		size_t n = o->caprows ? o->caprows * 2 : 16;
		hrow_t *p = realloc(o->rows, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		o->rows = p;
		o->caprows = n;
	}
	hrow_t *r = &o->rows[o->nrows];
	*r = (hrow_t){.snap = strdup(snap), .tag = strdup(tag), .ts = strdup(ts), .pid = pid};
	if (!r->snap || !r->tag || !r->ts) {
		free(r->snap);
		free(r->tag);
		free(r->ts);
		return -ENOMEM;
	}
	o->nrows++;
	return 0;
}

static size_t widest(size_t w, const char *s)
{
	size_t n = strlen(s);
	return n > w ? n : w;
}

/* The table, its columns sized from the rows kept (keep_row). */
static void print_table(hopts_t *o)
{
	size_t wname = strlen("NAME"), wtag = strlen("TAG");
	for (size_t i = 0; i < o->nrows; i++) {
		wname = widest(wname, o->rows[i].snap);
		wtag = widest(wtag, o->rows[i].tag);
	}
	printf("%-*s  %-*s  %s\n", (int)wname, "NAME", (int)wtag, "TAG", "TIMESTAMP");
	for (size_t i = 0; i < o->nrows; i++) {
		hrow_t *r = &o->rows[i];
		printf("%-*s  %-*s  %s", (int)wname, r->snap, (int)wtag, r->tag, r->ts);
		if (r->pid)
			printf("  (temporary, pid %d)", r->pid);
		putchar('\n');
		free(r->snap);
		free(r->tag);
		free(r->ts);
	}
	free(o->rows);
}

static int print_hold(const char *snap, const char *tag, int64_t t, int pid, void *arg)
{
	hopts_t *o = arg;
	char ts[64], owner[64] = "";
	if (o->exact) {
		snprintf(ts, sizeof(ts), "%lld", (long long)t);
	} else {
		time_t tt = t;
		struct tm tm;
		localtime_r(&tt, &tm);
		strftime(ts, sizeof(ts), "%a %b %e %H:%M %Y", &tm);
	}
	if (o->json)
		return json_hold(o, snap, tag, ts, t, pid);
	if (!o->scripted)
		return keep_row(o, snap, tag, ts, pid);
	if (pid)
		snprintf(owner, sizeof(owner), "\t(temporary, pid %d)", pid);
	printf("%s\t%s\t%s%s\n", snap, tag, ts, owner);
	return 0;
}

int cmd_holds(int argc, char **argv)
{
	hopts_t o = {0};
	bool recursive = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "rHpjh", json_listing_opts, NULL)) != -1) {
		switch (ch) {
		case 'r': recursive = true; break;
		case 'H': o.scripted = true; break;
		case 'p': o.exact = true; break;
		case 'j': o.json = true; break;
		case 'I': o.json_int = true; break;
		case 'h': printf("usage: cairn %s\n", u); return 0;
		default: return cli_usage(u, NULL);
		}
	}
	if (optind >= argc)
		return cli_usage(u, "expected at least one snapshot");
	if (o.json_int && !o.json)
		return cli_usage(u, "--json-int needs -j");
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	if (o.json)
		json_begin_section("holds", "snapshots");
	int rc = 0;
	for (int i = optind; i < argc && !rc; i++) {
		char **names = NULL;
		size_t n = 0;
		int r;
		if (recursive) {
			r = cairn_snapshot_expand(st, argv[i], &names, &n);
		} else {
			names = malloc(sizeof(char *));
			r = names && (names[0] = strdup(argv[i])) ? 0 : -ENOMEM;
			n = r == 0;
		}
		for (size_t k = 0; r == 0 && k < n; k++)
			r = cairn_holds_iter(st, names[k], print_hold, &o);
		if (r < 0)
			rc = cli_fail(st, argv[i], r);
		json_close_snap(&o);
		for (size_t k = 0; k < n; k++)
			free(names[k]);
		free(names);
	}
	if (o.json)
		json_end();
	else if (!o.scripted)
		print_table(&o);
	cairn_store_close(st);
	return rc;
}
