/* test_api.c - the public API's refusals of arguments a library user can
 * get wrong: cairn_dataset_create() with a type that is not a dataset type
 * (0, a snapshot, a bookmark, garbage) fails with -EINVAL and leaves no
 * catalog row behind (one used to be inserted, listing as a "snapshot"
 * without an '@', or not at all).  cairn_prune, cairn_send, cairn_recv
 * and cairn_list_open, whose options are required, fail with -EINVAL on
 * NULL ones (they used to dereference them).
 *
 * Every cairn_* function refuses a NULL it needs (the handle, a name, an
 * out pointer, an array, or a NULL entry inside an array of names,
 * properties or hold items) with -EINVAL, naming it in errdetail, and
 * leaves the store as it was: each such call runs in a child process of
 * its own, so one that crashes fails its check and the others still run.
 * And every call on a handle clears errdetail on entry: after a failure,
 * a call that succeeds leaves "" (some kept the earlier failure's text).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* ---- NULL arguments ---- */

static char store_path[300], target_path[300];

static const cairn_prop p_noname[] = {{"user:a", "1"}, {NULL, "1"}};
static const cairn_prop p_noval[] = {{"user:a", "1"}, {"user:b", NULL}};
static const cairn_prop p_keynoval[] = {{"keylocation", NULL}};
static const char *const snaps_null[] = {"pool@new", NULL};
static const char *const a_null[] = {"pool@a", NULL};
static const char *const names_null[] = {"pool", NULL};
static const uint8_t digest0[1][32];

static int no_hold(const char *snap, const char *tag, int64_t time, int pid, void *arg)
{
	(void)snap, (void)tag, (void)time, (void)pid, (void)arg;
	return 0;
}

/* Hold items whose second entry lacks its snapshot or its tag; the first
 * is valid, so applying it before looking at the second shows. */
#define ITEMS_NOSNAP ((cairn_hold_item[]){{.snapshot = "pool@a", .tag = "t"}, {.tag = "t"}})
#define ITEMS_NOTAG \
	((cairn_hold_item[]){{.snapshot = "pool@a", .tag = "t"}, {.snapshot = "pool@a"}})

/* X(kind, call): kind 1 = the call has a handle, so errdetail must say
 * why; 0 = no handle to say it in; 2 = a void call that must only not
 * crash (its value is ignored).  st is a handle of the child's own, l a
 * listing on it. */
