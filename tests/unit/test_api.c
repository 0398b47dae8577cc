/* test_api.c - the public API's refusals of arguments a library user can
 * get wrong: cairn_dataset_create() with a type that is not a dataset type
 * (0, a snapshot, a bookmark, garbage) fails with -EINVAL and leaves no
 * catalog row behind (one used to be inserted, listing as a "snapshot"
 * without an '@', or not at all).  cairn_prune, cairn_send, cairn_recv
 * and cairn_list_open, whose options are required, fail with -EINVAL on
 * NULL ones (they used to dereference them).
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn.h"
#include "unit.h"

static char tmpdir[] = "/dev/shm/test_api.XXXXXX";

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb, (void)flag, (void)f;
	return remove(p);
}

static int count_ds(const char *name, cairn_type type, void *arg)
{
	(void)name, (void)type;
	(*(int *)arg)++;
	return 0;
}

int main(void)
{
	if (!mkdtemp(tmpdir) && !mkdtemp(strcpy(tmpdir, "/tmp/test_api.XXXXXX"))) {
		perror("mkdtemp");
		return 1;
	}
	char store_path[300];
	snprintf(store_path, sizeof(store_path), "%s/store", tmpdir);
	cairn_init_opts io = {.skip_atime_check = true};
	CHECK_EQ(cairn_store_init(store_path, &io), 0);
	cairn_store *st = NULL;
	CHECK_EQ(cairn_store_open(store_path, &st), 0);
	if (!st)
		UNIT_DONE();

	CHECK_EQ(cairn_dataset_create(st, "pool", CAIRN_TYPE_FILESYSTEM, NULL, 0, false), 0);
	static const int bad[] = {0, CAIRN_TYPE_SNAPSHOT, CAIRN_TYPE_BOOKMARK, 3, 99, -1};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[64];
		snprintf(name, sizeof(name), "pool/t%zu", i);
		CHECK_EQ(cairn_dataset_create(st, name, (cairn_type)bad[i], NULL, 0, false), -EINVAL);
		CHECK(strstr(cairn_store_errdetail(st), name) != NULL);
		/* With the key variant and parents too. */
		snprintf(name, sizeof(name), "pool/p%zu/c", i);
		CHECK_EQ(cairn_dataset_create_key(st, name, (cairn_type)bad[i], NULL, 0, true, NULL),
			 -EINVAL);
	}
	int n = 0;
	CHECK_EQ(cairn_dataset_iter(st, count_ds, &n), 0);
	CHECK_EQ(n, 1);
	/* A listing of every type sees pool alone. */
	cairn_list_spec spec = {.depth = -1, .types = 0xf};
	cairn_list *l = NULL;
	CHECK_EQ(cairn_list_open(st, &spec, &l), 0);
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	int rows = 0, k;
	while (l && (k = cairn_list_next(l, &cur, &b)) > 0)
		rows += k;
	CHECK_EQ(rows, 1);
	cairn_list_batch_free(&b);
	cairn_list_close(l);

	/* The two dataset types still work. */
	CHECK_EQ(cairn_dataset_create(st, "pool/fs", CAIRN_TYPE_FILESYSTEM, NULL, 0, false), 0);
	CHECK_EQ(cairn_dataset_create(st, "pool/vol", CAIRN_TYPE_VOLUME, NULL, 0, false), 0);

	/* Required options left NULL: an error, not a crash. */
	CHECK_EQ(cairn_prune(st, "pool", NULL), -EINVAL);
	CHECK(cairn_store_errdetail(st)[0] != 0);
	CHECK_EQ(cairn_send(st, "pool@x", NULL), -EINVAL);
	CHECK_EQ(cairn_recv(st, NULL), -EINVAL);
	l = (cairn_list *)&n;
	CHECK_EQ(cairn_list_open(st, NULL, &l), -EINVAL);
	CHECK(l == NULL);

	cairn_store_close(st);
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	UNIT_DONE();
}
