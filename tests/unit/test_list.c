/* test_list.c - the listing cursor iterator through the public API:
 * batch boundaries, batch sizes and time budgets, cursor resumption,
 * projection, the batch count, the reference path as oracle, writers
 * interleaved between batches, and errors that must not look like the end.
 *
 * One store for every test: datasets p, p/a, p/a/c, p/b, p/vol (a volume)
 * and q (no snapshots).  p/a gets BULK extra snapshot rows copied with
 * SQL from a real one (listing never reads snapdata, but the copies get
 * the template's snapdata anyway so destroy works on them too).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cairn.h"
#include "unit.h"

static char tmpdir[] = "/dev/shm/test_list.XXXXXX";
static char store_path[256], src_path[256], img_path[256], db_path[300];

#define ALL_FIELDS ((1u << CAIRN_F_COUNT) - 1)
#define BULK 1100 /* extra rows in p/a: crosses the default 1024 */

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define RUN(fn)                                                                  \
	do {                                                                     \
		int64_t t_ = now_ns();                                           \
		fn();                                                            \
		fprintf(stderr, "%-28s %6.0f ms\n", #fn, (now_ns() - t_) / 1e6); \
	} while (0)

/* ---- collected rows ---- */

typedef struct rowv {
	int type;
	char *name;
	uint64_t f[CAIRN_F_COUNT];
} rowv_t;

typedef struct rows {
	rowv_t *v;
	size_t n, cap;
	uint64_t batches;        /* cairn_list_batches() at the end */
	size_t calls;            /* non-empty batches returned */
	size_t minb, maxb;       /* smallest and largest batch */
	int err;                 /* first error of open or next */
} rows_t;

static void rows_free(rows_t *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].name);
	free(r->v);
	memset(r, 0, sizeof(*r));
}

static void rows_push(rows_t *r, const cairn_list_batch *b, size_t i, uint32_t fields)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		if (!r->v)
			abort();
	}
	rowv_t *v = &r->v[r->n++];
	memset(v, 0, sizeof(*v));
	v->type = b->type[i];
	v->name = strdup(b->name[i]);
	for (int f = 0; f < CAIRN_F_COUNT; f++)
		if (fields & (1u << f))
			v->f[f] = b->field[f][i];
}

/* Appends the rows of batches from *cur on (all of them when max_batches
 * is 0) and checks every batch's size. */
static void drain(cairn_list *l, const cairn_list_spec *spec, cairn_list_cursor *cur, rows_t *out,
		  size_t max_batches)
{
	cairn_list_batch b = {0};
	uint32_t bs = spec->batch_size ? spec->batch_size : 1024;
	size_t k = 0;
	for (;;) {
		int r = cairn_list_next(l, cur, &b);
		if (r < 0) {
			out->err = r;
			break;
		}
		if (r == 0)
			break;
		CHECK_EQ(r, b.n);
		/* Every batch makes progress and respects its size limit; the
		 * reference path loads one row per batch. */
		CHECK(b.n >= 1);
		CHECK(b.n <= (spec->reference ? 1 : bs));
		if (!out->calls || b.n < out->minb)
			out->minb = b.n;
		if (b.n > out->maxb)
			out->maxb = b.n;
		out->calls++;
		for (size_t i = 0; i < b.n; i++)
			rows_push(out, &b, i, spec->fields);
		if (max_batches && ++k == max_batches)
			break;
	}
	out->batches = cairn_list_batches(l);
	cairn_list_batch_free(&b);
}

static void collect(cairn_store *st, const cairn_list_spec *spec, rows_t *out)
{
	memset(out, 0, sizeof(*out));
	cairn_list *l;
	int r = cairn_list_open(st, spec, &l);
	CHECK_EQ(r, 0);
	if (r < 0) {
		fprintf(stderr, "cairn_list_open: %s (%s)\n", cairn_strerror(r),
			cairn_store_errdetail(st));
		out->err = r;
		return;
	}
	cairn_list_cursor cur = {0};
	drain(l, spec, &cur, out, 0);
	CHECK_EQ(out->err, 0);
	cairn_list_close(l);
}

/* Equal rows; prints the first difference. */
static bool rows_equal(const rows_t *a, const rows_t *b, uint32_t fields, const char *what)
{
	if (a->n != b->n) {
		fprintf(stderr, "%s: %zu rows vs %zu\n", what, a->n, b->n);
		return false;
	}
	for (size_t i = 0; i < a->n; i++) {
		const rowv_t *x = &a->v[i], *y = &b->v[i];
		bool same = x->type == y->type && !strcmp(x->name, y->name);
		for (int f = 0; same && f < CAIRN_F_COUNT; f++)
			if (fields & (1u << f))
				same = x->f[f] == y->f[f];
		if (!same) {
			fprintf(stderr, "%s: row %zu differs: %s vs %s\n", what, i, x->name, y->name);
			return false;
		}
	}
	return true;
}

