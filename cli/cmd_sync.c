/* cmd_sync.c - cairn sync: replicate a dataset to another store, sending
 * only the chunks the destination does not already have (whatever dataset
 * or source they came from there).
 *
 * ENDPOINT is DATASET (the -s store), /STORE:DATASET (another local
 * store), or HOST:/STORE:DATASET (over ssh: $CAIRN_SSH, default "ssh",
 * runs $CAIRN_REMOTE, default "cairn", on the far side).  The source must
 * be local.  Each dataset is sent from its own newest snapshot or
 * bookmark whose snapshot the destination dataset its name maps to has
 * (by guid; the same guid in another dataset there does not count, nor
 * does a bookmark there: a receive needs its source's data), with every
 * snapshot after it, in groups (one `snapshot -r` commits together).  A
 * partial receive on the destination is resumed by its token once the
 * checks of the destination pass (a refused sync changes nothing there),
 * planned the same way.  Running sync again
 * after any failure converges. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "sync_link.h"
#include "sync_plan.h"

static const char *u = "sync [-R] [-F] [-v] [-p] [-n|--dry-run] SOURCE DESTINATION\n"
		       "       endpoints: DATASET | /STORE:DATASET | HOST:/STORE:DATASET\n"
		       "       HOST: NAME, USER@NAME, [IPV6] or USER@[IPV6]";

static bool g_exact;

/* A size for people (1.2M), or with -p the exact byte count. */
static void size_str(char *b, size_t n, uint64_t bytes)
{
	if (g_exact)
		snprintf(b, n, "%llu bytes", (unsigned long long)bytes);
	else
		cli_size(b, n, bytes, false);
}

static void est(const char *kind, const char *from, const char *to, uint64_t bytes, void *arg)
{
	char b[32];
	size_str(b, sizeof(b), bytes);
	printf("would send %s%s%s: %s\n", to, from ? " from " : "", from ? from : "", b);
}

/* One stream from here into `cairn recv ...` on the destination, sending
 * only the chunks the destination lacks.  label names what is sent
 * ("tank@7").  0 on success; otherwise a message naming the snapshot, the
 * destination dataset and the cause, from the side that failed (the
 * receiver's own reason, read from its stderr), and 1.  goes_on: a
 * failure that leaves no partial state may not be the end of this sync (a
 * resume's: sync sends again in the same run), so its message does not
 * tell the user to run sync again; 2 instead of 1 when it would have (a
 * retry may help), for the caller to say if sync stops after all. */
