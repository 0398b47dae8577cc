/* test_statahead.c - the incremental walk's helper thread (lib/data/statahead.c).
 *
 * A tree of 3,000-odd objects (deep and wide directories, an empty one, one
 * of 1,500 entries, symlinks to directories, fifos) is walked through the
 * statahead interface with a helper and without one.  The walk with the
 * helper must read exactly what the plain walk reads: the same entries in
 * the same order, each with the stat a direct lstat of its path gives.  It
 * is walked 60 times, varying what the walk does between entries:
 *   - nothing (the two threads race for the same entries),
 *   - a pause every few entries (the helper runs ahead and makes
 *     directories the walk then takes over),
 *   - entering only some subdirectories (the helper's unused directories
 *     are thrown away when their parent is left),
 *   - stopping half-way (every directory left early, with the helper busy).
 * Like backup under exclude rules, the walk never enters the directories
 * below a listing that holds a .cairnignore, nor those below one it does
 * not allow ahead; inotify must see no open of them, by either thread.
 * The helper must have statted entries and made directories ahead, or the
 * races above did not happen.  Leaks and data races show under make asan.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "data/statahead.h"
#include "unit.h"
#include "util.h"

static char root[] = "/tmp/cairn-statahead-XXXXXX";

static void mk(const char *rel, int kind)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	int r = 0;
	if (kind == 'd')
		r = mkdir(p, 0755);
	else if (kind == 'f') {
		int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		r = fd < 0 ? -1 : (int)write(fd, rel, strlen(rel));
		if (fd >= 0)
			close(fd);
		r = r < 0 ? -1 : 0;
	} else if (kind == 'l')
		r = symlink("..", p);
	else if (kind == 'p')
		r = mkfifo(p, 0600);
	if (r < 0) {
		perror(p);
		exit(2);
	}
}

static void build_tree(void)
{
	char rel[256];
	for (int a = 0; a < 24; a++) {
		snprintf(rel, sizeof(rel), "d%02d", a);
		mk(rel, 'd');
		for (int f = 0; f < a * 2; f++) {
			snprintf(rel, sizeof(rel), "d%02d/f%03d", a, f);
			mk(rel, 'f');
		}
		snprintf(rel, sizeof(rel), "d%02d/link", a);
		mk(rel, 'l');
		for (int b = 0; b < a % 5; b++) {
			snprintf(rel, sizeof(rel), "d%02d/s%d", a, b);
			mk(rel, 'd');
			for (int c = 0; c < 3; c++) {
				snprintf(rel, sizeof(rel), "d%02d/s%d/t%d", a, b, c);
				mk(rel, 'd');
				for (int f = 0; f < 9; f++) {
					snprintf(rel, sizeof(rel), "d%02d/s%d/t%d/g%d", a, b, c, f);
					mk(rel, f == 4 ? 'p' : 'f');
				}
			}
		}
	}
	mk("empty", 'd');
	mk("wide", 'd');
	for (int f = 0; f < 1500; f++) {
		snprintf(rel, sizeof(rel), "wide/w%04d", f);
		mk(rel, (f % 100) ? 'f' : 'd');
	}
	mk("zz-file", 'f');
	/* Directories the walk leaves out: below a listing with a
	 * .cairnignore, and below one with a CACHEDIR.TAG. */
	mk("ign", 'd');
	mk("ign/.cairnignore", 'f');
	mk("ign/sub1", 'd');
	mk("ign/sub1/deep", 'd');
	mk("ign/sub2", 'd');
	mk("held", 'd');
	mk("held/CACHEDIR.TAG", 'f');
	mk("held/x", 'd');
	mk("held/x/y", 'd');
}

/* Opens of the directories above that nobody may make. */
static const char *const untouchable[] = {"ign/sub1", "ign/sub1/deep", "ign/sub2", "held/x",
					  "held/x/y"};
#define NUNTOUCHABLE (sizeof(untouchable) / sizeof(*untouchable))