static size_t count_type(const rows_t *r, int type)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++)
		n += r->v[i].type == type;
	return n;
}

/* ---- the store ---- */

static cairn_store *g_st;

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

static int64_t sql_int(const char *q)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	int64_t v = -1;
	CHECK_EQ(sqlite3_open(db_path, &db), SQLITE_OK);
	if (sqlite3_prepare_v2(db, q, -1, &s, NULL) == SQLITE_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			v = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	sqlite3_close(db);
	return v;
}

/* n more snapshots PREFIX1..PREFIXn of ds, copies of its newest one, each
 * with its own createtxg (one transaction; meta.txg is advanced past them). */
static void bulk_snaps(const char *ds, const char *prefix, int n)
{
	char q[2048];
	snprintf(q, sizeof(q),
		 "BEGIN IMMEDIATE;"
		 "CREATE TEMP TABLE tpl AS SELECT s.* FROM snapshot s JOIN dataset d ON s.dataset = d.id"
		 " WHERE d.name = '%s' ORDER BY s.createtxg DESC LIMIT 1;"
		 "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d)"
		 " INSERT INTO snapshot(dataset, name, guid, createtxg, creation, referenced,"
		 " logicalreferenced, written, used, userrefs, defer_destroy)"
		 " SELECT tpl.dataset, '%s' || i, (random() & 0x7fffffffffff) + 1,"
		 " (SELECT value FROM meta WHERE key = 'txg') + i, tpl.creation + i, tpl.referenced,"
		 " tpl.logicalreferenced, 0, 0, 0, 0 FROM c, tpl;"
		 "INSERT INTO snapdata SELECT s.id, d.tree, d.idx FROM snapshot s, tpl, snapdata d"
		 " WHERE s.dataset = tpl.dataset AND d.snapshot = tpl.id"
		 " AND s.id NOT IN (SELECT snapshot FROM snapdata);"
		 "UPDATE meta SET value = value + %d WHERE key = 'txg';"
		 "DROP TABLE tpl;"
		 "COMMIT;",
		 ds, n, prefix, n);
	sql(q);
}

static void snap1(cairn_store *st, const char *name, bool recursive)
{
	cairn_snapshot_opts o = {.recursive = recursive};
	const char *names[] = {name};
	int r = cairn_snapshot_create(st, names, 1, &o);
	if (r < 0)
		fprintf(stderr, "snapshot %s: %s (%s)\n", name, cairn_strerror(r),
			cairn_store_errdetail(st));
	CHECK_EQ(r, 0);
}

static void setup(void)
{
	snprintf(store_path, sizeof(store_path), "%s/store", tmpdir);
	snprintf(src_path, sizeof(src_path), "%s/src", tmpdir);
	snprintf(img_path, sizeof(img_path), "%s/vol.img", tmpdir);
	snprintf(db_path, sizeof(db_path), "%s/catalog.db", store_path);
	char p[512];
	CHECK_EQ(mkdir(src_path, 0755), 0);
	for (const char *sub = "a\0a/c\0b\0"; *sub; sub += strlen(sub) + 1) {
		snprintf(p, sizeof(p), "%s/%s", src_path, sub);
		CHECK_EQ(mkdir(p, 0755), 0);
		snprintf(p, sizeof(p), "%s/%s/f", src_path, sub);
		FILE *f = fopen(p, "w");
		CHECK(f != NULL);
		if (f) {
			fprintf(f, "file in %s\n", sub);
			fclose(f);
		}
	}
	int fd = open(img_path, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "volume", 6), 6);
	CHECK_EQ(ftruncate(fd, 128 << 10), 0);
	close(fd);

	cairn_init_opts io = {.skip_atime_check = true};
	CHECK_EQ(cairn_store_init(store_path, &io), 0);
	CHECK_EQ(cairn_store_open(store_path, &g_st), 0);
	if (!g_st) {
		fprintf(stderr, "cannot open the store\n");
		exit(1);
	}
	cairn_prop src = {"source", src_path}, img = {"source", img_path};
	CHECK_EQ(cairn_dataset_create(g_st, "p", CAIRN_TYPE_FILESYSTEM, &src, 1, false), 0);
	CHECK_EQ(cairn_dataset_create(g_st, "p/a", CAIRN_TYPE_FILESYSTEM, NULL, 0, false), 0);
	CHECK_EQ(cairn_dataset_create(g_st, "p/a/c", CAIRN_TYPE_FILESYSTEM, NULL, 0, false), 0);
	CHECK_EQ(cairn_dataset_create(g_st, "p/b", CAIRN_TYPE_FILESYSTEM, NULL, 0, false), 0);
	CHECK_EQ(cairn_dataset_create(g_st, "p/vol", CAIRN_TYPE_VOLUME, &img, 1, false), 0);
	CHECK_EQ(cairn_dataset_create(g_st, "q", CAIRN_TYPE_FILESYSTEM, &src, 1, false), 0);
	snap1(g_st, "p@r1", true);
	snap1(g_st, "p/b@x1", false);
	snap1(g_st, "p@r2", true);
	snap1(g_st, "p/b@x2", false);
	bulk_snaps("p/a", "bulk", BULK);
	snap1(g_st, "p/a/c@x3", false);
	snap1(g_st, "p@r3", true);
	/* Some holds and a deferred destroy, so userrefs and defer_destroy
	 * are not all zero. */
	sql("UPDATE snapshot SET userrefs = 2 WHERE name = 'r2';"
	    "UPDATE snapshot SET userrefs = 1, defer_destroy = 1 WHERE name = 'bulk7';");
}