#define NULL_CALLS(X)                                                                          \
	X(0, cairn_store_init(NULL, NULL))                                                     \
	X(0, cairn_store_open(NULL, &(cairn_store *){NULL}))                                  \
	X(0, cairn_store_open(store_path, NULL))                                               \
	X(0, cairn_name_check(NULL, false, NULL, 0))                                           \
	X(2, (cairn_store_set_warn(NULL, NULL, NULL), 0))                                      \
	X(2, (int)cairn_list_batches(NULL))                                                    \
	X(2, (cairn_user_props_free(NULL, 2), 0))                                              \
	X(0, cairn_config_get(NULL, "gc_batch", &(int64_t){0}, NULL))                         \
	X(1, cairn_config_get(st, NULL, &(int64_t){0}, NULL))                                 \
	X(1, cairn_config_get(st, "gc_batch", NULL, NULL))                                    \
	X(0, cairn_config_check_env(NULL))                                                     \
	X(0, cairn_config_set(NULL, "gc_batch", "1"))                                          \
	X(1, cairn_config_set(st, NULL, "1"))                                                  \
	X(1, cairn_config_set(st, "gc_batch", NULL))                                           \
	X(0, cairn_dataset_create(NULL, "pool/n", CAIRN_TYPE_FILESYSTEM, NULL, 0, false))     \
	X(1, cairn_dataset_create(st, NULL, CAIRN_TYPE_FILESYSTEM, NULL, 0, false))           \
	X(1, cairn_dataset_create(st, "pool/n", CAIRN_TYPE_FILESYSTEM, NULL, 1, false))       \
	X(1, cairn_dataset_create(st, "pool/n", CAIRN_TYPE_FILESYSTEM, p_noname, 2, false))   \
	X(1, cairn_dataset_create(st, "pool/n", CAIRN_TYPE_FILESYSTEM, p_noval, 2, false))    \
	X(1, cairn_dataset_create_key(st, "pool/n", CAIRN_TYPE_FILESYSTEM, p_noval, 2, true,  \
				      NULL))                                                   \
	X(0, cairn_dataset_set(NULL, "pool", p_noval, 1))                                      \
	X(1, cairn_dataset_set(st, NULL, p_noval, 1))                                          \
	X(1, cairn_dataset_set(st, "pool", NULL, 1))                                           \
	X(1, cairn_dataset_set(st, "pool", p_noname, 2))                                       \
	X(1, cairn_dataset_set(st, "pool", p_noval, 2))                                        \
	X(0, cairn_dataset_get(NULL, "pool", "compression", &(char *){NULL}, NULL))           \
	X(1, cairn_dataset_get(st, NULL, "compression", &(char *){NULL}, NULL))               \
	X(1, cairn_dataset_get(st, "pool", NULL, &(char *){NULL}, NULL))                      \
	X(1, cairn_dataset_get(st, "pool", "compression", NULL, NULL))                        \
	X(0, cairn_dataset_iter(NULL, count_ds, &(int){0}))                                   \
	X(1, cairn_dataset_iter(st, NULL, NULL))                                               \
	X(0, cairn_snapshot_create(NULL, snaps_null, 1, NULL))                                 \
	X(1, cairn_snapshot_create(st, NULL, 1, NULL))                                         \
	X(1, cairn_snapshot_create(st, snaps_null, 2, NULL))                                   \
	X(1, cairn_snapshot_create(st, snaps_null, 1,                                          \
				   &(cairn_snapshot_opts){.props = p_noval, .nprops = 2}))    \
	X(1, cairn_snapshot_create(st, snaps_null, 1,                                          \
				   &(cairn_snapshot_opts){.props = NULL, .nprops = 1}))       \
	X(0, cairn_restore(NULL, "pool@a", target_path, NULL))                                 \
	X(1, cairn_restore(st, NULL, target_path, NULL))                                       \
	X(1, cairn_restore(st, "pool@a", NULL, NULL))                                          \
	X(1, cairn_restore(st, "pool@a", target_path,                                          \
			   &(cairn_restore_opts){.paths = names_null, .npaths = 2}))          \
	X(0, cairn_diff(NULL, "pool@a", "pool@b", NULL))                                       \
	X(1, cairn_diff(st, NULL, "pool@b", NULL))                                             \
	X(1, cairn_diff(st, "pool@a", NULL, NULL))                                             \
	X(0, cairn_destroy(NULL, "pool@a", NULL))                                              \
	X(1, cairn_destroy(st, NULL, NULL))                                                    \
	X(0, cairn_rename(NULL, "pool@a", "pool@z", false, false))                             \
	X(1, cairn_rename(st, NULL, "pool@z", false, false))                                   \
	X(1, cairn_rename(st, "pool@a", NULL, false, false))                                   \
	X(0, cairn_dataset_inherit(NULL, "pool", "compression", false))                        \
	X(1, cairn_dataset_inherit(st, NULL, "compression", false))                            \
	X(1, cairn_prop_inherit(st, "pool", NULL, false, true))                                \
	X(0, cairn_rollback(NULL, "pool@b", NULL))                                             \
	X(1, cairn_rollback(st, NULL, NULL))                                                   \
	X(0, cairn_hold(NULL, ITEMS_NOSNAP, 1, false))                                         \
	X(1, cairn_hold(st, NULL, 1, false))                                                   \
	X(1, cairn_hold(st, ITEMS_NOSNAP, 2, false))                                           \
	X(1, cairn_hold(st, ITEMS_NOTAG, 2, false))                                            \
	X(0, cairn_release(NULL, ITEMS_NOSNAP, 1))                                             \
	X(1, cairn_release(st, NULL, 1))                                                       \
	X(1, cairn_release(st, ITEMS_NOSNAP, 2))                                               \
	X(1, cairn_release(st, ITEMS_NOTAG, 2))                                                \
	X(0, cairn_temp_holder(NULL, &(int64_t){0}))                                          \
	X(1, cairn_temp_holder(st, NULL))                                                      \
	X(0, cairn_release_temp(NULL, &(uint64_t){1}, 1, "t"))                                \
	X(1, cairn_release_temp(st, NULL, 1, "t"))                                             \
	X(0, cairn_holds_iter(NULL, "pool@a", no_hold, NULL))                                  \
	X(1, cairn_holds_iter(st, NULL, no_hold, NULL))                                        \
	X(1, cairn_holds_iter(st, "pool@a", NULL, NULL))                                       \
	X(0, cairn_snapshot_expand(NULL, "pool@a", &(char **){NULL}, &(size_t){0}))          \
	X(1, cairn_snapshot_expand(st, NULL, &(char **){NULL}, &(size_t){0}))                \
	X(1, cairn_snapshot_expand(st, "pool@a", NULL, &(size_t){0}))                         \
	X(1, cairn_snapshot_expand(st, "pool@a", &(char **){NULL}, NULL))                     \
	X(0, cairn_bookmark(NULL, "pool@a", "bm"))                                             \
	X(1, cairn_bookmark(st, NULL, "bm"))                                                   \
	X(1, cairn_bookmark(st, "pool@a", NULL))                                               \
	X(1, cairn_bookmark_many(st, NULL, 1, "bm"))                                           \
	X(1, cairn_bookmark_many(st, a_null, 2, "bm"))                                         \
	X(0, cairn_prune(NULL, "pool", &(cairn_prune_opts){.keep_last = 1}))                  \
	X(1, cairn_prune(st, NULL, &(cairn_prune_opts){.keep_last = 1}))                      \
	X(0, cairn_send(NULL, "pool@a", &(cairn_send_opts){.fd = -1}))                        \
	X(1, cairn_send(st, NULL, &(cairn_send_opts){.fd = -1}))                              \
	X(0, cairn_recv(NULL, &(cairn_recv_opts){.target = "pool/r", .fd = -1}))              \
	X(1, cairn_recv(st, &(cairn_recv_opts){.target = "pool/r", .fd = -1, .props = NULL,   \
					       .nprops = 1}))                                  \
	X(1, cairn_recv(st, &(cairn_recv_opts){.target = "pool/r", .fd = -1,                  \
					       .props = p_noname, .nprops = 2}))               \
	X(1, cairn_recv(st, &(cairn_recv_opts){.target = "pool/r", .fd = -1,                  \
					       .props = p_noval, .nprops = 2}))                \
	X(1, cairn_recv(st, &(cairn_recv_opts){.target = "pool/r", .fd = -1,                  \
					       .exclude = names_null, .nexclude = 2}))         \
	X(0, cairn_chunks_present(NULL, digest0, 1, (uint8_t[1]){0}))                         \
	X(1, cairn_chunks_present(st, NULL, 1, (uint8_t[1]){0}))                              \
	X(1, cairn_chunks_present(st, digest0, 1, NULL))                                       \
	X(0, cairn_chunks_peek(NULL, digest0, 1, (uint8_t[1]){0}))                            \
	X(1, cairn_chunks_peek(st, NULL, 1, (uint8_t[1]){0}))                                 \
	X(1, cairn_chunks_peek(st, digest0, 1, NULL))                                          \
	X(0, cairn_recv_abort(NULL, "pool"))                                                   \
	X(1, cairn_recv_abort(st, NULL))                                                       \
	X(0, cairn_gc(NULL, NULL, NULL))                                                       \
	X(0, cairn_gc_last_status(NULL, &(cairn_gc_status){0}))                               \
	X(1, cairn_gc_last_status(st, NULL))                                                   \
	X(0, cairn_verify(NULL, NULL))                                                         \
	X(1, cairn_verify(st, &(cairn_verify_opts){.targets = names_null, .ntargets = 2}))    \
	X(0, cairn_list_open(NULL, &(cairn_list_spec){0}, &(cairn_list *){NULL}))            \
	X(1, cairn_list_open(st, &(cairn_list_spec){0}, NULL))                                \
	X(1, cairn_list_open(st, &(cairn_list_spec){.roots = names_null, .nroots = 2},        \
			     &(cairn_list *){NULL}))                                            \
	X(0, cairn_list_next(NULL, &(cairn_list_cursor){0}, &(cairn_list_batch){0}))        \
	X(1, cairn_list_next(l, NULL, &(cairn_list_batch){0}))                                \
	X(1, cairn_list_next(l, &(cairn_list_cursor){0}, NULL))                               \
	X(0, cairn_snapshot_get_user(NULL, "pool@a", "user:a", &(char *){NULL}))             \
	X(1, cairn_snapshot_get_user(st, NULL, "user:a", &(char *){NULL}))                   \
	X(1, cairn_snapshot_get_user(st, "pool@a", NULL, &(char *){NULL}))                   \
	X(1, cairn_snapshot_get_user(st, "pool@a", "user:a", NULL))                           \
	X(0, cairn_prop_get_received(NULL, "pool", "user:a", &(char *){NULL}))               \
	X(1, cairn_prop_get_received(st, NULL, "user:a", &(char *){NULL}))                   \
	X(1, cairn_prop_get_received(st, "pool", NULL, &(char *){NULL}))                     \
	X(1, cairn_prop_get_received(st, "pool", "user:a", NULL))                             \
	X(0, cairn_snapshot_set_user(NULL, "pool@a", p_noval, 1))                              \
	X(1, cairn_snapshot_set_user(st, NULL, p_noval, 1))                                    \
	X(1, cairn_snapshot_set_user(st, "pool@a", NULL, 1))                                   \
	X(1, cairn_snapshot_set_user(st, "pool@a", p_noname, 2))                               \
	X(1, cairn_snapshot_set_user(st, "pool@a", p_noval, 2))                                \
	X(0, cairn_snapshot_user_get(NULL, "pool@a", "user:a", &(char *){NULL}, NULL))       \
	X(1, cairn_snapshot_user_get(st, NULL, "user:a", &(char *){NULL}, NULL))             \
	X(1, cairn_snapshot_user_get(st, "pool@a", NULL, &(char *){NULL}, NULL))             \
	X(1, cairn_snapshot_user_get(st, "pool@a", "user:a", NULL, NULL))                     \
	X(0, cairn_user_props(NULL, "pool", &(char **){NULL}, &(size_t){0}))                 \
	X(1, cairn_user_props(st, NULL, &(char **){NULL}, &(size_t){0}))                     \
	X(1, cairn_user_props(st, "pool", NULL, &(size_t){0}))                                \
	X(1, cairn_user_props(st, "pool", &(char **){NULL}, NULL))                            \
	X(0, cairn_space_get(NULL, "pool", &(cairn_space){0}))                                \
	X(1, cairn_space_get(st, NULL, &(cairn_space){0}))                                    \
	X(1, cairn_space_get(st, "pool", NULL))                                                \
	X(0, cairn_written_since(NULL, "pool@b", "a", &(uint64_t){0}))                        \
	X(1, cairn_written_since(st, NULL, "a", &(uint64_t){0}))                              \
	X(1, cairn_written_since(st, "pool@b", NULL, &(uint64_t){0}))                         \
	X(1, cairn_written_since(st, "pool@b", "a", NULL))                                     \
	X(0, cairn_store_available(NULL, &(uint64_t){0}))                                     \
	X(1, cairn_store_available(st, NULL))                                                  \
	X(0, cairn_load_key(NULL, "pool", NULL))                                               \
	X(1, cairn_load_key(st, NULL, NULL))                                                   \
	X(1, cairn_load_key_previous(st, NULL, NULL))                                          \
	X(0, cairn_key_previous_count(NULL, "pool", &(size_t){0}))                            \
	X(1, cairn_key_previous_count(st, NULL, &(size_t){0}))                                \
	X(1, cairn_key_previous_count(st, "pool", NULL))                                       \
	X(0, cairn_unload_key(NULL, "pool"))                                                   \
	X(1, cairn_unload_key(st, NULL))                                                       \
	X(0, cairn_change_key(NULL, "pool", NULL, 0, NULL))                                    \
	X(1, cairn_change_key(st, NULL, NULL, 0, NULL))                                        \
	X(1, cairn_change_key(st, "pool", NULL, 1, NULL))                                      \
	X(1, cairn_change_key(st, "pool", p_keynoval, 1, NULL))                                \
	X(0, cairn_encryption_roots(NULL, NULL, &(char **){NULL}, &(size_t){0}))             \
	X(1, cairn_encryption_roots(st, NULL, NULL, &(size_t){0}))                            \
	X(1, cairn_encryption_roots(st, NULL, &(char **){NULL}, NULL))                        \
	X(0, cairn_key_info(NULL, "pool", &(char *){NULL}, &(char *){NULL}, &(bool){0}))    \
	X(1, cairn_key_info(st, NULL, &(char *){NULL}, &(char *){NULL}, &(bool){0}))        \
	X(1, cairn_key_info(st, "pool", NULL, &(char *){NULL}, &(bool){0}))                 \
	X(1, cairn_key_info(st, "pool", &(char *){NULL}, NULL, &(bool){0}))                 \
	X(1, cairn_key_info(st, "pool", &(char *){NULL}, &(char *){NULL}, NULL))