static int stream_to(cairn_store *st, const endpoint_t *dst, const char *snap, cairn_send_opts *o,
		     const char *const *rverb, const char *label, bool goes_on)
{
	remote_have_t rh = {-1, -1, -1, -1, false};
	cairn_store *dstore = NULL;
	int r = 0, child = 0, efd = -1;
	/* A far side that dies (or refuses have -n) must show up as EPIPE on
	 * our next write, reported with its reason, not kill sync silently;
	 * a dry run writes to have too. */
	signal(SIGPIPE, SIG_IGN);
	if (dst->host) {
		const char *verb[] = {"have", o->dry_run ? "-n" : NULL, NULL};
		char **av = dest_argv(dst, verb);
		rh.errfd = errfile_open();
		rh.pid = spawn_piped(av, &rh.to, &rh.from, rh.errfd);
		argv_free(av);
		o->have = have_remote;
		o->have_arg = &rh;
	} else {
		if (cairn_store_open(dst->store ? dst->store : g_cli.store_path, &dstore) < 0) {
			cli_err(dst->store, "cannot open the destination store");
			return 1;
		}
		o->have = o->dry_run ? have_local_dry : have_local;
		o->have_arg = dstore;
	}
	if (o->dry_run) {
		r = cairn_send(st, snap, o);
	} else {
		char **av = dest_argv(dst, rverb);
		efd = errfile_open();
		pid_t rpid = spawn_piped(av, &o->fd, NULL, efd);
		argv_free(av);
		r = rpid < 0 ? -errno : cairn_send(st, snap, o);
		if (rpid > 0) {
			close(o->fd);
			child = wait_child(rpid);
		}
	}
	int hstatus = 0;
	if (rh.pid > 0) {
		close(rh.to);
		close(rh.from);
		hstatus = wait_child(rh.pid);
	}
	char *herr = rh.errfd >= 0 ? errfile_read(rh.errfd) : NULL;
	char *rerr = efd >= 0 ? errfile_read(efd) : NULL;
	cairn_store_close(dstore);
	cli_progress_done();
	bool kept = false;
	char *rwhy = child_reason(rerr, child, true, &kept);
	int rc = 0;
	if (rh.broken && o->dry_run && hstatus == 2) {
		/* A usage error: a cairn there from before have -n.  Asking
		 * with plain have would touch chunks there, and trying again
		 * changes nothing. */
		cli_err(dst->dataset, "sending %s (dry run): its cairn does not take 'have -n' (an older "
				      "version?), which sync -n asks with so as to change nothing there; "
				      "update cairn there",
			label);
		rc = 1;
	} else if (rh.broken) {
		/* The chunk query died first: the link, or the far side.  Its
		 * own refusal (a cairn there without have) is not worth
		 * trying again; a cut link or a killed process is. */
		char *hwhy = child_reason(herr, hstatus, false, NULL);
		bool retry = recv_retryable(hstatus, hwhy);
		cli_err(dst->dataset, "sending %s: the destination stopped answering which chunks it "
				      "has: %s%s",
			label, hwhy,
			kept && retry	    ? "; its partial state is kept: run sync again to resume"
			: kept		    ? "; its partial state is kept for the next sync"
			: retry && !goes_on ? "; run sync again to retry"
					    : "");
		free(hwhy);
		rc = goes_on && retry && !kept ? 2 : 1;
	} else if (r < 0 && (r != -EPIPE || child == 0)) {
		/* The sender failed by itself; the receiver only saw the stream stop. */
		const char *d = cairn_store_errdetail(st);
		size_t ll = strlen(label);
		if (d && !strncmp(d, label, ll) && !strncmp(d + ll, ": ", 2))
			d += ll + 2; /* the detail names the snapshot too: once is enough */
		/* A resume helps when the stream was cut or stopped; a failure
		 * in the source (a damaged chunk) would stop it again. */
		bool cut = r == -EINTR || r == -EPIPE || r == -EIO;
		cli_err(label, "%s%s%s", d && *d ? d : cairn_strerror(r),
			child ? "; the receive on the destination stopped with it" : "",
			!kept ? ""
			: cut ? "; the partial state is kept: run sync again to resume"
			      : "; the partial state is kept for the next sync");
		rc = 1;
	} else if (child != 0) {
		bool retry = !kept && recv_retryable(child, rwhy);
		cli_err(dst->dataset, "receiving %s: %s%s", label, rwhy,
			kept		      ? "; the partial state is kept: run sync again to resume"
			: retry && !goes_on ? "; run sync again to retry"
					      : "");
		rc = retry && goes_on ? 2 : 1;
	}
	free(rwhy);
	free(rerr);
	free(herr);
	return rc;
}

/* The first snapshot a resumed stream carries (names it in messages). */
static void first_to(const char *kind, const char *from, const char *to, uint64_t bytes, void *arg)
{
	char *first = arg;
	if (!first[0])
		snprintf(first, 600, "%s", to);
}

/* Plans the stream that resumes token tok (a dry run: *plan is then the
 * options to send it with, label the first snapshot it carries).  It is
 * planned as sync plans (each dataset to its own newest snapshot, from
 * what the destination has, h): that is how sync sent it, and planned as
 * send -R -I it may be refused (a descendant without the top's snapshot
 * name) or lack the group in flight, and the partial receive would be
 * thrown away.  Only when that plan does not continue the token (one
 * from a send -R -I | recv -s run by hand) is the token's own plan
 * tried.  0, or <0 with the reason in why (the sync plan's, when both
 * fail: it is the one sync would have used). */
static int plan_resumed(cairn_store *st, const char *tok, const dest_have_t *h,
			cairn_send_opts *plan, char *label, char *why, size_t whylen)
{
	static const uint64_t no_guids[1];
	/* Encrypted datasets replicate raw: the far side never needs a key. */
	*plan = (cairn_send_opts){.resume_token = tok, .raw = true, .dry_run = true,
				  .estimate = first_to, .arg = label,
				  .base_guids = h->n ? h->guids : no_guids, .nbase_guids = h->n,
				  .base_datasets = (const char *const *)h->rels};
	int r = cairn_send(st, NULL, plan);
	if (r >= 0)
		return r;
	const char *d = cairn_store_errdetail(st);
	snprintf(why, whylen, "%s", d && *d ? d : cairn_strerror(r));
	plan->base_guids = NULL;
	plan->nbase_guids = 0;
	plan->base_datasets = NULL;
	label[0] = 0;
	int own = cairn_send(st, NULL, plan);
	return own >= 0 ? own : r;
}

