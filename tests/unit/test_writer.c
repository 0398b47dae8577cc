/* test_writer.c - the writer registry judges liveness by lock, not pid.
 *
 * A registered writer is alive to writer_oldest() (even from another open
 * of the file in the same process: OFD locks conflict across open files);
 * unregistering, dying (kill -9) or never having held the lock makes an
 * entry dead and removed.  Entries that are not regular files (a FIFO, a
 * symlink) neither hang nor redirect the scan, and are removed.  Young
 * hidden (unpublished) entries are left alone; old ones go.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cairn.h"
#include "store/store.h"
#include "catalog/writer.h"
#include "unit.h"

static char tmpdir[] = "/dev/shm/test_writer.XXXXXX";
static char store_path[300], wdir[320];

static int count_entries(void)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", wdir);
	FILE *f = popen(cmd, "r");
	int n = -1;
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

static bool exists(const char *name)
{
	char p[400];
	snprintf(p, sizeof(p), "%s/%s", wdir, name);
	struct stat sb;
	return lstat(p, &sb) == 0;
}

static void test_register_unregister(cairn_store *st)
{
	int64_t before = now_ns(), oldest;
	CHECK_EQ(writer_register(st), 0);
	CHECK_EQ(writer_register(st), 0); /* counted */
	CHECK_EQ(count_entries(), 1);
	CHECK_EQ(writer_oldest(st, &oldest), 0);
	CHECK(oldest >= before && oldest <= now_ns());
	writer_unregister(st);
	CHECK_EQ(count_entries(), 1); /* one registration left */
	writer_unregister(st);
	CHECK_EQ(count_entries(), 0);
	CHECK_EQ(writer_oldest(st, &oldest), 0);
	CHECK_EQ(oldest, INT64_MAX);
}

/* An unlocked entry naming this live process, with its real start time
 * (a reused pid, or a registration by an older version): dead. */
static void test_unlocked_live_pid(cairn_store *st)
{
	char name[64], p[400];
	snprintf(name, sizeof(name), "%d.%llu", (int)getpid(),
		 (unsigned long long)process_start_time(getpid()));
	snprintf(p, sizeof(p), "%s/%s", wdir, name);
	FILE *f = fopen(p, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("1000\n", f);
		fclose(f);
	}
	int64_t oldest;
	CHECK_EQ(writer_oldest(st, &oldest), 0);
	CHECK_EQ(oldest, INT64_MAX);
	CHECK(!exists(name));
}

static void test_not_regular(cairn_store *st)
{
	char p[400];
	snprintf(p, sizeof(p), "%s/fifo", wdir);
	CHECK_EQ(mkfifo(p, 0600), 0);
	snprintf(p, sizeof(p), "%s/1.2.3", wdir);
	CHECK_EQ(symlink("/etc/passwd", p), 0);
	int64_t oldest;
	alarm(20); /* a hang is a failure, not a stuck test */
	CHECK_EQ(writer_oldest(st, &oldest), 0);
	alarm(0);
	CHECK_EQ(oldest, INT64_MAX);
	CHECK(!exists("fifo"));
	CHECK(!exists("1.2.3"));
	struct stat sb;
	CHECK_EQ(stat("/etc/passwd", &sb), 0);
}

static void test_hidden(cairn_store *st)
{
	char young[400], old[400];
	snprintf(young, sizeof(young), "%s/.new.young", wdir);
	snprintf(old, sizeof(old), "%s/.new.old", wdir);
	close(open(young, O_CREAT | O_WRONLY, 0600));
	close(open(old, O_CREAT | O_WRONLY, 0600));
	struct timespec ts[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
	CHECK_EQ(utimensat(AT_FDCWD, old, ts, 0), 0);
	int64_t oldest;
	CHECK_EQ(writer_oldest(st, &oldest), 0);
	CHECK_EQ(oldest, INT64_MAX);
	CHECK(exists(".new.young"));
	CHECK(!exists(".new.old"));
	unlink(young);
}

/* A writer in a child: alive while it runs, dead once killed. */
static void test_killed(cairn_store *st)
{
	int up[2];
	CHECK_EQ(pipe(up), 0);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		cairn_store *cst;
		int r = cairn_store_open(store_path, &cst);
		if (r == 0)
			r = writer_register(cst);
		if (write(up[1], &r, sizeof(r)) != sizeof(r))
			_exit(2);
		pause();
		_exit(0);
	}
	int r = -1;
	CHECK_EQ(read(up[0], &r, sizeof(r)), sizeof(r));
	CHECK_EQ(r, 0);
	int64_t oldest;
	CHECK_EQ(writer_oldest(st, &oldest), 0);
	CHECK(oldest != INT64_MAX);
	CHECK_EQ(count_entries(), 1);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, NULL, 0), pid);
	CHECK_EQ(writer_oldest(st, &oldest), 0);
	CHECK_EQ(oldest, INT64_MAX);
	CHECK_EQ(count_entries(), 0);
	close(up[0]);
	close(up[1]);
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
	snprintf(store_path, sizeof(store_path), "%s/store", tmpdir);
	snprintf(wdir, sizeof(wdir), "%s/writers", store_path);
	cairn_init_opts io = {.skip_atime_check = true};
	CHECK_EQ(cairn_store_init(store_path, &io), 0);
	cairn_store *st = NULL;
	CHECK_EQ(cairn_store_open(store_path, &st), 0);
	if (st) {
		int64_t oldest;
		CHECK_EQ(writer_oldest(st, &oldest), 0); /* creates writers/ */
		test_register_unregister(st);
		test_unlocked_live_pid(st);
		test_not_regular(st);
		test_hidden(st);
		test_killed(st);
		cairn_store_close(st);
	}
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	UNIT_DONE();
}