static int watch_untouchable(void)
{
	int fd = inotify_init1(IN_NONBLOCK);
	CHECK(fd >= 0);
	for (size_t i = 0; i < NUNTOUCHABLE; i++) {
		char p[512];
		snprintf(p, sizeof(p), "%s/%s", root, untouchable[i]);
		CHECK(inotify_add_watch(fd, p, IN_OPEN) >= 0);
	}
	return fd;
}

static unsigned opens_seen(int fd)
{
	char buf[4096] __attribute__((aligned(8)));
	unsigned n = 0;
	ssize_t got;
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t off = 0; off < got;) {
			const struct inotify_event *e = (const void *)(buf + off);
			n += (e->mask & IN_OPEN) != 0;
			off += (ssize_t)sizeof(*e) + e->len;
		}
	return n;
}

/* What a walk read, one line per entry, and how it went. */
typedef struct transcript {
	buf_t text;
	unsigned entries;
	unsigned mismatched; /* stat differs from a direct lstat */
	int err;
} transcript_t;

enum { PLAIN, PAUSE, SOME_DIRS, STOP_HALF, NO_AHEAD };

typedef struct walkopts {
	int mode;
	unsigned stop_after; /* STOP_HALF: entries before stopping */
} walkopts_t;

static void pause_a_little(void)
{
	struct timespec ts = {0, 200000};
	nanosleep(&ts, NULL);
}

static void record(transcript_t *t, const char *path, const struct stat *st)
{
	struct stat ref;
	char full[2048];
	snprintf(full, sizeof(full), "%s/%s", root, path);
	if (lstat(full, &ref) < 0 || ref.st_ino != st->st_ino || ref.st_mode != st->st_mode ||
	    ref.st_size != st->st_size || ref.st_dev != st->st_dev)
		t->mismatched++;
	char line[1100];
	int n = snprintf(line, sizeof(line), "%s %o %llu\n", path, (unsigned)st->st_mode,
			 (unsigned long long)st->st_ino);
	buf_append(&t->text, line, (size_t)n);
	t->entries++;
}

/* Returns 1 when the walk must stop (STOP_HALF reached), else 0. */
static int walk(statahead_t *sa, sa_dir_t *d, const char *dirpath, const walkopts_t *o,
		transcript_t *t)
{
	/* As backup does with its exclude rules: nothing below a .cairnignore
	 * or a CACHEDIR.TAG is entered, and only elsewhere may the helper read
	 * ahead (NO_AHEAD: nowhere). */
	bool leave_out = d->list.has_ignore_file || d->list.has_cachedir_tag;
	if (!leave_out && o->mode != NO_AHEAD)
		sa_allow_ahead(sa, d);
	for (size_t i = 0; i < d->list.n; i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s%s%s", dirpath, *dirpath ? "/" : "", d->list.names[i]);
		struct stat st;
		int e = sa_dir_stat(d, i, &st);
		if (e < 0) {
			t->err = e;
			return 1;
		}
		record(t, path, &st);
		if (o->mode == STOP_HALF && t->entries >= o->stop_after)
			return 1;
		if (o->mode == PAUSE && !(t->entries % 7))
			pause_a_little();
		if (!S_ISDIR(st.st_mode) || leave_out || (o->mode == SOME_DIRS && i % 3 == 1))
			continue;
		sa_dir_t *sub;
		if ((e = sa_enter(sa, d, i, &sub)) < 0) {
			t->err = e;
			return 1;
		}
		int stop = walk(sa, sub, path, o, t);
		sa_leave(sa, sub);
		if (stop)
			return 1;
	}
	return 0;
}

/* The most directories the helper held made ahead at once, in any walk. */
static unsigned peak_held;