/* How many snapshots the destination has now that it did not have in h (both lists are sorted by guid); <0 if it cannot be
 * listed (said). */
static long dest_gained(const endpoint_t *dst, const dest_have_t *h)
{
	dest_have_t now;
	int r = dest_guids(dst, &now);
	if (r < 0) {
		dest_have_free(&now); /* what a failed parse had filled in */
		return r;
	}
	long n = 0;
	for (size_t i = 0, k = 0; i < now.n; i++) {
		while (k < h->n && h->guids[k] < now.guids[i])
			k++;
		n += k == h->n || h->guids[k] != now.guids[i];
	}
	dest_have_free(&now);
	return n;
}

/* After a failed resume that left no partial state there: says what
 * became of it before the rest is sent.  Either the receiver discarded
 * the state (the stream could not continue it), or it committed the
 * group it resumed, and maybe more, and stopped between groups, where
 * nothing is in flight and there is no state to keep. */
static void say_resume_outcome(const endpoint_t *dst, const dest_have_t *h)
{
	long gained = dest_gained(dst, h);
	if (gained < 0)
		return; /* said; the listing that follows fails the same way */
	if (gained > 0)
		fprintf(stderr, "cairn: sync: %s: the resumed receive committed %ld snapshot(s) "
				"before it stopped and left no partial state; sending the rest\n",
			dst->dataset, gained);
	else
		fprintf(stderr, "cairn: sync: %s: the partial receive was discarded there; sending "
				"again\n",
			dst->dataset);
}

/* A partial receive on the destination is finished first, from its token
 * (send -t).  A token this store can no longer plan (its snapshot or
 * source is gone, the token is damaged) is unusable: the partial state is
 * discarded and the ordinary sync that follows starts that group again.
 * Any other failure (the link was cut, either side died) keeps the
 * partial state, so the next sync resumes where this one stopped.
 * 1 = resumed, 0 = nothing to resume (or discarded), -1 = failed (said). */
static int resume_partial(cairn_store *st, const endpoint_t *dst, const dest_have_t *h,
			  bool force, bool verbose)
{
	const char *verb[] = {"get", "-H", "-o", "value", "receive_resume_token", dst->dataset, NULL};
	char *tok, *err;
	int rc = dest_output(dst, verb, &tok, &err);
	free(err);
	if (rc != 0 || !tok) {
		free(tok);
		return 0; /* no such dataset (yet); other failures show in the listing */
	}
	tok[strcspn(tok, "\n")] = 0;
	if (!tok[0] || !strcmp(tok, "-")) {
		free(tok);
		return 0;
	}
	char label[600] = "", why[512] = "";
	cairn_send_opts plan;
	int r = plan_resumed(st, tok, h, &plan, label, why, sizeof(why));
	if (r == CAIRN_ECORRUPT || r == -ENOENT || r == -EINVAL || r == -ESTALE) {
		/* Said even without -v: progress is being thrown away. */
		fprintf(stderr, "cairn: sync: %s: discarding the partial receive (%s)\n",
			dst->dataset, why);
		const char *av2[] = {"recv", "-A", dst->dataset, NULL};
		char *out;
		rc = dest_output(dst, av2, &out, &err);
		free(out);
		if (rc) {
			char *dwhy = child_reason(err, rc, false, NULL);
			cli_err(dst->dataset, "cannot discard the partial receive (its resume token "
					      "is unusable: %s): %s",
				why, dwhy);
			free(dwhy);
		}
		free(err);
		free(tok);
		return rc ? -1 : 0;
	}
	if (r < 0) {
		cli_err(dst->dataset, "resuming the partial receive: %s", why);
		free(tok);
		return -1;
	}
	cairn_send_opts o = {.resume_token = tok, .progress = cli_progress, .raw = true,
			     .base_guids = plan.base_guids, .nbase_guids = plan.nbase_guids,
			     .base_datasets = plan.base_datasets};
	const char *rv[] = {"recv", "-s", force ? "-F" : "-s", dst->dataset, NULL};
	char what[700];
	snprintf(what, sizeof(what), "%s (resumed)", label[0] ? label : "a partial receive");
	rc = stream_to(st, dst, NULL, &o, rv, what, true);
	free(tok);
	if (rc) {
		/* A resumed receive that can never complete (its source gone
		 * there, the group in flight changed here) discards its partial
		 * state; one cut between groups has none left either.  Then the
		 * sync goes on and sends what is missing. */
		char *now = NULL;
		int grc = dest_output(dst, verb, &now, &err);
		/* "-", or no dataset: the discard took back the one it made */
		bool gone = grc == 0 ? now && (now[strcspn(now, "\n")] = 0, !strcmp(now, "-"))
				     : grc > 0 && err && strstr(err, "dataset does not exist");
		free(err);
		free(now);
		if (!gone) {
			/* sync stops here after all: say what stream_to held back */
			if (rc == 2)
				cli_err(dst->dataset, "the partial receive is still there: run sync "
						      "again to resume");
			return -1;
		}
		say_resume_outcome(dst, h);
		return 1;
	}
	if (verbose)
		printf("resumed the partial receive into %s\n", dst->dataset);
	return 1;
}