/* Every dataset and snapshot under p and q. */
static cairn_list_spec spec_all(uint32_t bs, uint32_t us, uint32_t fields)
{
	cairn_list_spec s = {.depth = -1,
			     .types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME | CAIRN_TYPE_SNAPSHOT,
			     .fields = fields, .batch_size = bs, .batch_time_us = us};
	return s;
}

/* ---- tests ---- */

/* Batch sizes 1, 2, 3, 7, 1024, 4096 and the reference path give the same
 * rows; each batch holds 1..batch_size rows. */
static void test_batch_sizes(void)
{
	cairn_list_spec rs = spec_all(0, 100000, ALL_FIELDS);
	rs.reference = true;
	rows_t ref;
	collect(g_st, &rs, &ref);
	/* 6 datasets; 3 x 5 recursive + 2 + 1 + BULK snapshots */
	CHECK_EQ(count_type(&ref, CAIRN_TYPE_FILESYSTEM), 5);
	CHECK_EQ(count_type(&ref, CAIRN_TYPE_VOLUME), 1);
	CHECK_EQ(count_type(&ref, CAIRN_TYPE_SNAPSHOT), 15 + 2 + 1 + BULK);
	CHECK_EQ(ref.calls, ref.n);
	/* tree order: p, p@..., p/a, p/a@..., p/a/c, ..., p/b, p/vol, q */
	CHECK(ref.n > 0 && !strcmp(ref.v[0].name, "p"));
	CHECK(ref.n > 0 && !strcmp(ref.v[ref.n - 1].name, "q"));
	uint32_t sizes[] = {1, 2, 3, 7, 1024, 4096};
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		cairn_list_spec s = spec_all(sizes[k], 100000, ALL_FIELDS);
		rows_t got;
		collect(g_st, &s, &got);
		char what[64];
		snprintf(what, sizeof(what), "batch size %u vs reference", sizes[k]);
		CHECK(rows_equal(&got, &ref, ALL_FIELDS, what));
		/* Size-limited batches are full except where a listing ends:
		 * the largest batch is min(size, rows). */
		CHECK_EQ(got.maxb, sizes[k] < got.n ? sizes[k] : got.n);
		rows_free(&got);
	}
	/* Within each dataset, snapshots come in createtxg order. */
	for (size_t i = 1; i < ref.n; i++) {
		const rowv_t *a = &ref.v[i - 1], *b = &ref.v[i];
		if (a->type == CAIRN_TYPE_SNAPSHOT && b->type == CAIRN_TYPE_SNAPSHOT &&
		    strcspn(a->name, "@") == strcspn(b->name, "@") &&
		    !strncmp(a->name, b->name, strcspn(a->name, "@")))
			CHECK(a->f[CAIRN_F_CREATETXG] < b->f[CAIRN_F_CREATETXG]);
	}
	rows_free(&ref);
}

