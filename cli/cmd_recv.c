/* cmd_recv.c - cairn recv: a replication stream from stdin. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char *u =
	"recv [-F] [-n|--dryrun] [-s] [-u] [-v|--verbose] [-d | -e] [-o PROP=VALUE]...\n"
	"       [-x PROP]... DATASET\n"
	"       cairn recv -A DATASET";

static void item(const char *what, const char *name, void *arg)
{
	cli_progress_done();
	fprintf(stderr, "%s %s\n", what, name);
}

/* -nv: what would happen goes to stdout, as zfs prints it. */
static void dry_item(const char *what, const char *name, void *arg)
{
	cli_progress_done();
	printf("%s %s\n", what, name);
	fflush(stdout);
}

int cmd_recv(int argc, char **argv)
{
	cairn_recv_opts o = {.fd = 0, .progress = cli_progress};
	cairn_prop props[64];
	const char *excl[64];
	bool verbose = false, abort_partial = false;
	static const struct option lo[] = {{"dryrun", no_argument, NULL, 'n'},
					   {"verbose", no_argument, NULL, 'v'},
					   {NULL, 0, NULL, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "FnsuvdeAo:x:", lo, NULL)) != -1) {
		switch (ch) {
		case 'F': o.force = true; break;
		case 'n': o.dryrun = true; break;
		case 's': o.resumable = true; break;
		case 'u': break; /* nothing is mounted: accepted for zfs compatibility */
		case 'v': verbose = true; break;
		case 'd':
		case 'e':
			if (o.naming)
				return cli_usage(u, "-d and -e exclude each other");
			o.naming = ch;
			break;
		case 'A': abort_partial = true; break;
		case 'o':
			if (o.nprops == 64 || cli_parse_prop(optarg, &props[o.nprops]) < 0)
				return cli_usage(u, "bad property assignment '%s'", optarg);
			o.nprops++;
			break;
		case 'x':
			if (o.nexclude == 64)
				return cli_usage(u, "too many -x");
			excl[o.nexclude++] = optarg;
			break;
		default:
			return cli_usage(u, NULL);
		}
	}
	if (optind + 1 != argc)
		return cli_usage(u, "expected one target dataset");
	/* As zfs: -A takes no option that only a receive has. */
	if (abort_partial && (o.dryrun || o.resumable || o.naming))
		return cli_usage(u, "invalid option with -A");
	o.target = argv[optind];
	o.props = props;
	o.exclude = excl;
	if (verbose)
		o.item = o.dryrun ? dry_item : item;
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = abort_partial ? cairn_recv_abort(st, o.target) : cairn_recv(st, &o);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cli_progress_done();
	int rc = r < 0 ? cli_fail(st, o.target, r) : 0;
	/* The hint only when resuming can finish it: never after a refusal
	 * (sync reads this line to decide whether to say "run sync again"). */
	if (r < 0 && o.partial_kept) {
		char *tok = NULL;
		if (cairn_dataset_get(st, o.partial_dataset, "receive_resume_token", &tok, NULL) == 0 &&
		    strcmp(tok, "-"))
			cli_err(o.partial_dataset, "partial state kept; resume with: %s send -t %s",
				g_cli.zfs ? "zfs" : "cairn", tok);
		free(tok);
	}
	if (r == 0 && verbose && !abort_partial && !o.dryrun) {
		char b[32];
		double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		cli_size(b, sizeof(b), o.bytes, false);
		fprintf(stderr, "received %s stream in %.2fs (%llu snapshots, %llu new chunks)\n", b,
			s, (unsigned long long)o.snapshots, (unsigned long long)o.chunks_new);
	}
	cairn_store_close(st);
	return rc;
}