/* Which of sync's refusals of the destination top h, judged from
 * find_common's findings, applies (the ones that name no child; the
 * first that does, in the order sync_endpoints says them), or none. */
enum top_refusal { TOP_FITS, TOP_NO_SNAPSHOTS, TOP_UNRELATED, TOP_ONLY_BOOKMARKS, TOP_KIDS_UNRELATED };

static enum top_refusal top_refusal(const dest_have_t *h, const char *newest, const char *common,
				    bool related, bool any_common)
{
	if (!newest)
		return TOP_NO_SNAPSHOTS;
	if (h->top_example && !related)
		return TOP_UNRELATED;
	if (h->top_snap && !common)
		return TOP_ONLY_BOOKMARKS;
	if (h->sub_example && !any_common)
		return TOP_KIDS_UNRELATED;
	return TOP_FITS;
}

/* A copy of h's dataset rels (as listed, before remap_renamed changes
 * them in place) in *out: 0, or -ENOMEM. */
static int listed_rels(const dest_have_t *h, char ***out)
{
	*out = calloc(h->nds + 1, sizeof(**out));
	for (size_t i = 0; *out && i < h->nds; i++)
		if (!((*out)[i] = strdup(h->dsrels[i])))
			return -ENOMEM;
	return *out ? 0 : -ENOMEM;
}

/* The rel that dataset rel there (as listed) has once the source's renames
 * are applied to h (remap_renamed keeps each dataset's index). */
static const char *as_renamed(const dest_have_t *h, char *const *listed, const char *rel)
{
	for (size_t i = 0; i < h->nds; i++)
		if (!strcmp(listed[i], rel))
			return h->dsrels[i];
	return rel;
}

/* sync -R: a dataset below the destination top can hold the partial state
 * of a stream of its own (a cut `sync SRC/kid DEST/kid`, or a `recv -s`
 * into it by hand).  The -R stream, which receives into it too, would be
 * refused there ("contains partially-complete state") on every run, so
 * each such dataset that is a copy of the source dataset of its name
 * (dest_copy_of, judged with the source's renames applied, as the -R
 * stream will: a child the source renamed is a copy of the dataset of
 * its new name; no snapshot yet, or one of the source's) is first
 * finished from its own token as a sync of that dataset alone would, or
 * its state is discarded when the token is unusable (resume_partial, as
 * for the top).  Only once sync has found nothing to refuse (refused): a
 * refused sync changes nothing.  Not in a dataset there with snapshots
 * none of which is the source's (another source's copy, whose partial
 * receive is not this sync's: the -R stream is refused there anyway),
 * nor in one of no source dataset: their state stays.  1 when a state
 * was resumed or discarded (the destination then has to be listed
 * again), 0 when none was, or -1 (said). */