/* Projected values are the catalog's. */
static void test_values(void)
{
	cairn_list_spec s = spec_all(5, 100000, ALL_FIELDS);
	const char *roots[] = {"p/a"};
	s.roots = roots;
	s.nroots = 1;
	s.depth = 1;
	rows_t got;
	collect(g_st, &s, &got);
	CHECK_EQ(got.n, 1 + 3 + BULK + 1); /* p/a, r1..r3, bulk*, p/a/c */
	char q[512];
	size_t checked = 0;
	for (size_t i = 0; i < got.n; i++) {
		const rowv_t *v = &got.v[i];
		const char *at = strchr(v->name, '@');
		if (!at || (i % 97 && strcmp(at, "@bulk7") && strcmp(at, "@r2")))
			continue;
		snprintf(q, sizeof(q),
			 "SELECT guid FROM snapshot WHERE dataset = %llu AND name = '%s'",
			 (unsigned long long)sql_int("SELECT id FROM dataset WHERE name = 'p/a'"), at + 1);
		CHECK_EQ(v->f[CAIRN_F_GUID], sql_int(q));
		snprintf(q, sizeof(q), "SELECT createtxg FROM snapshot WHERE guid = %lld",
			 (long long)v->f[CAIRN_F_GUID]);
		CHECK_EQ(v->f[CAIRN_F_CREATETXG], sql_int(q));
		snprintf(q, sizeof(q), "SELECT id FROM snapshot WHERE guid = %lld",
			 (long long)v->f[CAIRN_F_GUID]);
		CHECK_EQ(v->f[CAIRN_F_OBJSETID], sql_int(q));
		checked++;
		if (!strcmp(at, "@bulk7")) {
			CHECK_EQ(v->f[CAIRN_F_USERREFS], 1);
			CHECK_EQ(v->f[CAIRN_F_DEFER_DESTROY], 1);
		}
		if (!strcmp(at, "@r2"))
			CHECK_EQ(v->f[CAIRN_F_USERREFS], 2);
	}
	CHECK(checked >= 10);
	rows_free(&got);
}

/* A cursor saved after any batch resumes exactly where it was: on the same
 * handle (re-reading that batch again), on a new handle, and on a handle
 * with another batch size. */
static void test_cursor_resume(void)
{
	cairn_list_spec s = spec_all(7, 100000, ALL_FIELDS);
	rows_t all;
	collect(g_st, &s, &all);
	cairn_list *l;
	CHECK_EQ(cairn_list_open(g_st, &s, &l), 0);
	if (!l)
		return;
	size_t cap = all.n + 2, nb = 0;
	cairn_list_cursor *curs = calloc(cap, sizeof(*curs));
	size_t *off = calloc(cap, sizeof(*off));
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	size_t rows = 0;
	int r;
	curs[0] = cur;
	off[0] = 0;
	while ((r = cairn_list_next(l, &cur, &b)) > 0 && nb + 1 < cap) {
		rows += b.n;
		nb++;
		curs[nb] = cur;
		off[nb] = rows;
	}
	CHECK_EQ(r, 0);
	CHECK_EQ(rows, all.n);
	/* Re-read batch k from its saved cursor on the same handle: same
	 * rows, same cursor afterwards. */
	size_t probes[] = {0, 1, nb / 3, nb / 2, nb - 1};
	for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++) {
		size_t k = probes[p];
		if (k >= nb)
			continue;
		cairn_list_cursor c = curs[k];
		r = cairn_list_next(l, &c, &b);
		CHECK_EQ(r, off[k + 1] - off[k]);
		for (size_t i = 0; r > 0 && i < b.n; i++)
			CHECK(!strcmp(b.name[i], all.v[off[k] + i].name));
		CHECK(!memcmp(&c, &curs[k + 1], sizeof(c)));
	}
	cairn_list_close(l);
	/* Resume on fresh handles, with batch size 7 and 2. */
	uint32_t sizes[] = {7, 2, 1024};
	for (size_t z = 0; z < 3; z++) {
		for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++) {
			size_t k = probes[p];
			if (k > nb)
				continue;
			cairn_list_spec s2 = spec_all(sizes[z], 100000, ALL_FIELDS);
			cairn_list *l2;
			CHECK_EQ(cairn_list_open(g_st, &s2, &l2), 0);
			if (!l2)
				continue;
			cairn_list_cursor c = curs[k];
			rows_t rest = {0};
			drain(l2, &s2, &c, &rest, 0);
			CHECK_EQ(rest.err, 0);
			rows_t tail = {.v = all.v + off[k], .n = all.n - off[k]};
			char what[80];
			snprintf(what, sizeof(what), "resume after batch %zu with size %u", k, sizes[z]);
			CHECK(rows_equal(&rest, &tail, ALL_FIELDS, what));
			rows_free(&rest);
			cairn_list_close(l2);
		}
	}
	/* A finished cursor stays finished. */
	CHECK_EQ(cairn_list_open(g_st, &s, &l), 0);
	if (l) {
		cairn_list_cursor c = curs[nb];
		CHECK_EQ(cairn_list_next(l, &c, &b), 0);
		CHECK_EQ(cairn_list_next(l, &c, &b), 0);
		cairn_list_close(l);
	}
	cairn_list_batch_free(&b);
	free(curs);
	free(off);
	rows_free(&all);
}

