/* cmd_send.c - cairn send: a replication stream to stdout. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char *u = "send [-R] [-w] [-i SNAPSHOT|BOOKMARK | -I SNAPSHOT] [-n] [-v] [-P] SNAPSHOT\n"
		       "       cairn send [-n] [-v] [-P] -t RECEIVE_RESUME_TOKEN";

typedef struct eopts {
	bool parsable;
	FILE *out;
} eopts_t;

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

int cmd_send(int argc, char **argv)
{
	cairn_send_opts o = {.fd = 1, .progress = cli_progress};
	bool verbose = false;
	eopts_t e = {0};
	int ch;
	while ((ch = getopt(argc, argv, "Ri:I:nvPt:w")) != -1) {
		switch (ch) {
		case 'R': o.recursive = true; break;
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
	if (o.resume_token ? optind != argc : optind + 1 != argc)
		return cli_usage(u, o.resume_token ? "no snapshot with -t" : "expected one snapshot");
	if (!o.dry_run && isatty(1)) {
		cli_err(NULL, "refusing to write a stream to a terminal (redirect it, or pipe it "
			      "into 'cairn recv')");
		return 1;
	}
	e.out = o.dry_run ? stdout : stderr;
	if (verbose) {
		o.estimate = est;
		o.arg = &e;
	}
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
	}
	if (r == 0)
		r = cairn_send(st, snap, &o);
	int rc = r < 0 ? cli_fail(st, snap ? snap : "resume token", r) : 0;
	if (r == 0 && o.dry_run && verbose) {
		char b[32];
		cli_size(b, sizeof(b), o.bytes, e.parsable);
		printf(e.parsable ? "size\t%s\n" : "total estimated size is %s\n", b);
	}
	cairn_store_close(st);
	return rc;
}