static int resume_children(cairn_store *st, const endpoint_t *src, const endpoint_t *dst,
			   bool force, bool verbose)
{
	const char *verb[] = {"get", "-r", "-t", "filesystem,volume", "-H", "-o", "name,value",
			      "receive_resume_token", dst->dataset, NULL};
	char *out = NULL, *err = NULL, *save = NULL;
	int rc = dest_output(dst, verb, &out, &err);
	free(err);
	if (rc != 0 || !out) {
		free(out);
		return 0; /* no destination yet; a listing that fails says why next */
	}
	size_t dl = strlen(dst->dataset);
	src_tree_t tree = {0};
	dest_have_t h = {0};
	char **listed = NULL; /* h's dataset rels as listed, before the renames */
	int r = 0, acted = 0;
	bool loaded = false; /* h and tree, once a child holds a state */
	for (char *line = strtok_r(out, "\n", &save); r >= 0 && line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');
		if (!tab || !tab[1] || !strcmp(tab + 1, "-"))
			continue;
		*tab = 0;
		if (strncmp(line, dst->dataset, dl) || line[dl] != '/')
			continue;
		if (!loaded) {
			loaded = true;
			if ((r = src_tree_load(st, src->dataset, &tree)) < 0) {
				cli_fail(st, src->dataset, r);
				break;
			}
			if ((r = dest_guids(dst, &h)) < 0) /* (said) */
				break;
			if ((r = listed_rels(&h, &listed)) < 0 ||
			    (r = remap_renamed(st, src->dataset, &h, NULL)) < 0) {
				cli_fail(st, src->dataset, r);
				break;
			}
		}
		if (!dest_copy_of(&h, &tree, as_renamed(&h, listed, line + dl)))
			continue;
		endpoint_t kid = *dst; /* borrowed, with the child's name */
		kid.dataset = line;
		dest_have_t kh = {0};
		r = dest_guids(&kid, &kh);
		if (r >= 0)
			r = resume_partial(st, &kid, &kh, force, verbose);
		dest_have_free(&kh);
		acted |= r >= 0;
	}
	for (size_t i = 0; listed && i < h.nds; i++)
		free(listed[i]);
	free(listed);
	dest_have_free(&h);
	src_tree_free(&tree);
	free(out);
	return r < 0 ? -1 : acted;
}

/* Sends newest (from each dataset's newest snapshot the destination has)
 * into `recv -s` on the destination.  0, or 1 after printing the error. */
static int send_to(cairn_store *st, const endpoint_t *dst, const char *newest,
		   const dest_have_t *h, bool recursive, bool force, bool dry, bool verbose,
		   const char *common)
{
	/* raw: encrypted datasets replicate as stored (no key needed there).
	 * base_guids is set even when the destination has nothing: it is
	 * what makes each dataset go to its own newest snapshot; with
	 * base_datasets a guid counts only in the dataset it is in there. */
	static const uint64_t no_guids[1];
	cairn_send_opts o = {.intermediates = true, .recursive = recursive, .dry_run = dry,
			     .progress = cli_progress, .base_guids = h->n ? h->guids : no_guids,
			     .nbase_guids = h->n, .base_datasets = (const char *const *)h->rels,
			     .raw = true, .estimate = dry ? est : NULL};
	const char *verb[] = {"recv", "-s", force ? "-F" : "-s", verbose ? "-v" : "-s",
			      dst->dataset, NULL};
	int rc = stream_to(st, dst, newest, &o, verb, newest, false);
	if (!rc && (verbose || dry)) {
		char b[32];
		size_str(b, sizeof(b), o.bytes);
		printf("%s %s %s -> %s: %s in %llu snapshots, %llu chunks already there\n",
		       dry ? "would sync" : "synced", newest, common ? common : "(full)", dst->dataset,
		       b, (unsigned long long)o.snapshots, (unsigned long long)o.chunks_skipped);
	}
	return rc;
}

static int sync_endpoints(endpoint_t *srcp, endpoint_t *dstp, char **names, bool recursive,
			  bool force, bool dry, bool verbose);

int cmd_sync(int argc, char **argv)
{
	static const struct option lo[] = {{"dry-run", no_argument, 0, 'n'}, {0}};
	bool recursive = false, force = false, dry = false, verbose = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "RFvnp", lo, NULL)) != -1) {
		switch (ch) {
		case 'R': recursive = true; break;
		case 'F': force = true; break;
		case 'v': verbose = true; break;
		case 'p': g_exact = true; break; /* byte counts, not 1.2M */
		case 'n': dry = true; break;
		default: return cli_usage(u, NULL);
		}
	}
	if (optind + 2 != argc)
		return cli_usage(u, "expected SOURCE and DESTINATION");
	endpoint_t src, dst;
	const char *why;
	if (parse_endpoint(argv[optind], &src, &why) < 0)
		return cli_usage(u, "%s: bad endpoint%s%s", argv[optind], why ? ": " : "",
				 why ? why : "");
	if (parse_endpoint(argv[optind + 1], &dst, &why) < 0) {
		endpoint_free(&src);
		return cli_usage(u, "%s: bad endpoint%s%s", argv[optind + 1], why ? ": " : "",
				 why ? why : "");
	}
	int rc = sync_endpoints(&src, &dst, argv + optind, recursive, force, dry, verbose);
	endpoint_free(&src);
	endpoint_free(&dst);
	return rc;
}