static const int null_kind[] = {
#define X(kind, call) kind,
	NULL_CALLS(X)
#undef X
};
static const char *const null_text[] = {
#define X(kind, call) #call,
	NULL_CALLS(X)
#undef X
};

/* Runs NULL_CALLS' call number i. */
static int null_call(size_t i, cairn_store *st, cairn_list *l)
{
	size_t k = 0;
#define X(kind, call)           \
	if (i == k++)           \
		return (call);
	NULL_CALLS(X)
#undef X
	return -1;
}

/* What a child reports: the call's result and errdetail. */
typedef struct {
	int r;
	char detail[200];
} child_out;

/* Runs call i in a child with a handle (and a listing) of its own, so that
 * a crash is this check's failure only.  False when it crashed. */
static bool in_child(size_t i, child_out *out)
{
	int p[2];
	if (pipe(p) < 0)
		return false;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		cairn_store *st = NULL;
		cairn_list *l = NULL;
		cairn_list_spec spec = {0};
		if (cairn_store_open(store_path, &st) < 0 || cairn_list_open(st, &spec, &l) < 0)
			_exit(3);
		child_out o = {.r = null_call(i, st, l)};
		snprintf(o.detail, sizeof(o.detail), "%s", cairn_store_errdetail(st));
		if (write(p[1], &o, sizeof(o)) != sizeof(o))
			_exit(4);
		_exit(0); /* no close: a crash would have ended it here too */
	}
	close(p[1]);
	bool ok = pid > 0 && read(p[0], out, sizeof(*out)) == sizeof(*out);
	close(p[0]);
	int status = 0;
	if (pid > 0)
		waitpid(pid, &status, 0);
	return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int count_rows(cairn_store *st)
{
	cairn_list_spec spec = {.depth = -1, .types = 0xf};
	cairn_list *l = NULL;
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	int rows = 0, k;
	if (cairn_list_open(st, &spec, &l) < 0)
		return -1;
	while ((k = cairn_list_next(l, &cur, &b)) > 0)
		rows += k;
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	return rows;
}

