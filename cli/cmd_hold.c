/* cmd_hold.c - cairn hold and cairn release: one transaction per command. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "holdargs.h"

typedef struct tagq {
	const char *tag;
	bool found;
} tagq_t;

static int tag_seen(const char *snap, const char *tag, int64_t time, int pid, void *arg)
{
	tagq_t *q = arg;
	q->found |= !strcmp(tag, q->tag);
	return 0;
}

/* zfs release -r: of an operand's snapshots (it and its descendants'),
 * those that lack the tag are skipped; only when none has it is the
 * operand refused ("no hold with tag").  Items [from, n) of h are one
 * operand's. */
static void skip_untagged(cairn_store *st, holdargs_t *h, size_t from, const char *tag)
{
	size_t keep = from;
	for (size_t i = from; i < h->n; i++) {
		tagq_t q = {tag, false};
		/* One that cannot be read is kept: its release names the error. */
		if (cairn_holds_iter(st, h->items[i].snapshot, tag_seen, &q) < 0 || q.found) {
			char *o = h->owned[keep];
			h->owned[keep] = h->owned[i];
			h->owned[i] = o;
			h->items[keep++] = h->items[i];
		}
	}
	if (keep == from && h->n > from)
		keep = from + 1; /* none has it: the first one names the refusal */
	for (size_t i = keep; i < h->n; i++)
		free(h->owned[i]);
	h->n = keep;
}

/* release -r: one operand at a time, each without its untagged snapshots. */
static int release_args(cairn_store *st, const char *tag, char **snaps, int n, holdargs_t *h)
{
	memset(h, 0, sizeof(*h));
	for (int i = 0; i < n; i++) {
		holdargs_t one;
		int r = holdargs_build(st, tag, snaps + i, 1, true, &one);
		if (r < 0) {
			holdargs_free(&one);
			return r;
		}
		skip_untagged(st, &one, 0, tag);
		r = holdargs_append(h, &one);
		if (r < 0)
			return r;
	}
	return 0;
}

static int hold_or_release(int argc, char **argv, bool hold)
{
	const char *u = hold ? "hold [-r] TAG SNAPSHOT..." : "release [-r] TAG SNAPSHOT...";
	bool recursive = false;
	int ch;
	while ((ch = getopt(argc, argv, "r")) != -1) {
		if (ch != 'r')
			return cli_usage(u, NULL);
		recursive = true;
	}
	if (argc - optind < 2)
		return cli_usage(u, "expected a tag and at least one snapshot");
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	holdargs_t h;
	int r = !hold && recursive
			? release_args(st, argv[optind], argv + optind + 1, argc - optind - 1, &h)
			: holdargs_build(st, argv[optind], argv + optind + 1, argc - optind - 1,
					 recursive, &h);
	int rc = 0;
	if (r < 0)
		rc = cli_fail(st, argv[optind + 1], r);
	else {
		r = hold ? cairn_hold(st, h.items, h.n, false) : cairn_release(st, h.items, h.n);
		if (r < 0 && !holdargs_report(&h, hold ? "hold" : "release"))
			rc = cli_fail(st, NULL, r);
		else if (r < 0)
			rc = 1;
	}
	holdargs_free(&h);
	cairn_store_close(st);
	return rc;
}

int cmd_hold(int argc, char **argv)
{
	return hold_or_release(argc, argv, true);
}

int cmd_release(int argc, char **argv)
{
	return hold_or_release(argc, argv, false);
}