/* What sync decides about a destination from its listing h (remapped for
 * -R renames): find_common's findings, and the source's subtree (-R). */
typedef struct judged {
	char *common, *newest;
	bool current, related, any_common;
	src_tree_t tree;
} judged_t;

static void judged_free(judged_t *j)
{
	free(j->common);
	free(j->newest);
	src_tree_free(&j->tree);
	*j = (judged_t){0};
}

/* sync's refusals of the destination, judged from h: 0 when it may be
 * synced, 1 after saying why not.  Made before anything is resumed or
 * discarded there, so that a refused sync leaves the destination exactly
 * as it was (another store's partial receive included), and again after
 * a resume, which changes what the destination has. */
static int refused(cairn_store *st, const endpoint_t *src, const endpoint_t *dst,
		   const dest_have_t *h, bool recursive, bool force, judged_t *j)
{
	judged_free(j);
	enum top_refusal refusal;
	const char *gone = NULL; /* -F: a destination dataset a full stream would destroy */
	long unrel;
	int r = find_common(st, src->dataset, recursive, h, &j->common, &j->newest, &j->current,
			    &j->related, &j->any_common);
	if (r < 0)
		return cli_fail(st, src->dataset, r);
	refusal = top_refusal(h, j->newest, j->common, j->related, j->any_common);
	if (refusal == TOP_NO_SNAPSHOTS) {
		cli_err(src->dataset, "has no snapshots to sync");
		return 1;
	}
	if (refusal == TOP_UNRELATED) {
		/* Named by one of them: the refusal is about this dataset's own
		 * snapshots or bookmarks, not its children's. */
		bool bm = strchr(h->top_example, '#') != NULL;
		cli_err(dst->dataset, "has %s (eg. %s) but none in common with %s; refusing "
				      "(destroy them or pick another destination)",
			bm ? "bookmarks" : "snapshots", h->top_example, src->dataset);
		return 1;
	}
	if (refusal == TOP_ONLY_BOOKMARKS) {
		/* Only a bookmark there is the source's: the full stream that
		 * would follow is refused onto a dataset with snapshots. */
		cli_err(dst->dataset, "has snapshots (eg. %s) but none in common with %s, only "
				      "bookmarks, which a receive cannot start from; refusing "
				      "(destroy the snapshots or pick another destination)",
			h->top_snap, src->dataset);
		return 1;
	}
	if (!recursive)
		return 0;
	if ((r = src_tree_load(st, src->dataset, &j->tree)) < 0)
		return cli_fail(st, src->dataset, r);
	if (j->common && (unrel = child_unrelated(st, src->dataset, h, &j->tree)) >= 0) {
		cli_err(dst->dataset, "%s has snapshots but none in common with %s%s, whose "
				      "stream is full; refusing (destroy them)",
			h->names[unrel], src->dataset, h->rels[unrel]);
		return 1;
	}
	if (refusal == TOP_KIDS_UNRELATED) {
		/* The top has none, but datasets under it do, and none of them
		 * is a copy of this source's: a -R stream into it is not a
		 * sync of a copy (-F would destroy them). */
		cli_err(dst->dataset, "has no snapshots of its own, but datasets under it %s (eg. %s), "
				      "none in common with %s; refusing (destroy them or pick "
				      "another destination)",
			strchr(h->sub_example, '#') ? "have bookmarks" : "do", h->sub_example,
			src->dataset);
		return 1;
	}
	if (force && !j->common && h->nds > 1 && (r = dest_extra(&j->tree, h, NULL, &gone)) != 0) {
		/* The top gets a full stream, which destroys nothing (as in zfs);
		 * but once the top is in common, the next -R -F would destroy
		 * what is not the source's under it.  Not without being asked
		 * in so many words. */
		if (r < 0)
			return cli_fail(st, src->dataset, r);
		cli_err(dst->dataset, "has no snapshots of its own; once it has, sync -R -F "
				      "would destroy %s%s, which is not on %s; refusing "
				      "(destroy it there, or sync without -F)",
			dst->dataset, gone, src->dataset);
		return 1;
	}
	return 0;
}

