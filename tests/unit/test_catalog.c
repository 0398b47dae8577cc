/* test_catalog.c - the SQLite catalog (lib/catalog/catalog.h): create/open, txg
 * accounting, settings, datasets and subtrees, properties, snapshots and
 * their order, roots, rollback and read isolation. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "unit.h"

static char tmpdir[] = "/dev/shm/test_catalog.XXXXXX";
static char dbpath[256];

/* The txg as stored, read behind the API's back. */
static int64_t stored_txg(catalog_t *c)
{
	sqlite3_stmt *s;
	int64_t v = -1;
	if (sqlite3_prepare_v2(catalog_db(c), "SELECT value FROM meta WHERE key='txg'", -1, &s,
			       NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static int64_t count_rows(catalog_t *c, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -1;
	if (sqlite3_prepare_v2(catalog_db(c), sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static int64_t add_ds(catalog_t *c, const char *name, int64_t parent, uint64_t txg)
{
	ds_row_t r = {.name = (char *)name, .parent = parent, .type = CAIRN_TYPE_FILESYSTEM,
		      .guid = 0x1000 + txg, .createtxg = txg, .creation = 1700000000};
	int e = catalog_ds_insert(c, &r);
	CHECK_EQ(e, 0);
	if (e)
		fprintf(stderr, "  insert %s: %s\n", name, catalog_errmsg(c));
	CHECK(r.id > 0);
	return r.id;
}

static void test_create_open(void)
{
	catalog_t *c = NULL;
	CHECK_EQ(catalog_create(dbpath), 0);
	/* A second create on an existing catalog fails and harms nothing. */
	CHECK(catalog_create(dbpath) < 0);
	CHECK_EQ(catalog_open(dbpath, &c), 0);
	CHECK(c != NULL);
	if (!c)
		exit(1);
	CHECK(catalog_db(c) != NULL);
	CHECK_EQ(stored_txg(c), 0);
	catalog_close(c);
	catalog_close(NULL);

	/* Missing file, not a database, foreign database, wrong format. */
	char p[300];
	snprintf(p, sizeof(p), "%s/missing.db", tmpdir);
	c = (catalog_t *)1;
	CHECK(catalog_open(p, &c) < 0);
	CHECK(c == NULL);
	CHECK(access(p, F_OK) != 0); /* open never creates */

	snprintf(p, sizeof(p), "%s/garbage.db", tmpdir);
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	CHECK(fd >= 0);
	char junk[4096];
	memset(junk, 'j', sizeof(junk));
	CHECK_EQ(write(fd, junk, sizeof(junk)), (long)sizeof(junk));
	close(fd);
	int r = catalog_open(p, &c);
	CHECK(r == CAIRN_ENOTSTORE || r == CAIRN_ECORRUPT);
	CHECK(c == NULL);

	snprintf(p, sizeof(p), "%s/foreign.db", tmpdir);
	sqlite3 *db;
	CHECK_EQ(sqlite3_open(p, &db), SQLITE_OK);
	CHECK_EQ(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	CHECK_EQ(catalog_open(p, &c), CAIRN_ENOTSTORE);
	CHECK(c == NULL);

	snprintf(p, sizeof(p), "%s/future.db", tmpdir);
	CHECK_EQ(catalog_create(p), 0);
	CHECK_EQ(sqlite3_open(p, &db), SQLITE_OK);
	CHECK_EQ(sqlite3_exec(db, "UPDATE meta SET value=2 WHERE key='format'", NULL, NULL, NULL),
		 SQLITE_OK);
	sqlite3_close(db);
	CHECK_EQ(catalog_open(p, &c), CAIRN_EVERSION);
	CHECK(c == NULL);
}

static void test_txg(catalog_t *c)
{
	int64_t t0 = stored_txg(c);
	uint64_t txg = 0, txg2 = 0;
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	CHECK_EQ(txg, t0 + 1);
	/* Many changes, one transaction: one txg. */
	for (int i = 0; i < 10; i++) {
		char k[32];
		snprintf(k, sizeof(k), "txgtest%d", i);
		CHECK_EQ(catalog_config_set(c, k, i), 0);
	}
	CHECK_EQ(catalog_commit(c), 0);
	CHECK_EQ(stored_txg(c), t0 + 1);

	CHECK_EQ(catalog_begin_write(c, &txg2), 0);
	CHECK_EQ(txg2, txg + 1);
	CHECK_EQ(catalog_commit(c), 0);
	CHECK_EQ(stored_txg(c), t0 + 2);

	/* A rolled-back transaction does not advance the txg... */
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	CHECK_EQ(txg, txg2 + 1);
	catalog_rollback(c);
	CHECK_EQ(stored_txg(c), t0 + 2);
	/* ...so the next committed one gets the same number. */
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	CHECK_EQ(txg, txg2 + 1);
	CHECK_EQ(catalog_commit(c), 0);

	/* Reads and changes outside a write transaction never touch it. */
	int64_t v;
	CHECK_EQ(catalog_config_get(c, "txgtest3", &v), 0);
	CHECK_EQ(stored_txg(c), t0 + 3);
	/* rollback with nothing open is harmless */
	catalog_rollback(c);
	CHECK_EQ(stored_txg(c), t0 + 3);

	/* The txg survives close and reopen. */
	catalog_close(c);
	catalog_t *c2;
	CHECK_EQ(catalog_open(dbpath, &c2), 0);
	CHECK_EQ(catalog_begin_write(c2, &txg), 0);
	CHECK_EQ(txg, t0 + 4);
	catalog_rollback(c2);
	catalog_close(c2);
}

static void test_config(catalog_t *c)
{
	int64_t v = 12345;
	CHECK_EQ(catalog_config_get(c, "nosuch", &v), -ENOENT);
	CHECK_EQ(v, 12345); /* untouched on failure */
	uint64_t txg;
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	CHECK_EQ(catalog_config_set(c, "chunk_size", 1 << 20), 0);
	CHECK_EQ(catalog_config_set(c, "neg", -42), 0);
	CHECK_EQ(catalog_config_set(c, "big", INT64_MAX), 0);
	CHECK_EQ(catalog_config_set(c, "min", INT64_MIN), 0);
	CHECK_EQ(catalog_commit(c), 0);
	CHECK_EQ(catalog_config_get(c, "chunk_size", &v), 0);
	CHECK_EQ(v, 1 << 20);
	CHECK_EQ(catalog_config_get(c, "neg", &v), 0);
	CHECK_EQ(v, -42);
	CHECK_EQ(catalog_config_get(c, "big", &v), 0);
	CHECK(v == INT64_MAX);
	CHECK_EQ(catalog_config_get(c, "min", &v), 0);
	CHECK(v == INT64_MIN);
	/* overwrite */
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	CHECK_EQ(catalog_config_set(c, "chunk_size", 4096), 0);
	CHECK_EQ(catalog_commit(c), 0);
	CHECK_EQ(catalog_config_get(c, "chunk_size", &v), 0);
	CHECK_EQ(v, 4096);
	/* keys are exact */
	CHECK_EQ(catalog_config_get(c, "CHUNK_SIZE", &v), -ENOENT);
	CHECK_EQ(catalog_config_get(c, "chunk_size ", &v), -ENOENT);
}

/* ds ids by name for the subtree checks */
static const char *ds_names[] = {
	"tan",	      "tank",	   "tank-x",   "tank.x",     "tank/a",	  "tank/a-b",
	"tank/a.b",   "tank/a/b",  "tank/a/b/c", "tank/b",   "tank/zzz",  "tank0",
	"tank2",      "tank2/a",   "tankz",    "tank:x",     "other",	  "other/tank",
	"tank/a0",    "tank/a/0",
};
#define NDS (sizeof(ds_names) / sizeof(ds_names[0]))
static int64_t ds_ids[NDS];

static int64_t id_of(const char *name)
{
	for (size_t i = 0; i < NDS; i++)
		if (!strcmp(ds_names[i], name))
			return ds_ids[i];
	return -1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Checks subtree(root) against a straightforward reference: every name
 * equal to root or starting with "root/", sorted with strcmp. */
static void check_subtree(catalog_t *c, const char *root)
{
	const char *want[NDS];
	size_t nw = 0, rl = strlen(root);
	for (size_t i = 0; i < NDS; i++)
		if (!strcmp(ds_names[i], root) ||
		    (!strncmp(ds_names[i], root, rl) && ds_names[i][rl] == '/'))
			want[nw++] = ds_names[i];
	qsort(want, nw, sizeof(want[0]), cmp_str);
	int64_t *ids = NULL;
	size_t n = 99;
	CHECK_EQ(catalog_ds_subtree(c, id_of(root), &ids, &n), 0);
	CHECK_EQ(n, nw);
	bool same = n == nw;
	for (size_t i = 0; same && i < n; i++)
		same = ids[i] == id_of(want[i]);
	CHECK(same);
	if (!same) {
		fprintf(stderr, "  subtree(%s): got", root);
		for (size_t i = 0; i < n; i++) {
			ds_row_t r = {0};
			catalog_ds_by_id(c, ids[i], &r);
			fprintf(stderr, " %s", r.name ? r.name : "?");
			ds_row_clear(&r);
		}
		fprintf(stderr, "; want");
		for (size_t i = 0; i < nw; i++)
			fprintf(stderr, " %s", want[i]);
		fprintf(stderr, "\n");
	}
	free(ids);
}

static void test_datasets(catalog_t *c)
{
	uint64_t txg;
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	/* Inserted out of name order on purpose. */
	for (size_t k = 0; k < NDS; k++) {
		size_t i = (k * 7) % NDS; /* 7 is coprime with NDS (20) */
		const char *slash = strrchr(ds_names[i], '/');
		int64_t parent = 0;
		if (slash) {
			char p[64];
			snprintf(p, sizeof(p), "%.*s", (int)(slash - ds_names[i]), ds_names[i]);
			parent = id_of(p);
			if (parent <= 0) /* parent not inserted yet: insert order only matters for ids */
				parent = 0;
		}
		ds_ids[i] = add_ds(c, ds_names[i], parent, txg);
	}
	CHECK_EQ(catalog_commit(c), 0);

	/* lookups */
	ds_row_t r = {0};
	CHECK_EQ(catalog_ds_by_name(c, "tank/a/b", &r), 0);
	CHECK_EQ(r.id, id_of("tank/a/b"));
	CHECK(r.name && !strcmp(r.name, "tank/a/b"));
	CHECK_EQ(r.type, CAIRN_TYPE_FILESYSTEM);
	CHECK_EQ(r.createtxg, txg);
	CHECK(r.guid == 0x1000 + txg);
	CHECK_EQ(r.creation, 1700000000);
	ds_row_clear(&r);
	CHECK(r.name == NULL);
	ds_row_clear(&r); /* twice is fine */
	CHECK_EQ(catalog_ds_by_id(c, id_of("tank2"), &r), 0);
	CHECK(r.name && !strcmp(r.name, "tank2"));
	ds_row_clear(&r);
	CHECK_EQ(catalog_ds_by_name(c, "tank/nosuch", &r), -ENOENT);
	CHECK_EQ(catalog_ds_by_name(c, "TANK", &r), -ENOENT);
	CHECK_EQ(catalog_ds_by_name(c, "tank/", &r), -ENOENT);
	CHECK_EQ(catalog_ds_by_id(c, 999999, &r), -ENOENT);

	/* a volume, a guid with the top bit set */
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	ds_row_t v = {.name = "vol1", .type = CAIRN_TYPE_VOLUME, .guid = 0xfedcba9876543210ull,
		      .createtxg = txg, .creation = -5};
	CHECK_EQ(catalog_ds_insert(c, &v), 0);
	/* duplicate name: -EEXIST, and the transaction is still usable */
	ds_row_t dup = {.name = "tank/a", .type = CAIRN_TYPE_FILESYSTEM, .createtxg = txg};
	CHECK_EQ(catalog_ds_insert(c, &dup), -EEXIST);
	ds_row_t after = {.name = "vol2", .type = CAIRN_TYPE_VOLUME, .createtxg = txg};
	CHECK_EQ(catalog_ds_insert(c, &after), 0);
	CHECK_EQ(catalog_commit(c), 0);
	CHECK_EQ(catalog_ds_by_name(c, "vol1", &r), 0);
	CHECK_EQ(r.type, CAIRN_TYPE_VOLUME);
	CHECK(r.guid == 0xfedcba9876543210ull);
	CHECK_EQ(r.creation, -5);
	ds_row_clear(&r);
	CHECK_EQ(catalog_ds_by_name(c, "vol2", &r), 0);
	ds_row_clear(&r);
	CHECK_EQ(count_rows(c, "SELECT count(*) FROM dataset WHERE name='tank/a'"), 1);

	/* subtrees, against the reference */
	const char *roots[] = {"tank", "tank/a", "tank/a/b", "tank/a/b/c", "tank2", "tan",
			       "other", "tank-x", "tank/zzz", "tank/a-b"};
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		check_subtree(c, roots[i]);
	/* the spelled-out expectation for the classic case */
	int64_t *ids = NULL;
	size_t n = 0;
	CHECK_EQ(catalog_ds_subtree(c, id_of("tank"), &ids, &n), 0);
	const char *exp[] = {"tank",	 "tank/a",   "tank/a-b", "tank/a.b", "tank/a/0",
			     "tank/a/b", "tank/a/b/c", "tank/a0", "tank/b",	 "tank/zzz"};
	CHECK_EQ(n, sizeof(exp) / sizeof(exp[0]));
	for (size_t i = 0; i < n && i < sizeof(exp) / sizeof(exp[0]); i++)
		CHECK_EQ(ids[i], id_of(exp[i]));
	for (size_t i = 0; i < n; i++)
		CHECK(ids[i] != id_of("tank2") && ids[i] != id_of("tank0") &&
		      ids[i] != id_of("tank-x") && ids[i] != id_of("other/tank"));
	free(ids);
	/* an unknown id: nothing (or -ENOENT), never garbage */
	ids = (int64_t *)1;
	n = 7;
	int e = catalog_ds_subtree(c, 999999, &ids, &n);
	CHECK(e == 0 || e == -ENOENT);
	CHECK_EQ(n, 0);
	if (e == 0)
		free(ids);
}

static void test_props(catalog_t *c)
{
	int64_t a = id_of("tank/a"), b = id_of("tank/b");
	char *v = (char *)"untouched";
	CHECK_EQ(catalog_prop_get(c, a, "source", &v), -ENOENT);
	uint64_t txg;
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	CHECK_EQ(catalog_prop_set(c, a, "source", "/srv/a"), 0);
	CHECK_EQ(catalog_prop_set(c, a, "compression", "zstd-3"), 0);
	CHECK_EQ(catalog_prop_set(c, a, "mod:empty", ""), 0);
	CHECK_EQ(catalog_prop_set(c, b, "source", "/srv/b with space/\xc3\xa9"), 0);
	CHECK_EQ(catalog_commit(c), 0);

	v = NULL;
	CHECK_EQ(catalog_prop_get(c, a, "source", &v), 0);
	CHECK(v && !strcmp(v, "/srv/a"));
	free(v);
	v = NULL;
	CHECK_EQ(catalog_prop_get(c, a, "mod:empty", &v), 0);
	CHECK(v && !strcmp(v, ""));
	free(v);
	v = NULL;
	CHECK_EQ(catalog_prop_get(c, b, "source", &v), 0);
	CHECK(v && !strcmp(v, "/srv/b with space/\xc3\xa9"));
	free(v);
	/* per dataset, not global */
	CHECK_EQ(catalog_prop_get(c, b, "compression", &v), -ENOENT);
	CHECK_EQ(catalog_prop_get(c, id_of("tank"), "source", &v), -ENOENT);

	/* replace and delete (NULL value) */
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	CHECK_EQ(catalog_prop_set(c, a, "source", "/srv/a2"), 0);
	CHECK_EQ(catalog_prop_set(c, a, "compression", NULL), 0);
	CHECK_EQ(catalog_prop_set(c, a, "never-set", NULL), 0); /* deleting nothing is fine */
	CHECK_EQ(catalog_commit(c), 0);
	v = NULL;
	CHECK_EQ(catalog_prop_get(c, a, "source", &v), 0);
	CHECK(v && !strcmp(v, "/srv/a2"));
	free(v);
	CHECK_EQ(catalog_prop_get(c, a, "compression", &v), -ENOENT);
	CHECK_EQ(count_rows(c, "SELECT count(*) FROM dprop WHERE name='source'"), 2);
}

static void fill_refs(buf_t *b, size_t n, uint8_t seed)
{
	b->len = 0;
	for (size_t i = 0; i < n; i++) {
		chunk_ref_t r;
		for (int k = 0; k < DIGEST_LEN; k++)
			r.digest.b[k] = (uint8_t)(seed * 31 + i * 7 + k);
		r.plain_len = 1000 + i;
		r.stored_len = 500 + i;
		uint8_t w[CHUNK_REF_WIRE];
		chunk_ref_pack(&r, w);
		CHECK_EQ(buf_append(b, w, sizeof(w)), 0);
	}
}

static bool buf_eq(const buf_t *a, const buf_t *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->data, b->data, a->len));
}

static int64_t add_snap(catalog_t *c, int64_t ds, const char *name, uint64_t txg, size_t ntree,
			size_t nidx)
{
	buf_t tree = {0}, idx = {0};
	fill_refs(&tree, ntree, (uint8_t)txg);
	fill_refs(&idx, nidx, (uint8_t)(txg + 100));
	snap_row_t r = {.dataset = ds, .name = (char *)name, .guid = 0x8000000000000000ull | txg,
			.createtxg = txg, .creation = 1700000000 + txg, .referenced = 10 * txg,
			.logicalreferenced = 20 * txg, .written = 3 * txg, .used = 2 * txg};
	int e = catalog_snap_insert(c, &r, &tree, &idx);
	CHECK_EQ(e, 0);
	if (e)
		fprintf(stderr, "  snap insert %s: %s\n", name, catalog_errmsg(c));
	buf_free(&tree);
	buf_free(&idx);
	return e ? e : r.id;
}

static void test_snapshots(catalog_t *c)
{
	int64_t ds = id_of("tank/a"), other = id_of("tank/b");
	int64_t ids[3];
	const uint64_t txgs[3] = {5, 7, 9};
	const char *names[3] = {"first", "second", "third"};
	/* Inserted through real write transactions, but with chosen txgs so
	 * that gaps and another dataset's snapshot in between are covered. */
	uint64_t txg;
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	ids[2] = add_snap(c, ds, names[2], txgs[2], 3, 2);
	ids[0] = add_snap(c, ds, names[0], txgs[0], 1, 0);
	ids[1] = add_snap(c, ds, names[1], txgs[1], 2, 1000);
	int64_t oid = add_snap(c, other, "first", 8, 1, 1); /* same name, other dataset */
	CHECK_EQ(catalog_commit(c), 0);
	CHECK(oid > 0);

	snap_row_t r = {0};
	CHECK_EQ(catalog_snap_lookup(c, ds, "second", &r), 0);
	CHECK_EQ(r.id, ids[1]);
	CHECK_EQ(r.dataset, ds);
	CHECK(r.name && !strcmp(r.name, "second"));
	CHECK(r.guid == (0x8000000000000000ull | 7));
	CHECK_EQ(r.createtxg, 7);
	CHECK_EQ(r.creation, 1700000007);
	CHECK_EQ(r.referenced, 70);
	CHECK_EQ(r.logicalreferenced, 140);
	CHECK_EQ(r.written, 21);
	CHECK_EQ(r.used, 14);
	CHECK_EQ(r.userrefs, 0);
	CHECK(!r.defer_destroy);
	snap_row_clear(&r);
	CHECK(r.name == NULL);
	CHECK_EQ(catalog_snap_lookup(c, other, "first", &r), 0);
	CHECK_EQ(r.id, oid);
	snap_row_clear(&r);
	CHECK_EQ(catalog_snap_lookup(c, ds, "nosuch", &r), -ENOENT);
	CHECK_EQ(catalog_snap_lookup(c, id_of("tank"), "first", &r), -ENOENT);

	/* prev: highest createtxg strictly below */
	struct {
		uint64_t before;
		int want; /* index into ids, -1 = ENOENT */
	} pv[] = {{UINT64_MAX, 2}, {10, 2}, {9, 1}, {8, 1}, {7, 0}, {6, 0}, {5, -1}, {0, -1},
		  {(uint64_t)INT64_MAX + 1, 2}};
	for (size_t i = 0; i < sizeof(pv) / sizeof(pv[0]); i++) {
		int e = catalog_snap_prev(c, ds, pv[i].before, &r);
		CHECK_EQ(e, pv[i].want < 0 ? -ENOENT : 0);
		if (e == 0) {
			CHECK_EQ(r.id, ids[pv[i].want]);
			if (r.id != ids[pv[i].want])
				fprintf(stderr, "  prev(%llu) = %s\n",
					(unsigned long long)pv[i].before, r.name);
		}
		snap_row_clear(&r);
	}
	/* next: lowest createtxg strictly above */
	struct {
		uint64_t after;
		int want;
	} nx[] = {{0, 0}, {4, 0}, {5, 1}, {6, 1}, {7, 2}, {8, 2}, {9, -1}, {100, -1},
		  /* nothing comes after the largest txg there can be */
		  {UINT64_MAX, -1}, {(uint64_t)INT64_MAX + 1, -1}};
	for (size_t i = 0; i < sizeof(nx) / sizeof(nx[0]); i++) {
		int e = catalog_snap_next(c, ds, nx[i].after, &r);
		CHECK_EQ(e, nx[i].want < 0 ? -ENOENT : 0);
		if (e == 0 && nx[i].want >= 0)
			CHECK_EQ(r.id, ids[nx[i].want]);
		if ((e == 0) != (nx[i].want >= 0))
			fprintf(stderr, "  next(%llu) = %d %s\n", (unsigned long long)nx[i].after, e,
				e == 0 ? r.name : "");
		snap_row_clear(&r);
	}
	/* a dataset without snapshots */
	CHECK_EQ(catalog_snap_prev(c, id_of("tank"), UINT64_MAX, &r), -ENOENT);
	CHECK_EQ(catalog_snap_next(c, id_of("tank"), 0, &r), -ENOENT);

	/* duplicates: same name, or same createtxg in one dataset */
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	buf_t e0 = {0};
	snap_row_t d1 = {.dataset = ds, .name = "second", .createtxg = 11};
	CHECK_EQ(catalog_snap_insert(c, &d1, &e0, &e0), -EEXIST);
	snap_row_t d2 = {.dataset = ds, .name = "fourth", .createtxg = 9};
	CHECK(catalog_snap_insert(c, &d2, &e0, &e0) < 0);
	catalog_rollback(c);
	CHECK_EQ(catalog_snap_lookup(c, ds, "fourth", &r), -ENOENT);

	/* roots round trip, including empty lists */
	buf_t tree = {0}, idx = {0}, want_t = {0}, want_i = {0};
	for (int i = 0; i < 3; i++) {
		size_t nt[3] = {1, 2, 3}, ni[3] = {0, 1000, 2};
		CHECK_EQ(catalog_snap_roots(c, ids[i], &tree, &idx), 0);
		fill_refs(&want_t, nt[i], (uint8_t)txgs[i]);
		fill_refs(&want_i, ni[i], (uint8_t)(txgs[i] + 100));
		CHECK(buf_eq(&tree, &want_t));
		CHECK(buf_eq(&idx, &want_i));
	}
	/* out-buffers are replaced, not appended to */
	CHECK_EQ(catalog_snap_roots(c, ids[2], &tree, &idx), 0);
	CHECK_EQ(catalog_snap_roots(c, ids[2], &tree, &idx), 0);
	CHECK_EQ(tree.len, 3 * CHUNK_REF_WIRE);
	CHECK_EQ(idx.len, 2 * CHUNK_REF_WIRE);
	CHECK_EQ(catalog_snap_roots(c, 999999, &tree, &idx), -ENOENT);
	buf_free(&tree);
	buf_free(&idx);
	buf_free(&want_t);
	buf_free(&want_i);

	/* used is updatable; snapshot properties land in sprop */
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	CHECK_EQ(catalog_snap_set_used(c, ids[0], 123456789012ull), 0);
	CHECK_EQ(catalog_snap_prop_set(c, ids[0], "mod:note", "hello"), 0);
	CHECK_EQ(catalog_snap_prop_set(c, ids[0], "mod:note", "again"), 0);
	CHECK_EQ(catalog_commit(c), 0);
	CHECK_EQ(catalog_snap_lookup(c, ds, "first", &r), 0);
	CHECK_EQ(r.used, 123456789012ll);
	CHECK_EQ(r.referenced, 50); /* nothing else moved */
	snap_row_clear(&r);
	CHECK_EQ(count_rows(c, "SELECT count(*) FROM sprop WHERE value='again'"), 1);
	CHECK_EQ(count_rows(c, "SELECT count(*) FROM sprop"), 1);
}

static void test_rollback(catalog_t *c)
{
	int64_t t0 = stored_txg(c);
	uint64_t txg;
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	int64_t id = add_ds(c, "rolled", 0, txg);
	CHECK_EQ(catalog_prop_set(c, id, "source", "/x"), 0);
	CHECK_EQ(catalog_config_set(c, "rolled", 1), 0);
	CHECK_EQ(catalog_prop_set(c, id_of("tank/a"), "source", "/changed"), 0);
	int64_t sid = add_snap(c, id_of("tank/b"), "rolled", txg, 1, 1);
	/* visible inside the transaction */
	ds_row_t r = {0};
	CHECK_EQ(catalog_ds_by_name(c, "rolled", &r), 0);
	ds_row_clear(&r);
	catalog_rollback(c);
	CHECK_EQ(stored_txg(c), t0);
	CHECK_EQ(catalog_ds_by_name(c, "rolled", &r), -ENOENT);
	char *v = NULL;
	CHECK_EQ(catalog_prop_get(c, id, "source", &v), -ENOENT);
	int64_t cv;
	CHECK_EQ(catalog_config_get(c, "rolled", &cv), -ENOENT);
	CHECK_EQ(catalog_prop_get(c, id_of("tank/a"), "source", &v), 0);
	CHECK(v && !strcmp(v, "/srv/a2"));
	free(v);
	snap_row_t s = {0};
	CHECK_EQ(catalog_snap_lookup(c, id_of("tank/b"), "rolled", &s), -ENOENT);
	buf_t t = {0}, i = {0};
	CHECK_EQ(catalog_snap_roots(c, sid, &t, &i), -ENOENT);
	buf_free(&t);
	buf_free(&i);
	/* and the catalog takes writes again */
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	CHECK_EQ(txg, t0 + 1);
	CHECK_EQ(catalog_commit(c), 0);
}

/* catalog_set_rehearsal marks the outermost write transaction as one that
 * will only roll back (a dry-run receive's): a -F destroy inside it lets
 * go of its key claims at once.  Called inside a savepoint it must mark
 * nothing: the transaction around it is its caller's and may commit, and
 * a real destroy in it would then keep no claim until that commit.  The
 * mark ends with the outermost transaction, committed or rolled back. */
static void test_rehearsal(catalog_t *c)
{
	uint64_t txg, inner;
	CHECK(!catalog_rehearsal(c));
	catalog_set_rehearsal(c); /* outside a transaction: nothing */
	CHECK(!catalog_rehearsal(c));
	/* in a savepoint: the outer transaction is not marked */
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	CHECK_EQ(catalog_begin_write(c, &inner), 0);
	catalog_set_rehearsal(c);
	CHECK(!catalog_rehearsal(c));
	CHECK_EQ(catalog_commit(c), 0);
	CHECK(!catalog_rehearsal(c));
	CHECK_EQ(catalog_commit(c), 0);
	/* the outermost: marked through its savepoints, until it ends */
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	catalog_set_rehearsal(c);
	CHECK(catalog_rehearsal(c));
	CHECK_EQ(catalog_begin_write(c, &inner), 0);
	CHECK(catalog_rehearsal(c));
	catalog_rollback(c); /* the savepoint only */
	CHECK(catalog_rehearsal(c));
	catalog_rollback(c);
	CHECK(!catalog_rehearsal(c));
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	catalog_set_rehearsal(c);
	CHECK_EQ(catalog_commit(c), 0);
	CHECK(!catalog_rehearsal(c));
	CHECK_EQ(catalog_begin_write(c, &txg), 0);
	CHECK(!catalog_rehearsal(c));
	CHECK_EQ(catalog_commit(c), 0);
}

/* A read transaction sees one state until it ends, whatever other
 * connections commit meanwhile. */
static void test_read_isolation(catalog_t *c)
{
	catalog_t *w;
	CHECK_EQ(catalog_open(dbpath, &w), 0);
	ds_row_t r = {0};
	CHECK_EQ(catalog_begin_read(c), 0);
	CHECK_EQ(catalog_ds_by_name(c, "later", &r), -ENOENT);
	uint64_t txg;
	CHECK_EQ(catalog_begin_write(w, &txg), 0);
	add_ds(w, "later", 0, txg);
	CHECK_EQ(catalog_commit(w), 0);
	CHECK_EQ(catalog_ds_by_name(c, "later", &r), -ENOENT);
	catalog_end_read(c);
	CHECK_EQ(catalog_ds_by_name(c, "later", &r), 0);
	ds_row_clear(&r);
	catalog_end_read(c); /* nothing open: harmless */
	catalog_close(w);
}

/* Everything committed is there after close and reopen. */
static void test_reopen(void)
{
	catalog_t *c;
	CHECK_EQ(catalog_open(dbpath, &c), 0);
	ds_row_t r = {0};
	CHECK_EQ(catalog_ds_by_name(c, "tank/a/b/c", &r), 0);
	ds_row_clear(&r);
	CHECK_EQ(catalog_ds_by_name(c, "later", &r), 0);
	ds_row_clear(&r);
	snap_row_t s = {0};
	CHECK_EQ(catalog_snap_lookup(c, id_of("tank/a"), "third", &s), 0);
	CHECK_EQ(s.createtxg, 9);
	snap_row_clear(&s);
	int64_t v;
	CHECK_EQ(catalog_config_get(c, "chunk_size", &v), 0);
	CHECK_EQ(v, 4096);
	catalog_close(c);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dbpath, sizeof(dbpath), "%s/catalog.db", tmpdir);
	test_create_open();
	catalog_t *c;
	CHECK_EQ(catalog_open(dbpath, &c), 0);
	test_txg(c); /* closes c */
	CHECK_EQ(catalog_open(dbpath, &c), 0);
	test_config(c);
	test_datasets(c);
	test_props(c);
	test_snapshots(c);
	test_rollback(c);
	test_rehearsal(c);
	test_read_isolation(c);
	catalog_close(c);
	test_reopen();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	UNIT_DONE();
}
