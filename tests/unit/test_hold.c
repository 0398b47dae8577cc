/* test_hold.c - holds through the public API: batches that are all or
 * nothing with a per-item err and reason, userrefs kept equal to the hold rows, one
 * transaction (one txg) per batch, defer_destroy going with the last
 * release, and temporary holds: kept while their owner process lives,
 * reaped by the next cairn_store_open() once it has exited or was killed,
 * and reaped when a live process merely reuses the owner's pid (rows
 * written by older versions: the recorded process start time differs;
 * rows of this version name a lock file under <store>/holders instead).
 *
 * One store: dataset "pool" (a tiny source directory) with snapshots
 * pool@a .. pool@e, and "pool/kid" with kid@a.  Catalog rows are read and,
 * for the pid-reuse cases, written with SQLite directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cairn.h"
#include "unit.h"

static char tmpdir[] = "/dev/shm/test_hold.XXXXXX";
static char store_path[256], src_path[256], db_path[300];

/* ---- catalog access ---- */

static void sql(const char *q)
{
	sqlite3 *db;
	CHECK_EQ(sqlite3_open(db_path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 60000);
	char *err = NULL;
	int rc = sqlite3_exec(db, q, NULL, NULL, &err);
	if (rc != SQLITE_OK)
		fprintf(stderr, "sql: %s: %s\n", q, err ? err : "?");
	CHECK_EQ(rc, SQLITE_OK);
	sqlite3_free(err);
	sqlite3_close(db);
}

static int64_t sql_int(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int64_t sql_int(const char *fmt, ...)
{
	char q[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	sqlite3 *db;
	sqlite3_stmt *s;
	int64_t v = -1;
	CHECK_EQ(sqlite3_open(db_path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 60000);
	if (sqlite3_prepare_v2(db, q, -1, &s, NULL) == SQLITE_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			v = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	} else {
		fprintf(stderr, "sql: %s: %s\n", q, sqlite3_errmsg(db));
	}
	sqlite3_close(db);
	return v;
}

static int64_t snap_id(const char *ds, const char *name)
{
	return sql_int("SELECT s.id FROM snapshot s JOIN dataset d ON d.id=s.dataset"
		       " WHERE d.name='%s' AND s.name='%s'",
		       ds, name);
}

static int64_t userrefs(const char *ds, const char *name)
{
	return sql_int("SELECT s.userrefs FROM snapshot s JOIN dataset d ON d.id=s.dataset"
		       " WHERE d.name='%s' AND s.name='%s'",
		       ds, name);
}

static int64_t nholds(void)
{
	return sql_int("SELECT COUNT(*) FROM hold");
}

static int64_t txg(void)
{
	return sql_int("SELECT value FROM meta WHERE key='txg'");
}

/* userrefs equals the number of hold rows on every snapshot, and no hold
 * points at a missing snapshot. */
static void check_consistent(const char *where)
{
	int64_t bad = sql_int("SELECT COUNT(*) FROM snapshot s WHERE userrefs !="
			      " (SELECT COUNT(*) FROM hold h WHERE h.snapshot = s.id)");
	int64_t orphans =
		sql_int("SELECT COUNT(*) FROM hold WHERE snapshot NOT IN (SELECT id FROM snapshot)");
	if (bad || orphans)
		fprintf(stderr, "%s: %lld snapshots with wrong userrefs, %lld orphan holds\n", where,
			(long long)bad, (long long)orphans);
	CHECK_EQ(bad, 0);
	CHECK_EQ(orphans, 0);
}

/* Field 22 of /proc/PID/stat (start time in clock ticks), read here
 * independently of the library. */
static uint64_t pstart_of(int pid)
{
	char path[64], line[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = 0;
	char *p = strrchr(line, ')');
	if (!p)
		return 0;
	/* p[1] is the space before field 3 */
	int field = 2;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

/* ---- holds as seen through the API ---- */

typedef struct seen {
	int n;
	int pid;
	char tags[512];
} seen_t;

static int seen_fn(const char *snap, const char *tag, int64_t t, int pid, void *arg)
{
	seen_t *s = arg;
	size_t l = strlen(s->tags);
	snprintf(s->tags + l, sizeof(s->tags) - l, "%s%s", l ? "," : "", tag);
	s->n++;
	s->pid = pid;
	CHECK(t > 1000000000);
	return 0;
}

static seen_t holds_of(cairn_store *st, const char *snap)
{
	seen_t s = {0};
	int r = cairn_holds_iter(st, snap, seen_fn, &s);
	CHECK_EQ(r, 0);
	return s;
}

static cairn_store *open_store(void)
{
	cairn_store *st = NULL;
	int r = cairn_store_open(store_path, &st);
	CHECK_EQ(r, 0);
	if (r < 0) {
		fprintf(stderr, "cairn_store_open: %s\n", cairn_strerror(r));
		exit(1);
	}
	return st;
}

/* ---- setup ---- */

static void setup(void)
{
	snprintf(store_path, sizeof(store_path), "%s/store", tmpdir);
	snprintf(src_path, sizeof(src_path), "%s/src", tmpdir);
	snprintf(db_path, sizeof(db_path), "%s/catalog.db", store_path);
	char p[400];
	CHECK_EQ(mkdir(src_path, 0700), 0);
	snprintf(p, sizeof(p), "%s/kid", src_path);
	CHECK_EQ(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/f", src_path);
	FILE *f = fopen(p, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("tiny\n", f);
		fclose(f);
	}
	cairn_init_opts io = {.skip_atime_check = true};
	CHECK_EQ(cairn_store_init(store_path, &io), 0);
	cairn_store *st = open_store();
	cairn_prop src = {"source", src_path};
	CHECK_EQ(cairn_dataset_create(st, "pool", CAIRN_TYPE_FILESYSTEM, &src, 1, false), 0);
	CHECK_EQ(cairn_dataset_create(st, "pool/kid", CAIRN_TYPE_FILESYSTEM, NULL, 0, false), 0);
	const char *names[] = {"pool@a", "pool@b", "pool@c", "pool@d", "pool@e"};
	for (size_t i = 0; i < 5; i++) {
		cairn_snapshot_opts so = {0};
		int r = cairn_snapshot_create(st, &names[i], 1, &so);
		CHECK_EQ(r, 0);
		if (r)
			fprintf(stderr, "snapshot %s: %s\n", names[i], cairn_store_errdetail(st));
	}
	const char *kid[] = {"pool/kid@a"};
	cairn_snapshot_opts so = {0};
	CHECK_EQ(cairn_snapshot_create(st, kid, 1, &so), 0);
	cairn_store_close(st);
}

/* ---- user holds ---- */

static void test_batch_all_or_nothing(void)
{
	cairn_store *st = open_store();
	int64_t t0 = txg();
	cairn_hold_item bad[] = {
		{"pool@a", "keep", 99},
		{"pool@nosuch", "keep", 99},
		{"pool@b", "", 99},
		{"pool#bm", "keep", 99},
		{"pool@c", "keep", 99},
	};
	int r = cairn_hold(st, bad, 5, false);
	CHECK(r < 0);
	CHECK_EQ(bad[0].err, 0);
	CHECK_EQ(bad[1].err, -ENOENT);
	CHECK_EQ(bad[2].err, CAIRN_EBADNAME);
	CHECK_EQ(bad[3].err, CAIRN_EBADNAME);
	CHECK_EQ(bad[4].err, 0);
	CHECK(strstr(cairn_store_errdetail(st), "pool@nosuch") != NULL);
	/* each failing item carries its own reason, naming it */
	CHECK(strstr(bad[1].why, "pool@nosuch") != NULL);
	CHECK(strstr(bad[2].why, "pool@b") != NULL && strstr(bad[2].why, "empty") != NULL);
	CHECK(strstr(bad[3].why, "pool#bm") != NULL && strstr(bad[3].why, "snapshot") != NULL);
	CHECK_EQ(nholds(), 0);
	CHECK_EQ(userrefs("pool", "a"), 0);
	CHECK_EQ(txg(), t0); /* rolled back: no transaction committed */

	/* An over-long tag; 255 bytes is the limit. */
	char longtag[300];
	memset(longtag, 't', 256);
	longtag[256] = 0;
	cairn_hold_item lt = {"pool@a", longtag, 0};
	CHECK_EQ(cairn_hold(st, &lt, 1, false), CAIRN_EBADNAME);
	CHECK_EQ(lt.err, CAIRN_EBADNAME);
	CHECK(strstr(lt.why, "255") != NULL);
	longtag[255] = 0;
	CHECK_EQ(cairn_hold(st, &lt, 1, false), 0);
	CHECK_EQ(cairn_release(st, &lt, 1), 0);

	/* The good batch: one transaction, userrefs per hold. */
	t0 = txg();
	cairn_hold_item good[] = {{"pool@a", "keep"}, {"pool@b", "keep"}, {"pool@a", "other"},
				  {"pool/kid@a", "keep"}};
	CHECK_EQ(cairn_hold(st, good, 4, false), 0);
	CHECK_EQ(txg(), t0 + 1);
	CHECK_EQ(userrefs("pool", "a"), 2);
	CHECK_EQ(userrefs("pool", "b"), 1);
	CHECK_EQ(userrefs("pool/kid", "a"), 1);
	seen_t s = holds_of(st, "pool@a");
	CHECK_EQ(s.n, 2);
	CHECK(!strcmp(s.tags, "keep,other"));
	CHECK_EQ(s.pid, 0); /* a user hold has no owner */

	/* A tag already there fails alone, and takes the batch down. */
	t0 = txg();
	cairn_hold_item dup[] = {{"pool@c", "keep"}, {"pool@b", "keep"}};
	CHECK_EQ(cairn_hold(st, dup, 2, false), -EEXIST);
	CHECK_EQ(dup[0].err, 0);
	CHECK_EQ(dup[1].err, -EEXIST);
	CHECK(strstr(dup[1].why, "pool@b") != NULL && strstr(dup[1].why, "keep") != NULL);
	CHECK(strstr(cairn_store_errdetail(st), "pool@b") != NULL);
	CHECK(strstr(cairn_store_errdetail(st), "keep") != NULL);
	CHECK_EQ(userrefs("pool", "c"), 0);
	CHECK_EQ(txg(), t0);
	/* The same pair twice in one batch collides with itself. */
	cairn_hold_item twice[] = {{"pool@c", "x"}, {"pool@c", "x"}};
	CHECK_EQ(cairn_hold(st, twice, 2, false), -EEXIST);
	CHECK_EQ(userrefs("pool", "c"), 0);

	/* Release: a tag that is not there fails, nothing is released. */
	cairn_hold_item rel_bad[] = {{"pool@a", "keep"}, {"pool@b", "nope"}};
	CHECK_EQ(cairn_release(st, rel_bad, 2), -ENOENT);
	CHECK_EQ(rel_bad[0].err, 0);
	CHECK_EQ(rel_bad[1].err, -ENOENT);
	CHECK_EQ(userrefs("pool", "a"), 2);
	t0 = txg();
	CHECK_EQ(cairn_release(st, good, 4), 0);
	CHECK_EQ(txg(), t0 + 1);
	CHECK_EQ(nholds(), 0);
	check_consistent("batch");

	/* expand: the snapshot name in the dataset and each descendant having it */
	char **names;
	size_t n;
	CHECK_EQ(cairn_snapshot_expand(st, "pool@a", &names, &n), 0);
	CHECK_EQ(n, 2);
	if (n == 2) {
		CHECK(!strcmp(names[0], "pool@a"));
		CHECK(!strcmp(names[1], "pool/kid@a"));
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	CHECK_EQ(cairn_snapshot_expand(st, "pool@b", &names, &n), 0);
	CHECK_EQ(n, 1);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	CHECK_EQ(cairn_snapshot_expand(st, "pool@zzz", &names, &n), -ENOENT);
	free(names);
	cairn_store_close(st);
}

static void test_defer_destroy(void)
{
	cairn_store *st = open_store();
	cairn_hold_item h[] = {{"pool@d", "one"}, {"pool@d", "two"}};
	CHECK_EQ(cairn_hold(st, h, 2, false), 0);
	cairn_destroy_opts o = {0};
	CHECK_EQ(cairn_destroy(st, "pool@d", &o), CAIRN_EHELD);
	CHECK(strstr(cairn_store_errdetail(st), "one") != NULL);
	CHECK(strstr(cairn_store_errdetail(st), "two") != NULL);
	o = (cairn_destroy_opts){.defer = true};
	CHECK_EQ(cairn_destroy(st, "pool@d", &o), 0);
	CHECK_EQ(sql_int("SELECT defer_destroy FROM snapshot WHERE id=%lld",
			 (long long)snap_id("pool", "d")),
		 1);
	CHECK_EQ(cairn_release(st, &h[0], 1), 0);
	CHECK(snap_id("pool", "d") > 0); /* one hold left */
	int64_t t0 = txg();
	CHECK_EQ(cairn_release(st, &h[1], 1), 0);
	CHECK_EQ(snap_id("pool", "d"), -1); /* gone with its last hold */
	CHECK_EQ(txg(), t0 + 1);             /* in the same transaction */
	check_consistent("defer");
	cairn_store_close(st);
}

/* ---- temporary holds ---- */

typedef struct holder {
	pid_t pid;
	int ready; /* child -> parent: the hold result (int) */
	int go;    /* parent -> child: exit now */
} holder_t;

/* Forks a child that opens the store, takes temporary holds with tag on
 * snaps, reports, and waits for the word to exit (without releasing). */
static holder_t spawn_holder(const char *tag, const char *const *snaps, size_t n)
{
	int up[2], down[2];
	holder_t h = {-1, -1, -1};
	if (pipe(up) < 0 || pipe(down) < 0) {
		perror("pipe");
		exit(1);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		cairn_store *st = NULL;
		int r = cairn_store_open(store_path, &st);
		cairn_hold_item items[16];
		for (size_t i = 0; r == 0 && i < n; i++)
			items[i] = (cairn_hold_item){snaps[i], tag, 0};
		if (r == 0)
			r = cairn_hold(st, items, n, true);
		cairn_store_close(st);
		if (write(up[1], &r, sizeof(r)) != sizeof(r))
			_exit(2);
		char c;
		ssize_t got = read(down[0], &c, 1); /* EOF or a byte: exit */
		(void)got;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	h.pid = pid;
	h.ready = up[0];
	h.go = down[1];
	int r = -1;
	CHECK_EQ(read(h.ready, &r, sizeof(r)), sizeof(r));
	CHECK_EQ(r, 0);
	return h;
}

static void holder_reap(holder_t *h)
{
	int status;
	CHECK_EQ(waitpid(h->pid, &status, 0), h->pid);
	close(h->ready);
	close(h->go);
}

static void test_temporary_exit(void)
{
	const char *snaps[] = {"pool@a", "pool@b", "pool/kid@a"};
	holder_t h = spawn_holder("send-1", snaps, 3);
	/* Owner alive: another open keeps the holds. */
	cairn_store *st = open_store();
	seen_t s = holds_of(st, "pool@a");
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.pid, h.pid);
	CHECK_EQ(userrefs("pool", "b"), 1);
	CHECK_EQ(userrefs("pool/kid", "a"), 1);
	cairn_destroy_opts o = {0};
	CHECK_EQ(cairn_destroy(st, "pool@b", &o), CAIRN_EHELD);
	cairn_store_close(st);
	st = open_store();
	CHECK_EQ(nholds(), 3);
	cairn_store_close(st);
	/* Owned through a lock file (pstart = its negative id), not the pid. */
	CHECK_EQ(sql_int("SELECT COUNT(*) FROM hold WHERE pid=%d AND pstart < 0", h.pid), 3);

	/* The owner exits without releasing; the next open reaps, in one
	 * transaction, and userrefs follow. */
	CHECK_EQ(write(h.go, "x", 1), 1);
	holder_reap(&h);
	int64_t t0 = txg();
	st = open_store();
	CHECK_EQ(nholds(), 0);
	CHECK_EQ(userrefs("pool", "a"), 0);
	CHECK_EQ(userrefs("pool", "b"), 0);
	CHECK_EQ(userrefs("pool/kid", "a"), 0);
	CHECK_EQ(txg(), t0 + 1);
	/* Nothing left to reap: an open writes nothing. */
	cairn_store_close(st);
	t0 = txg();
	st = open_store();
	CHECK_EQ(txg(), t0);
	check_consistent("temporary exit");
	cairn_store_close(st);
}

static void test_temporary_killed(void)
{
	/* A user hold on the same snapshot survives the reaping. */
	cairn_store *st = open_store();
	cairn_hold_item u = {"pool@a", "user"};
	CHECK_EQ(cairn_hold(st, &u, 1, false), 0);
	cairn_store_close(st);

	const char *snaps[] = {"pool@a", "pool@c"};
	holder_t h = spawn_holder("send-2", snaps, 2);
	CHECK_EQ(userrefs("pool", "a"), 2);
	CHECK_EQ(kill(h.pid, SIGKILL), 0);
	holder_reap(&h);
	st = open_store();
	seen_t s = holds_of(st, "pool@a");
	CHECK_EQ(s.n, 1);
	CHECK(!strcmp(s.tags, "user"));
	CHECK_EQ(userrefs("pool", "a"), 1);
	CHECK_EQ(userrefs("pool", "c"), 0);
	CHECK_EQ(cairn_release(st, &u, 1), 0);
	check_consistent("temporary killed");
	cairn_store_close(st);
}

/* A deferred destroy whose last hold is a reaped temporary one goes at the
 * reaping. */
static void test_temporary_defer(void)
{
	const char *snaps[] = {"pool@e"};
	holder_t h = spawn_holder("send-3", snaps, 1);
	cairn_store *st = open_store();
	cairn_destroy_opts o = {.defer = true};
	CHECK_EQ(cairn_destroy(st, "pool@e", &o), 0);
	CHECK(snap_id("pool", "e") > 0);
	cairn_store_close(st);
	CHECK_EQ(write(h.go, "x", 1), 1);
	holder_reap(&h);
	st = open_store();
	CHECK_EQ(snap_id("pool", "e"), -1);
	CHECK_EQ(nholds(), 0);
	check_consistent("temporary defer");
	cairn_store_close(st);
}

/* The owner has exited but its parent has not waited for it yet (a
 * zombie): it has exited, so its holds should go. */
static void test_temporary_zombie(void)
{
	const char *snaps[] = {"pool@c"};
	holder_t h = spawn_holder("send-4", snaps, 1);
	CHECK_EQ(write(h.go, "x", 1), 1);
	/* wait until the child is a zombie, without reaping it */
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	CHECK_EQ(waitid(P_PID, h.pid, &si, WEXITED | WNOWAIT), 0);
	cairn_store *st = open_store();
	int64_t left = nholds();
	if (left)
		fprintf(stderr, "zombie owner %d: its temporary hold was not reaped\n", h.pid);
	CHECK_EQ(left, 0);
	cairn_store_close(st);
	holder_reap(&h);
	st = open_store(); /* reaped by now in any case */
	CHECK_EQ(nholds(), 0);
	check_consistent("temporary zombie");
	cairn_store_close(st);
}

/* Rows written as if by an earlier process: same pid as a live process
 * (this one) but another start time, i.e. the pid was reused. */
static void test_pid_reuse(void)
{
	int me = getpid();
	uint64_t mine = pstart_of(me);
	CHECK(mine > 0);
	int64_t a = snap_id("pool", "a"), b = snap_id("pool", "b"), c = snap_id("pool", "c");
	/* a dead pid: a child that has come and gone */
	pid_t gone = fork();
	if (gone == 0)
		_exit(0);
	CHECK_EQ(waitpid(gone, NULL, 0), gone);
	char q[1024];
	snprintf(q, sizeof(q),
		 "BEGIN;"
		 "INSERT INTO hold VALUES(%lld, 'reused', 1700000000, %d, %llu);"
		 "INSERT INTO hold VALUES(%lld, 'alive', 1700000000, %d, %llu);"
		 "INSERT INTO hold VALUES(%lld, 'dead', 1700000000, %d, %llu);"
		 "UPDATE snapshot SET userrefs = userrefs + 1 WHERE id IN (%lld, %lld, %lld);"
		 "COMMIT;",
		 (long long)a, me, (unsigned long long)(mine + 12345), (long long)b, me,
		 (unsigned long long)mine, (long long)c, (int)gone, (unsigned long long)mine,
		 (long long)a, (long long)b, (long long)c);
	sql(q);
	cairn_store *st = open_store();
	/* the reused pid and the dead one are reaped; the live owner is kept */
	CHECK_EQ(userrefs("pool", "a"), 0);
	CHECK_EQ(userrefs("pool", "c"), 0);
	CHECK_EQ(userrefs("pool", "b"), 1);
	seen_t s = holds_of(st, "pool@b");
	CHECK_EQ(s.n, 1);
	CHECK(!strcmp(s.tags, "alive"));
	CHECK_EQ(s.pid, me);
	check_consistent("pid reuse");
	cairn_hold_item rel = {"pool@b", "alive"};
	CHECK_EQ(cairn_release(st, &rel, 1), 0);
	cairn_store_close(st);
}

/* This process's own temporary holds: kept across its own re-opens,
 * recorded with its pid and owner-file id, released normally; a failing
 * temporary batch applies nothing. */
static void test_temporary_self(void)
{
	cairn_store *st = open_store();
	cairn_hold_item h[] = {{"pool@a", "mine"}, {"pool@b", "mine"}};
	CHECK_EQ(cairn_hold(st, h, 2, true), 0);
	cairn_store_close(st);
	st = open_store();
	seen_t s = holds_of(st, "pool@b");
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.pid, getpid());
	CHECK_EQ(sql_int("SELECT COUNT(*) FROM hold WHERE pid=%d AND pstart < 0", getpid()), 2);
	cairn_hold_item bad[] = {{"pool@c", "mine2"}, {"pool@nosuch", "mine2"}};
	CHECK_EQ(cairn_hold(st, bad, 2, true), -ENOENT);
	CHECK_EQ(userrefs("pool", "c"), 0);
	CHECK_EQ(cairn_release(st, h, 2), 0);
	CHECK_EQ(nholds(), 0);
	check_consistent("temporary self");
	cairn_store_close(st);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	setup();
	test_batch_all_or_nothing();
	test_defer_destroy();
	test_temporary_exit();
	test_temporary_killed();
	test_temporary_defer();
	test_pid_reuse();
	test_temporary_self();
	test_temporary_zombie();
	if (!getenv("KEEP"))
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	UNIT_DONE();
}
