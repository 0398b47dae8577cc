/* cmd_send.c - cairn send: a replication stream to stdout. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char *u =
	"send [-R [-s]] [-w] [-i SNAPSHOT|BOOKMARK | -I SNAPSHOT] [-n] [-v] [-P] SNAPSHOT\n"
	"       cairn send [-n] [-v] [-P] -t RECEIVE_RESUME_TOKEN\n"
	"  -s: with -R, skip (with a warning) a dataset that lacks the snapshot, and\n"
	"  everything below it, instead of refusing the send.\n"
	"  Long forms: --replicate (-R), --skip-missing (-s), --raw (-w), --dryrun (-n),\n"
	"  --verbose (-v), --parsable (-P), --resume (-t).  Accepted and ignored, for\n"
	"  zfs scripts: -L/--large-block, -c/--compressed, -e/--embed, -h/--holds,\n"
	"  -b/--backup, -p/--props, -D/--dedup (cairn streams carry their own chunking\n"
	"  and compression; -R streams carry properties).";

typedef struct eopts {
	bool parsable;
	bool verbose;
	FILE *out;
} eopts_t;

/* A dataset send -R leaves out: with -s, one that lacks the snapshot is
 * always worth a warning (the stream is not the whole subtree); one made
 * after the snapshot only with -v.  zfs's texts in zfs mode (there the
 * snapshot goes by its short name). */
static void skipped(const char *ds, const char *snap, bool missing, void *arg)
{
	const eopts_t *e = arg;
	char name[600];
	snprintf(name, sizeof(name), "%s%s%s", g_cli.zfs ? "" : ds, g_cli.zfs ? "" : "@", snap);
	if (missing)
		fprintf(stderr,
			"WARNING: skipping dataset %s and its children: snapshot %s does not exist\n",
			ds, name);
	else if (e->verbose)
		fprintf(stderr, "skipping dataset %s: snapshot %s does not exist\n", ds, name);
}

static void est(const char *kind, const char *from, const char *to, uint64_t bytes, void *arg)
{
	eopts_t *e = arg;
	char b[32];
	cli_size(b, sizeof(b), bytes, e->parsable);
	const char *short_from = from ? from + strcspn(from, "@#") : NULL;
	if (e->parsable) {
		if (from)
			fprintf(e->out, "%s\t%s\t%s\t%s\n", kind, short_from + 1, to, b);
		else
			fprintf(e->out, "%s\t%s\t%s\n", kind, to, b);
	} else if (from) {
		fprintf(e->out, "send from %s to %s estimated size is %s\n", short_from, to, b);
	} else {
		fprintf(e->out, "full send of %s estimated size is %s\n", to, b);
	}
}

/* zfs mode: send -R refused for a descendant without the snapshot.  The
 * library's detail is then "CHILD@S: no such snapshot, ..." (lib/repl/
 * send.c, place_descendant) with CHILD below snap's dataset; zfs
 * (libzfs_sendrecv.c) words that refusal as "cannot send DS@S
 * recursively: snapshot CHILD@S does not exist", not as its usual
 * "cannot open 'X'", and scripts match it.  Other -ENOENT details name
 * CHILD@S too ("CHILD@S: reading its index: a chunk is missing..."): the
 * snapshot is there, so they keep their own words.  0 when it printed
 * the refusal. */
static int zfs_recursive_refusal(cairn_store *st, const char *snap, int r)
{
	const char *d = cairn_store_errdetail(st), *at = strchr(snap, '@');
	size_t dslen = at ? (size_t)(at - snap) : 0;
	size_t objlen = d ? strcspn(d, ": ") : 0;
	if (r != -ENOENT || !at || !d || d[objlen] != ':' || strncmp(d, snap, dslen) ||
	    d[dslen] != '/' || objlen <= strlen(at) ||
	    strncmp(d + objlen - strlen(at), at, strlen(at)) ||
	    strncmp(d + objlen, ": no such snapshot,", 19))
		return -1;
	cli_progress_done();
	fprintf(stderr, "cannot send %s recursively: snapshot %.*s does not exist\n", snap,
		(int)objlen, d);
	return 0;
}