/* A 1 us budget still makes progress: each batch has at least one row,
 * the rows are those of an unbounded listing, and the budget does cut. */
static void test_time_budget(void)
{
	cairn_list_spec s = spec_all(1024, 1, ALL_FIELDS);
	rows_t got, want;
	collect(g_st, &s, &got);
	cairn_list_spec w = spec_all(4096, 100000, ALL_FIELDS);
	collect(g_st, &w, &want);
	CHECK(rows_equal(&got, &want, ALL_FIELDS, "1 us budget vs unbounded"));
	CHECK(got.minb >= 1);
	/* No machine loads 16 rows in 1 us. */
	CHECK(got.calls >= got.n / 16);
	/* ... also with batch size 2, 3 */
	for (uint32_t bs = 2; bs <= 3; bs++) {
		cairn_list_spec s2 = spec_all(bs, 1, ALL_FIELDS);
		rows_t g2;
		collect(g_st, &s2, &g2);
		CHECK(rows_equal(&g2, &want, ALL_FIELDS, "1 us budget, small batches"));
		rows_free(&g2);
	}
	rows_free(&got);
	rows_free(&want);
}

/* With size-limited batches (a generous time budget), a listing of n rows
 * takes ceil(n / batch_size) read transactions, whether or not n is a
 * multiple of the batch size. */
static void test_batch_count(void)
{
	/* p/b has 5 snapshots (r1, x1, r2, x2, r3); p/a has BULK + 3. */
	struct {
		const char *root;
		size_t n;
	} cases[] = {{"p/b", 5}, {"p/a", BULK + 3}};
	uint32_t sizes[] = {1, 2, 3, 5, 7, 1024};
	for (size_t c = 0; c < 2; c++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			cairn_list_spec s = {.roots = &cases[c].root, .nroots = 1, .depth = 1,
					     .types = CAIRN_TYPE_SNAPSHOT,
					     .fields = 1u << CAIRN_F_CREATETXG,
					     .batch_size = sizes[k], .batch_time_us = 100000};
			rows_t got;
			collect(g_st, &s, &got);
			CHECK_EQ(got.n, cases[c].n);
			size_t want = (cases[c].n + sizes[k] - 1) / sizes[k];
			CHECK_EQ(got.calls, want);
			if (got.batches != want)
				fprintf(stderr,
					"  %s, %zu rows, batch size %u: %llu read transactions,"
					" expected %zu\n",
					cases[c].root, cases[c].n, sizes[k],
					(unsigned long long)got.batches, want);
			CHECK_EQ(got.batches, want);
			rows_free(&got);
		}
}

/* Only the requested fields are loaded: the others' arrays stay NULL. */
static void test_projection(void)
{
	uint32_t masks[] = {0, 1u << CAIRN_F_GUID,
			    1u << CAIRN_F_CREATETXG | 1u << CAIRN_F_USERREFS,
			    1u << CAIRN_F_WRITTEN | 1u << CAIRN_F_USED | 1u << CAIRN_F_OBJSETID,
			    ALL_FIELDS};
	cairn_list_spec ws = spec_all(3, 100000, ALL_FIELDS);
	rows_t want;
	collect(g_st, &ws, &want);
	for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++) {
		for (int ref = 0; ref <= 1; ref++) {
			cairn_list_spec s = spec_all(3, 100000, masks[m]);
			s.reference = ref;
			cairn_list *l;
			CHECK_EQ(cairn_list_open(g_st, &s, &l), 0);
			if (!l)
				continue;
			cairn_list_cursor cur = {0};
			cairn_list_batch b = {0};
			rows_t got = {0};
			int r;
			while ((r = cairn_list_next(l, &cur, &b)) > 0) {
				for (int f = 0; f < CAIRN_F_COUNT; f++)
					CHECK((b.field[f] != NULL) == !!(masks[m] & (1u << f)));
				CHECK(b.name != NULL && b.type != NULL);
				for (size_t i = 0; i < b.n; i++)
					rows_push(&got, &b, i, masks[m]);
			}
			CHECK_EQ(r, 0);
			CHECK(rows_equal(&got, &want, masks[m], "projection"));
			rows_free(&got);
			cairn_list_batch_free(&b);
			cairn_list_close(l);
		}
	}
	rows_free(&want);
}