static int count_holds(const char *snap, const char *tag, int64_t time, int pid, void *arg)
{
	(void)snap, (void)tag, (void)time, (void)pid;
	(*(int *)arg)++;
	return 0;
}

static void test_null_args(cairn_store *st)
{
	int rows = count_rows(st);
	CHECK(rows > 0);
	for (size_t i = 0; i < sizeof(null_kind) / sizeof(null_kind[0]); i++) {
		child_out o = {0};
		bool ran = in_child(i, &o);
		if (!ran)
			fprintf(stderr, "crashed: %s\n", null_text[i]);
		CHECK(ran);
		if (!ran || null_kind[i] == 2)
			continue;
		if (o.r != -EINVAL)
			fprintf(stderr, "%s: %d (%s), not -EINVAL\n", null_text[i], o.r,
				cairn_strerror(o.r));
		CHECK_EQ(o.r, -EINVAL);
		/* The refusal names the NULL, not some other reason. */
		if (null_kind[i] == 1 && !strstr(o.detail, " is NULL"))
			fprintf(stderr, "%s: errdetail \"%s\"\n", null_text[i], o.detail);
		CHECK(null_kind[i] == 0 || strstr(o.detail, " is NULL"));
		if (getenv("TEST_API_VERBOSE"))
			printf("%s: %s\n", null_text[i], o.detail);
	}
	/* The hold item that has the NULL says so in its own err. */
	cairn_hold_item items[] = {{.snapshot = "pool@a", .tag = "t", .err = 1},
				   {.snapshot = "pool@a"}};
	CHECK_EQ(cairn_hold(st, items, 2, false), -EINVAL);
	CHECK_EQ(items[0].err, 0);
	CHECK_EQ(items[1].err, -EINVAL);
	CHECK(strstr(items[1].why, "items[1].tag is NULL") != NULL);
	/* Nothing was made, changed or held, not even by an array's valid
	 * entries before its NULL one. */
	CHECK_EQ(count_rows(st), rows);
	int holds = 0;
	CHECK_EQ(cairn_holds_iter(st, "pool@a", count_holds, &holds), 0);
	CHECK_EQ(holds, 0);
	char **names = NULL;
	size_t n = 9;
	CHECK_EQ(cairn_user_props(st, "pool@a", &names, &n), 0);
	CHECK_EQ(n, 0);
	cairn_user_props_free(names, n);
	CHECK(access(target_path, F_OK) < 0);
}