static void walk_tree(bool helper, const walkopts_t *o, transcript_t *t, uint64_t *hstats,
		      uint64_t *hdirs)
{
	memset(t, 0, sizeof(*t));
	int fd = open(root, O_RDONLY | O_DIRECTORY);
	struct stat rst;
	fstat(fd, &rst);
	statahead_t *sa = NULL;
	if (helper)
		CHECK_EQ(statahead_start(rst.st_dev, &sa), 0);
	sa_dir_t *d;
	int r = sa_root(sa, fd, &d);
	CHECK_EQ(r, 0);
	if (r == 0) {
		walk(sa, d, "", o, t);
		sa_leave(sa, d);
	}
	if (sa) {
		uint64_t s, m;
		unsigned peak;
		statahead_counts(sa, &s, &m, &peak);
		*hstats += s;
		*hdirs += m;
		if (peak > peak_held)
			peak_held = peak;
	}
	statahead_stop(sa);
	close(fd);
}

static bool same_text(const transcript_t *a, const transcript_t *b)
{
	return a->text.len == b->text.len && !memcmp(a->text.data, b->text.data, a->text.len);
}

int main(void)
{
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 2;
	}
	build_tree();
	int watch = watch_untouchable();
	const walkopts_t modes[] = {{PLAIN, 0},	    {PAUSE, 0},	   {SOME_DIRS, 0},
				    {STOP_HALF, 1700}, {NO_AHEAD, 0}};
	uint64_t hstats = 0, hdirs = 0;
	for (size_t m = 0; m < sizeof(modes) / sizeof(*modes); m++) {
		transcript_t want, got;
		walk_tree(false, &modes[m], &want, &hstats, &hdirs);
		CHECK_EQ(want.err, 0);
		CHECK_EQ(want.mismatched, 0);
		CHECK(want.entries > 500u);
		uint64_t mstats = 0, mdirs = 0;
		for (int round = 0; round < 15; round++) {
			walk_tree(true, &modes[m], &got, &mstats, &mdirs);
			CHECK_EQ(got.err, 0);
			CHECK_EQ(got.mismatched, 0);
			CHECK_EQ(got.entries, want.entries);
			CHECK(same_text(&got, &want));
			buf_free(&got.text);
		}
		buf_free(&want.text);
		printf("mode %d: %u entries; helper: %llu stats, %llu directories made ahead\n",
		       modes[m].mode, want.entries, (unsigned long long)mstats,
		       (unsigned long long)mdirs);
		/* A walk that allows no reading ahead gets none. */
		if (modes[m].mode == NO_AHEAD)
			CHECK_EQ(mdirs, 0);
		hstats += mstats;
		hdirs += mdirs;
	}
	/* The helper held more than 8 directories ahead (else the next check
	 * proves nothing)... */
	CHECK(peak_held > 8);
	/* ...but under a low fd limit it holds at most an eighth of it, and
	 * the walk still sees the same tree. */
	peak_held = 0;
	struct rlimit was;
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &was), 0);
	struct rlimit low = {64, was.rlim_max};
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
	transcript_t want, got;
	walk_tree(false, &modes[1], &want, &hstats, &hdirs);
	uint64_t lstats = 0, ldirs = 0;
	for (int round = 0; round < 5; round++) {
		walk_tree(true, &modes[1], &got, &lstats, &ldirs);
		CHECK_EQ(got.err, 0);
		CHECK(same_text(&got, &want));
		buf_free(&got.text);
	}
	buf_free(&want.text);
	CHECK(ldirs > 0);
	CHECK(peak_held <= 64 / 8);
	printf("fd limit 64: %llu directories made ahead, at most %u at once\n",
	       (unsigned long long)ldirs, peak_held);
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &was), 0);
	/* Without these the races above did not happen. */
	CHECK(hstats > 10000);
	CHECK(hdirs > 100);
	/* ...and never opened a directory the walk leaves out. */
	CHECK_EQ(opens_seen(watch), 0);
	close(watch);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	CHECK_EQ(system(cmd), 0);
	UNIT_DONE();
}