/* Types, depth and roots select the right rows (both paths). */
static void test_selection(void)
{
	for (int ref = 0; ref <= 1; ref++) {
		const char *p = "p", *q = "q", *snap = "p/b@x2", *vol = "p/vol";
		cairn_list_spec s = {.roots = &q, .nroots = 1, .depth = 1,
				     .types = CAIRN_TYPE_SNAPSHOT, .batch_size = 2,
				     .reference = ref};
		rows_t got;
		collect(g_st, &s, &got); /* empty result */
		CHECK_EQ(got.n, 0);
		CHECK_EQ(got.calls, 0);
		rows_free(&got);

		s.roots = &p;
		s.depth = 0;
		s.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME | CAIRN_TYPE_SNAPSHOT;
		collect(g_st, &s, &got); /* p alone */
		CHECK(got.n == 1 && !strcmp(got.v[0].name, "p"));
		rows_free(&got);

		s.depth = 1;
		collect(g_st, &s, &got); /* p, p@r1..r3, p/a, p/b, p/vol */
		CHECK_EQ(got.n, 7);
		CHECK_EQ(count_type(&got, CAIRN_TYPE_VOLUME), 1);
		rows_free(&got);

		s.depth = 2;
		s.types = CAIRN_TYPE_VOLUME | CAIRN_TYPE_SNAPSHOT;
		collect(g_st, &s, &got); /* snapshots of p, p/a, p/b, p/vol; p/vol */
		CHECK_EQ(got.n, 3 + (3 + BULK) + 5 + 3 + 1);
		CHECK_EQ(count_type(&got, CAIRN_TYPE_FILESYSTEM), 0);
		rows_free(&got);

		s.roots = &snap;
		s.depth = 0;
		collect(g_st, &s, &got); /* one snapshot */
		CHECK(got.n == 1 && !strcmp(got.v[0].name, "p/b@x2"));
		rows_free(&got);

		s.roots = &vol;
		s.depth = -1;
		s.types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME;
		collect(g_st, &s, &got);
		CHECK(got.n == 1 && got.v[0].type == CAIRN_TYPE_VOLUME);
		rows_free(&got);
	}
}

static void test_open_errors(void)
{
	const char *missing = "p/nosuch", *badsnap = "p@nosuch", *p = "p";
	cairn_list *l = (cairn_list *)1;
	cairn_list_spec s = {.roots = &missing, .nroots = 1, .depth = 0};
	CHECK_EQ(cairn_list_open(g_st, &s, &l), -ENOENT);
	CHECK(l == NULL);
	CHECK(strstr(cairn_store_errdetail(g_st), "p/nosuch") != NULL);
	s.roots = &badsnap;
	CHECK_EQ(cairn_list_open(g_st, &s, &l), -ENOENT);
	s.roots = &p;
	s.batch_size = 4097;
	CHECK_EQ(cairn_list_open(g_st, &s, &l), CAIRN_EBADPROP);
	s.batch_size = 4096;
	s.batch_time_us = 100001;
	CHECK_EQ(cairn_list_open(g_st, &s, &l), CAIRN_EBADPROP);
	s.batch_time_us = 100000;
	CHECK_EQ(cairn_list_open(g_st, &s, &l), 0);
	cairn_list_close(l);
	cairn_list_close(NULL);
	cairn_list_batch_free(NULL);
}

/* Writers between batches (another handle): renaming listed and unlisted
 * snapshots, destroying unlisted ones, creating new ones.  No snapshot
 * (by guid) comes twice; every snapshot left alone comes exactly once, in
 * createtxg order; new ones come at the end. */