/* ---- errdetail cleared by every call ---- */

static int send_to(cairn_store *st, const char *snap, int fd)
{
	cairn_send_opts so = {.fd = fd};
	return cairn_send(st, snap, &so);
}

/* A successful call number i on the store test_api made; -1 past the last. */
static int ok_call(int i, cairn_store *st, const char *src)
{
	char *v = NULL, *w = NULL, **names = NULL;
	size_t n = 0;
	int64_t x;
	uint64_t u;
	int r, k = 0;
	cairn_space sp;
	cairn_prop user = {"user:x", "1"};
	cairn_hold_item it = {.snapshot = "pool@a", .tag = "t"};
	switch (i) {
	case 0: return cairn_config_get(st, "gc_batch", &x, NULL);
	case 1: return cairn_config_set(st, "gc_batch", "1M");
	case 2: return cairn_config_check_env(st);
	case 3: return cairn_dataset_create(st, "pool/e1", CAIRN_TYPE_FILESYSTEM, NULL, 0, false);
	case 4:
		return cairn_dataset_create_key(st, "pool/e2", CAIRN_TYPE_FILESYSTEM, NULL, 0, false,
						NULL);
	case 5: return cairn_dataset_set(st, "pool", &user, 1);
	case 6:
		r = cairn_dataset_get(st, "pool", "user:x", &v, &w);
		free(v), free(w);
		return r;
	case 7: return cairn_dataset_iter(st, count_ds, &k);
	case 8: return cairn_snapshot_create(st, (const char *[]){"pool@c"}, 1, NULL);
	case 9: return cairn_diff(st, "pool@a", "pool@b", NULL);
	case 10: {
		char t[400];
		snprintf(t, sizeof(t), "%s.r", src);
		return cairn_restore(st, "pool@a", t, NULL);
	}
	case 11: return cairn_space_get(st, "pool", &sp);
	case 12: return cairn_written_since(st, "pool@b", "a", &u);
	case 13: return cairn_store_available(st, &u);
	case 14:
		r = cairn_user_props(st, "pool", &names, &n);
		cairn_user_props_free(names, n);
		return r;
	case 15:
		r = cairn_snapshot_get_user(st, "pool@a", "user:x", &v);
		free(v);
		return r;
	case 16:
		r = cairn_snapshot_user_get(st, "pool@a", "user:x", &v, &w);
		free(v), free(w);
		return r;
	case 17: return cairn_snapshot_set_user(st, "pool@a", &user, 1);
	case 18:
		r = cairn_prop_get_received(st, "pool", "user:x", &v);
		free(v);
		return r;
	case 19: return cairn_hold(st, &it, 1, false);
	case 20: return cairn_holds_iter(st, "pool@a", no_hold, NULL);
	case 21: return cairn_release(st, &it, 1);
	case 22: return cairn_temp_holder(st, &x);
	case 23: return cairn_release_temp(st, &u, 0, "t");
	case 24:
		r = cairn_snapshot_expand(st, "pool@a", &names, &n);
		for (size_t j = 0; j < n; j++)
			free(names[j]);
		free(names);
		return r;
	case 25: return cairn_bookmark(st, "pool@a", "pool#bm1");
	case 26: return cairn_bookmark_many(st, (const char *[]){"pool@b"}, 1, "bm2");
	case 27: return cairn_rename(st, "pool@c", "pool@c2", false, false);
	case 28: return cairn_destroy(st, "pool@c2", NULL);
	case 29: return cairn_rollback(st, "pool@b", NULL);
	case 30: return cairn_prune(st, "pool", &(cairn_prune_opts){.keep_last = 10});
	case 31: {
		int fd = open("/dev/null", O_WRONLY);
		r = send_to(st, "pool@a", fd);
		close(fd);
		return r;
	}
	case 32: return cairn_chunks_present(st, digest0, 1, (uint8_t[1]){0});
	case 33: return cairn_gc(st, &(cairn_gc_opts){.cache_capacity = -1, .threads = 1}, NULL);
	case 34: return cairn_gc_last_status(st, &(cairn_gc_status){0});
	case 35: return cairn_verify(st, &(cairn_verify_opts){.threads = 1});
	case 36: {
		cairn_list *l = NULL;
		cairn_list_cursor cur = {0};
		cairn_list_batch b = {0};
		r = cairn_list_open(st, &(cairn_list_spec){0}, &l);
		if (r == 0)
			r = cairn_list_next(l, &cur, &b) > 0 ? 0 : -1;
		cairn_list_batch_free(&b);
		cairn_list_close(l);
		return r;
	}
	case 37:
		r = cairn_encryption_roots(st, NULL, &names, &n);
		for (size_t j = 0; j < n; j++)
			free(names[j]);
		free(names);
		return r;
	case 38: return cairn_dataset_inherit(st, "pool", "user:x", false);
	case 39: return cairn_prop_inherit(st, "pool", "compression", false, false);
	case 40: {
		char t[400];
		snprintf(t, sizeof(t), "%s.stream", src);
		int fd = open(t, O_RDWR | O_CREAT | O_TRUNC, 0600);
		r = send_to(st, "pool@a", fd);
		cairn_recv_opts ro = {.target = "rcv", .fd = fd};
		if (r == 0 && lseek(fd, 0, SEEK_SET) == 0)
			r = cairn_recv(st, &ro);
		close(fd);
		unlink(t);
		return r;
	}
	}
	return -1 - 1000 * (i > 40);
}