int cmd_send(int argc, char **argv)
{
	cairn_send_opts o = {.fd = 1, .progress = cli_progress};
	bool verbose = false;
	bool token_conflict = false; /* a flag zfs refuses beside -t */
	eopts_t e = {0};
	static const struct option lo[] = {
		{"replicate", no_argument, 0, 'R'},  {"dryrun", no_argument, 0, 'n'},
		{"verbose", no_argument, 0, 'v'},    {"parsable", no_argument, 0, 'P'},
		{"resume", required_argument, 0, 't'}, {"large-block", no_argument, 0, 'L'},
		{"compressed", no_argument, 0, 'c'}, {"embed", no_argument, 0, 'e'},
		{"holds", no_argument, 0, 'h'},      {"backup", no_argument, 0, 'b'},
		{"props", no_argument, 0, 'p'},      {"dedup", no_argument, 0, 'D'},
		{"raw", no_argument, 0, 'w'},        {"help", no_argument, 0, '?'},
		{"skip-missing", no_argument, 0, 's'},
		{0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "Rsi:I:nvPt:wLcehbpD", lo, NULL)) != -1) {
		switch (ch) {
		case 'R': o.recursive = true; break;
		case 's': o.skip_missing = true; break;
		case 'h':
			if (g_cli.help)
				return cli_usage(u, NULL); /* cairn send -h: help */
			token_conflict = true; /* -h, --holds */
			break;
		case 'b': case 'p':
			token_conflict = true;
			break; /* meaningless for cairn streams; see the usage */
		case 'L': case 'c': case 'e': case 'D':
			break; /* meaningless for cairn streams; see the usage */
		case 'i':
		case 'I':
			if (o.from)
				return cli_usage(u, "only one of -i and -I");
			o.from = optarg;
			o.intermediates = ch == 'I';
			break;
		case 'n': o.dry_run = true; break;
		case 'v': verbose = true; break;
		case 'P': e.parsable = true; verbose = true; break;
		case 't': o.resume_token = optarg; break;
		case 'w': o.raw = true; break;
		default: return cli_usage(u, NULL);
		}
	}
	/* zfs's rule: a token fixes what is sent, so the flags that would
	 * choose it (-R, -i/-I, -p, -h, -b) are refused beside -t rather than
	 * ignored. */
	if (o.resume_token && (token_conflict || o.recursive || o.from))
		return cli_usage(u, "invalid flags combined with -t");
	/* zfs's rule and meaning: only a replication stream has children to skip. */
	if (o.skip_missing && !o.recursive)
		return cli_usage(u, "skip-missing flag can only be used in conjunction with replicate "
				    "(-s needs -R)");
	if (o.resume_token ? optind != argc : optind + 1 != argc)
		return cli_usage(u, o.resume_token ? "no snapshot with -t" : "expected one snapshot");
	if (!o.dry_run && isatty(1)) {
		cli_err(NULL, "refusing to write a stream to a terminal (redirect it, or pipe it "
			      "into 'cairn recv')");
		return 1;
	}
	e.out = o.dry_run ? stdout : stderr;
	e.verbose = verbose;
	o.arg = &e;
	o.skipped = skipped;
	if (verbose)
		o.estimate = est;
	/* With -v (not -n), print the estimate first, like zfs send -v. */
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	const char *snap = o.resume_token ? NULL : argv[optind];
	int r = 0;
	if (verbose && !o.dry_run) {
		cairn_send_opts d = o;
		d.dry_run = true;
		r = cairn_send(st, snap, &d);
		if (r == 0) {
			char b[32];
			cli_size(b, sizeof(b), d.bytes, e.parsable);
			fprintf(stderr, e.parsable ? "size\t%s\n" : "total estimated size is %s\n", b);
		}
		o.estimate = NULL;
		o.skipped = NULL; /* the estimate said it already */
	}
	if (r == 0)
		r = cairn_send(st, snap, &o);
	int rc = 0;
	if (r < 0 && g_cli.zfs && o.recursive && snap && zfs_recursive_refusal(st, snap, r) == 0)
		rc = 1;
	else if (r < 0)
		rc = cli_fail(st, snap ? snap : "resume token", r);
	if (r == 0 && o.dry_run && verbose) {
		char b[32];
		cli_size(b, sizeof(b), o.bytes, e.parsable);
		printf(e.parsable ? "size\t%s\n" : "total estimated size is %s\n", b);
	}
	cairn_store_close(st);
	return rc;
}