/* The destination listed again after a resume changed it (with -R, the
 * source's renames applied to it again).  The renames counted, or <0
 * (said). */
static int relist(cairn_store *st, const endpoint_t *src, const endpoint_t *dst,
		  dest_have_t *h, bool recursive)
{
	dest_have_free(h);
	int r = dest_guids(dst, h);
	if (r < 0 || !recursive)
		return r < 0 ? -1 : 0;
	if ((r = remap_renamed(st, src->dataset, h, NULL)) < 0) {
		cli_fail(st, src->dataset, r);
		return -1;
	}
	return r;
}

/* sync between parsed endpoints; names[0] and names[1] are them as typed. */
static int sync_endpoints(endpoint_t *srcp, endpoint_t *dstp, char **names, bool recursive,
			  bool force, bool dry, bool verbose)
{
	endpoint_t src = *srcp, dst = *dstp; /* borrowed: the caller frees them */
	if (bad_host(&src) || bad_host(&dst)) {
		cli_err(bad_host(&src) ? names[0] : names[1],
			"host name must not be empty or begin with '-'");
		return 1;
	}
	if (src.host) {
		cli_err(names[0], "the source must be a local store (run sync on the source host)");
		return 1;
	}
	/* Checked here, not only by the far side: a name reaches its command
	 * line after the options, where "-r" would be read as one. */
	char why[160];
	for (int i = 0; i < 2; i++)
		if (cairn_name_check(i ? dst.dataset : src.dataset, false, why, sizeof(why)) < 0) {
			cli_err(names[i], "bad dataset name: %s", why);
			return 1;
		}
	if (src.store)
		g_cli.store_path = src.store;
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int rc = 0;
	dest_have_t h = {0};
	judged_t j = {0};
	/* A dataset renamed on the source is renamed there by a stream,
	 * even one with no snapshot to send. */
	int renamed = 0, extra = 0, stale = 0, acted = 0;
	int r = dest_guids(&dst, &h);
	if (r >= 0 && recursive &&
	    (r = renamed = remap_renamed(st, src.dataset, &h, dry ? dst.dataset : NULL)) < 0) {
		cli_fail(st, src.dataset, r);
		r = -1;
	}
	/* The checks first: a refused sync resumes (or discards) nothing. */
	if (r < 0 || (rc = refused(st, &src, &dst, &h, recursive, force, &j)))
		goto out;
	/* A resume is planned from what the destination has; after one, it
	 * has more, so it is asked again (and judged again). */
	if (!dry && recursive && (acted = r = resume_children(st, &src, &dst, force, verbose)) > 0)
		r = renamed = relist(st, &src, &dst, &h, recursive);
	if (r >= 0 && !dry && (r = resume_partial(st, &dst, &h, force, verbose)) > 0) {
		acted = 1;
		r = renamed = relist(st, &src, &dst, &h, recursive);
	}
	if (r < 0 || (acted && (rc = refused(st, &src, &dst, &h, recursive, force, &j))))
		goto out;
	if (recursive && force && ((j.current && renamed <= 0) || dry) &&
	    (extra = dest_extra(&j.tree, &h, dry ? dst.dataset : NULL, NULL)) < 0) {
		rc = cli_fail(st, src.dataset, extra);
	} else if (recursive && force && j.common &&
		   ((j.current && renamed <= 0 && !extra) || dry) &&
		   (stale = dest_stale(&j.tree, &h, dry ? dst.dataset : NULL)) < 0) {
		/* (a top not in common gets a full stream, which destroys none) */
		rc = cli_fail(st, src.dataset, stale);
	} else if (j.current && renamed <= 0 && extra == 0 && stale == 0) {
		if (verbose || dry)
			printf("%s is up to date (%s)\n", dst.dataset, strchr(j.newest, '@'));
	} else {
		rc = send_to(st, &dst, j.newest, &h, recursive, force, dry, verbose, j.common);
	}
out:
	if (r < 0)
		rc = 1; /* said */
	dest_have_free(&h);
	judged_free(&j);
	cairn_store_close(st);
	return rc;
}