/* Every call on a handle starts by clearing errdetail: after a failure
 * with a detail, a call that succeeds leaves "". */
static void test_errdetail_cleared(cairn_store *st, const char *src)
{
	for (int i = 0;; i++) {
		char *v = NULL;
		CHECK(cairn_dataset_get(st, "nope", "compression", &v, NULL) < 0);
		CHECK(cairn_store_errdetail(st)[0] != 0);
		int r = ok_call(i, st, src);
		if (r == -1001)
			break;
		if (r != 0)
			fprintf(stderr, "ok_call %d: %s (%s)\n", i, cairn_strerror(r),
				cairn_store_errdetail(st));
		CHECK_EQ(r, 0);
		if (cairn_store_errdetail(st)[0])
			fprintf(stderr, "ok_call %d left \"%s\"\n", i, cairn_store_errdetail(st));
		CHECK_EQ(cairn_store_errdetail(st)[0], 0);
	}
}

/* Results returned through out pointers are NULL after any failure, the
 * entry check's (st NULL) included, so a caller may free them either way. */
static void test_outputs_cleared(cairn_store *st)
{
	static char junk[] = "junk";
	char *a = junk, *b = junk, **v = (char **)junk;
	size_t n = 7;
	cairn_list *l = (cairn_list *)junk;
	bool loaded;
	CHECK(cairn_dataset_get(NULL, "pool", "compression", &a, &b) < 0);
	CHECK(!a && !b);
	a = b = junk;
	CHECK(cairn_dataset_get(st, "nope", "compression", &a, &b) < 0);
	CHECK(!a && !b);
	a = junk;
	CHECK(cairn_snapshot_get_user(NULL, "pool@a", "user:x", &a) < 0);
	CHECK(!a);
	a = junk;
	CHECK(cairn_snapshot_get_user(st, "pool@nope", "user:x", &a) < 0);
	CHECK(!a);
	a = junk;
	CHECK(cairn_prop_get_received(NULL, "pool", "compression", &a) < 0);
	CHECK(!a);
	a = b = junk;
	CHECK(cairn_snapshot_user_get(NULL, "pool@a", "user:x", &a, &b) < 0);
	CHECK(!a && !b);
	CHECK(cairn_snapshot_expand(NULL, "pool@a", &v, &n) < 0);
	CHECK(!v && n == 0);
	v = (char **)junk, n = 7;
	CHECK(cairn_user_props(NULL, "pool", &v, &n) < 0);
	CHECK(!v && n == 0);
	v = (char **)junk, n = 7;
	CHECK(cairn_encryption_roots(NULL, NULL, &v, &n) < 0);
	CHECK(!v && n == 0);
	a = b = junk;
	CHECK(cairn_key_info(NULL, "pool", &a, &b, &loaded) < 0);
	CHECK(!a && !b);
	cairn_list_spec spec = {0};
	CHECK(cairn_list_open(NULL, &spec, &l) < 0);
	CHECK(!l);
}