static void test_interleaved_writers(void)
{
	cairn_store *w;
	CHECK_EQ(cairn_store_open(store_path, &w), 0);
	if (!w)
		return;
	const char *root = "p/a";
	cairn_list_spec s = {.roots = &root, .nroots = 1, .depth = 1, .types = CAIRN_TYPE_SNAPSHOT,
			     .fields = 1u << CAIRN_F_GUID | 1u << CAIRN_F_CREATETXG,
			     .batch_size = 3, .batch_time_us = 100000};
	rows_t before;
	collect(g_st, &s, &before);
	/* untouched: every snapshot whose bulk number is odd, and r1..r3 */
	cairn_list *l;
	CHECK_EQ(cairn_list_open(g_st, &s, &l), 0);
	if (!l) {
		cairn_store_close(w);
		return;
	}
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	rows_t got = {0};
	int r, step = 0, created = 0;
	char from[64], to[64];
	while ((r = cairn_list_next(l, &cur, &b)) > 0) {
		for (size_t i = 0; i < b.n; i++)
			rows_push(&got, &b, i, s.fields);
		if (step < 120) {
			/* behind the cursor: rename a listed even snapshot */
			int k = 2 * (step + 1);
			snprintf(from, sizeof(from), "p/a@bulk%d", k);
			snprintf(to, sizeof(to), "p/a@moved%d", k);
			bool listed = false;
			for (size_t i = 0; i < got.n && !listed; i++)
				listed = !strcmp(got.v[i].name, from);
			if (listed)
				CHECK_EQ(cairn_rename(w, from, to, false, false), 0);
			/* ahead of the cursor: rename one, destroy another */
			snprintf(from, sizeof(from), "p/a@bulk%d", 600 + 2 * step);
			snprintf(to, sizeof(to), "p/a@ahead%d", 600 + 2 * step);
			CHECK_EQ(cairn_rename(w, from, to, false, false), 0);
			snprintf(from, sizeof(from), "p/a@bulk%d", 850 + 2 * step);
			cairn_destroy_opts d = {0};
			CHECK_EQ(cairn_destroy(w, from, &d), 0);
		}
		if (step % 40 == 0) {
			snprintf(to, sizeof(to), "p/a@new%d", step);
			snap1(w, to, false);
			created++;
		}
		step++;
	}
	CHECK_EQ(r, 0);
	/* no guid twice */
	for (size_t i = 0; i < got.n; i++)
		for (size_t j = i + 1; j < got.n && j < i + 2000; j++)
			if (got.v[i].f[CAIRN_F_GUID] == got.v[j].f[CAIRN_F_GUID]) {
				fprintf(stderr, "listed twice: %s and %s\n", got.v[i].name,
					got.v[j].name);
				CHECK(0);
			}
	/* createtxg strictly increasing: nothing out of order, nothing twice */
	for (size_t i = 1; i < got.n; i++)
		CHECK(got.v[i - 1].f[CAIRN_F_CREATETXG] < got.v[i].f[CAIRN_F_CREATETXG]);
	/* every untouched snapshot exactly once */
	size_t stable = 0, found = 0;
	for (size_t i = 0; i < before.n; i++) {
		const char *at = strchr(before.v[i].name, '@') + 1;
		int k = !strncmp(at, "bulk", 4) ? atoi(at + 4) : 1;
		if (k % 2 == 0)
			continue;
		stable++;
		size_t hits = 0;
		for (size_t j = 0; j < got.n; j++)
			hits += got.v[j].f[CAIRN_F_GUID] == before.v[i].f[CAIRN_F_GUID] &&
				!strcmp(got.v[j].name, before.v[i].name);
		CHECK_EQ(hits, 1);
		found += hits == 1;
	}
	CHECK_EQ(found, stable);
	CHECK(stable > 500);
	/* new snapshots come last, after everything that existed before */
	size_t news = 0;
	for (size_t j = 0; j < got.n; j++)
		if (strstr(got.v[j].name, "@new")) {
			news++;
			CHECK(got.v[j].f[CAIRN_F_CREATETXG] >
			      before.v[before.n - 1].f[CAIRN_F_CREATETXG]);
		}
	CHECK(news >= 1 && news <= (size_t)created);
	/* destroyed ahead of the cursor: never listed; renamed ahead: listed
	 * once, under the new name */
	size_t aheads = 0;
	for (size_t j = 0; j < got.n; j++) {
		const char *at = strchr(got.v[j].name, '@') + 1;
		if (!strncmp(at, "bulk", 4)) {
			int k = atoi(at + 4);
			CHECK(!(k >= 850 && k < 850 + 2 * 120 && k % 2 == 0));
			CHECK(!(k >= 600 && k < 600 + 2 * 120 && k % 2 == 0));
		}
		aheads += !strncmp(at, "ahead", 5);
	}
	CHECK_EQ(aheads, step < 120 ? step : 120);
	/* renamed-behind ones were listed under their old names only */
	for (size_t j = 0; j < got.n; j++)
		CHECK(!strstr(got.v[j].name, "@moved"));
	cairn_list_batch_free(&b);
	cairn_list_close(l);
	rows_free(&got);
	rows_free(&before);
	cairn_store_close(w);
}

/* Bookmarks come after their dataset's snapshots, keyed by (createtxg, id)
 * since bookmarks of one snapshot share a createtxg: every batch size and
 * the reference path give the same rows, and the time budget cuts bookmark
 * batches as it cuts snapshot batches. */