/* ---- sync's bases: base_guids, and base_datasets beside it ---- */

static void note_kind(const char *kind, const char *from, const char *to, uint64_t bytes,
		      void *arg)
{
	(void)from, (void)to, (void)bytes;
	snprintf(arg, 32, "%s", kind);
}

/* What kind of stream pool@b goes as, pool@a's guid being the receiver's
 * one snapshot, in the dataset rel (rels NULL: anywhere). */
static const char *sync_kind(cairn_store *st, uint64_t ga, const char *const *rels, char *kind)
{
	kind[0] = 0;
	cairn_send_opts o = {.fd = -1, .dry_run = true, .estimate = note_kind, .arg = kind,
			     .base_guids = &ga, .nbase_guids = 1, .base_datasets = rels};
	CHECK_EQ(cairn_send(st, "pool@b", &o), 0);
	return kind;
}

static void test_sync_bases(cairn_store *st)
{
	const char *root = "pool";
	cairn_list_spec spec = {.roots = &root, .nroots = 1, .depth = 1,
				.types = CAIRN_TYPE_SNAPSHOT, .fields = 1u << CAIRN_F_GUID};
	cairn_list *l = NULL;
	CHECK_EQ(cairn_list_open(st, &spec, &l), 0);
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	uint64_t ga = 0;
	while (l && cairn_list_next(l, &cur, &b) > 0)
		for (size_t i = 0; i < b.n; i++)
			if (!strcmp(b.name[i], "pool@a"))
				ga = b.field[CAIRN_F_GUID][i];
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	CHECK(ga != 0);
	char kind[32];
	CHECK(!strcmp(sync_kind(st, ga, NULL, kind), "incremental"));
	CHECK(!strcmp(sync_kind(st, ga, (const char *[]){""}, kind), "incremental"));
	/* the guid in another of the receiver's datasets: no base here */
	CHECK(!strcmp(sync_kind(st, ga, (const char *[]){"/other"}, kind), "full"));
	/* a NULL entry: that guid counts wherever it is (as base_datasets NULL) */
	CHECK(!strcmp(sync_kind(st, ga, (const char *[]){NULL}, kind), "incremental"));
}