static void test_bookmarks(void)
{
	char bm[64];
	const char *srcs[] = {"p/b@x1", "p/b@r2", "p/b@r3"};
	int nbm = 0;
	for (int i = 0; i < 45; i++) {
		snprintf(bm, sizeof(bm), "p/b#bm%02d", i);
		int r = cairn_bookmark(g_st, srcs[i % 3], bm);
		if (r < 0)
			fprintf(stderr, "bookmark %s: %s (%s)\n", bm, cairn_strerror(r),
				cairn_store_errdetail(g_st));
		CHECK_EQ(r, 0);
		nbm += r == 0;
	}
	const char *root = "p/b";
	cairn_list_spec rs = {.roots = &root, .nroots = 1, .depth = 1,
			      .types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_SNAPSHOT | CAIRN_TYPE_BOOKMARK,
			      .fields = ALL_FIELDS, .batch_time_us = 100000, .reference = true};
	rows_t ref;
	collect(g_st, &rs, &ref);
	CHECK_EQ(count_type(&ref, CAIRN_TYPE_BOOKMARK), nbm);
	CHECK_EQ(count_type(&ref, CAIRN_TYPE_SNAPSHOT), 5);
	/* the dataset, its snapshots, then its bookmarks by createtxg */
	for (size_t i = 1; i < ref.n; i++) {
		if (ref.v[i - 1].type == CAIRN_TYPE_BOOKMARK)
			CHECK_EQ(ref.v[i].type, CAIRN_TYPE_BOOKMARK);
		if (ref.v[i - 1].type == CAIRN_TYPE_BOOKMARK && ref.v[i].type == CAIRN_TYPE_BOOKMARK)
			CHECK(ref.v[i - 1].f[CAIRN_F_CREATETXG] <= ref.v[i].f[CAIRN_F_CREATETXG]);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(ref.v[i].name, ref.v[j].name));
	}
	uint32_t sizes[] = {1, 2, 3, 7, 1024};
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		cairn_list_spec s = rs;
		s.reference = false;
		s.batch_size = sizes[k];
		rows_t got;
		collect(g_st, &s, &got);
		char what[64];
		snprintf(what, sizeof(what), "bookmarks, batch size %u vs reference", sizes[k]);
		CHECK(rows_equal(&got, &ref, ALL_FIELDS, what));
		rows_free(&got);
	}
	/* 1 us budget, bookmarks only */
	cairn_list_spec ts = rs;
	ts.reference = false;
	ts.types = CAIRN_TYPE_BOOKMARK;
	ts.batch_size = 4096;
	ts.batch_time_us = 1;
	rows_t got;
	collect(g_st, &ts, &got);
	CHECK_EQ(got.n, nbm);
	if (got.calls < got.n / 16)
		fprintf(stderr, "  %zu bookmarks came in %zu batches with a 1 us budget\n", got.n,
			got.calls);
	CHECK(got.calls >= got.n / 16);
	rows_free(&got);
	rows_free(&ref);
}

/* A catalog error in the middle of a listing must be reported, never look
 * like the end of the listing.  Here the dataset table vanishes between
 * two batches (an ALTER TABLE by another connection: every later query on
 * it fails with "no such table"). */
static void test_error_not_end(void)
{
	const char *root = "p";
	cairn_list_spec s = {.roots = &root, .nroots = 1, .depth = -1,
			     .types = CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_SNAPSHOT,
			     .fields = 1u << CAIRN_F_CREATETXG, .batch_size = 4,
			     .batch_time_us = 100000};
	cairn_list *l;
	CHECK_EQ(cairn_list_open(g_st, &s, &l), 0);
	if (!l)
		return;
	cairn_list_cursor cur = {0};
	cairn_list_batch b = {0};
	CHECK_EQ(cairn_list_next(l, &cur, &b), 4);
	sql("ALTER TABLE dataset RENAME TO dataset_away");
	int r = cairn_list_next(l, &cur, &b);
	if (r >= 0)
		fprintf(stderr, "  cairn_list_next returned %d (not an error) with the dataset "
				"table gone\n", r);
	CHECK(r < 0);
	sql("ALTER TABLE dataset_away RENAME TO dataset");
	cairn_list_batch_free(&b);
	cairn_list_close(l);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

int main(void)
{
	umask(022);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(setup);
	RUN(test_batch_sizes);
	RUN(test_values);
	RUN(test_cursor_resume);
	RUN(test_time_budget);
	RUN(test_projection);
	RUN(test_selection);
	RUN(test_open_errors);
	RUN(test_batch_count);
	RUN(test_interleaved_writers);
	RUN(test_bookmarks);
	RUN(test_error_not_end);
	cairn_store_close(g_st);
	if (!getenv("KEEP"))
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	else
		fprintf(stderr, "kept %s\n", tmpdir);
	UNIT_DONE();
}