int main(void)
{
	if (!mkdtemp(tmpdir) && !mkdtemp(strcpy(tmpdir, "/tmp/test_api.XXXXXX"))) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(store_path, sizeof(store_path), "%s/store", tmpdir);
	/* An init that fails says why; the next one, succeeding, leaves "". */
	char imp[300];
	snprintf(imp, sizeof(imp), "%s/imp", tmpdir);
	cairn_init_opts nobucket = {.import = true};
	CHECK(cairn_store_init(imp, &nobucket) < 0);
	CHECK(cairn_store_init_errdetail()[0] != 0);
	cairn_init_opts io = {.skip_atime_check = true};
	CHECK_EQ(cairn_store_init(store_path, &io), 0);
	CHECK_EQ(cairn_store_init_errdetail()[0], 0);
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
	/* skip_missing without recursive: zfs refuses send -s without -R,
	 * and so does the library, not only the CLI (nothing written). */
	cairn_send_opts skip = {.fd = -1, .skip_missing = true};
	CHECK_EQ(cairn_send(st, "pool@x", &skip), -EINVAL);
	CHECK(strstr(cairn_store_errdetail(st), "pool@x: -s (skip missing snapshots) needs -R"));
	CHECK_EQ(skip.bytes, 0);
	CHECK_EQ(cairn_recv(st, NULL), -EINVAL);
	l = (cairn_list *)&n;
	CHECK_EQ(cairn_list_open(st, NULL, &l), -EINVAL);
	CHECK(l == NULL);

	/* A source and two snapshots for the calls below. */
	char src[300];
	snprintf(src, sizeof(src), "%s/src", tmpdir);
	snprintf(target_path, sizeof(target_path), "%s/restored", tmpdir);
	CHECK_EQ(mkdir(src, 0700), 0);
	cairn_prop sp = {"source", src};
	CHECK_EQ(cairn_dataset_set(st, "pool", &sp, 1), 0);
	CHECK_EQ(cairn_snapshot_create(st, (const char *[]){"pool@a"}, 1, NULL), 0);
	CHECK_EQ(cairn_snapshot_create(st, (const char *[]){"pool@b"}, 1, NULL), 0);

	test_null_args(st);
	test_errdetail_cleared(st, src);
	test_outputs_cleared(st);
	test_sync_bases(st);

	cairn_store_close(st);
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	UNIT_DONE();
}
