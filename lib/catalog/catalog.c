/* catalog.c - SQLite storage of everything but chunk data. */
#include "catalog/catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "cairn.h"

struct catalog {
	sqlite3 *db;
	bool in_write;
	/* Write transactions nest (savepoints): a receive applies dataset
	 * creation, renames and destroys inside the one commit of the data
	 * they belong to. */
	int depth;
	uint64_t txg;
	/* catalog_on_end: what waits for the outermost transaction's end */
	struct end_hook *hooks;
	size_t nhooks;
	/* catalog_set_rehearsal: the outermost transaction will roll back */
	bool rehearsal;
	char *path;
	/* The first error of the current operation, kept across the ROLLBACK
	 * that follows it: SQLite's own message is overwritten by the
	 * rollback ("not an error", or "cannot rollback - no transaction is
	 * active" after SQLite already rolled back on a full disk). */
	char err[256];
	bool err_saved;
	/* The rprop table (received property values) exists: false only for
	 * an old store opened read-only, which has no received values. */
	bool has_rprop;
	/* Temporary holds may exist: seen at open, or a write since. */
	bool temp_holds;
	/* This connection added schema objects: changes that
	 * sqlite3_total_changes64 does not count. */
	bool migrated;
};

/* Bulky per-snapshot roots live in snapdata so that scans of snapshot
 * (listing millions of rows) never touch overflow pages. */
static const char *schema =
	"PRAGMA journal_mode=WAL;"
	"BEGIN;"
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
	"INSERT INTO meta VALUES('format', 1), ('txg', 0);"
	"CREATE TABLE config(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
	"CREATE TABLE dataset(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
	" parent INTEGER NOT NULL, type INTEGER NOT NULL, guid INTEGER NOT NULL,"
	" createtxg INTEGER NOT NULL, creation INTEGER NOT NULL);"
	"CREATE TABLE dprop(dataset INTEGER NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,"
	" PRIMARY KEY(dataset, name)) WITHOUT ROWID;"
	"CREATE TABLE snapshot(id INTEGER PRIMARY KEY, dataset INTEGER NOT NULL,"
	" name TEXT NOT NULL, guid INTEGER NOT NULL, createtxg INTEGER NOT NULL,"
	" creation INTEGER NOT NULL, referenced INTEGER NOT NULL,"
	" logicalreferenced INTEGER NOT NULL, written INTEGER NOT NULL, used INTEGER NOT NULL,"
	" userrefs INTEGER NOT NULL DEFAULT 0, defer_destroy INTEGER NOT NULL DEFAULT 0,"
	" lastverified INTEGER NOT NULL DEFAULT 0, UNIQUE(dataset, name));"
	"CREATE UNIQUE INDEX snapshot_order ON snapshot(dataset, createtxg);"
	"CREATE INDEX snapshot_guid ON snapshot(guid);"
	"CREATE TABLE snapdata(snapshot INTEGER PRIMARY KEY, tree BLOB NOT NULL, idx BLOB NOT NULL);"
	"CREATE TABLE sprop(snapshot INTEGER NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,"
	" PRIMARY KEY(snapshot, name)) WITHOUT ROWID;"
	"CREATE TABLE hold(snapshot INTEGER NOT NULL, tag TEXT NOT NULL, time INTEGER NOT NULL,"
	" pid INTEGER NOT NULL DEFAULT 0, pstart INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY(snapshot, tag)) WITHOUT ROWID;"
	"CREATE INDEX hold_owner ON hold(pid) WHERE pid != 0;"
	"CREATE TABLE bookmark(id INTEGER PRIMARY KEY, dataset INTEGER NOT NULL, name TEXT NOT NULL,"
	" guid INTEGER NOT NULL, createtxg INTEGER NOT NULL, creation INTEGER NOT NULL,"
	" referenced INTEGER NOT NULL, idx BLOB NOT NULL, UNIQUE(dataset, name));"
	/* Partial receives (recv -s): their chunks are kept by GC like a
	 * snapshot's, through the same kind of index roots. */
	"CREATE TABLE recvstate(id INTEGER PRIMARY KEY, dataset TEXT NOT NULL UNIQUE,"
	" token TEXT NOT NULL, state BLOB NOT NULL, idx BLOB NOT NULL);"
	"COMMIT;";

/* Received property values (zfs's "received" source), added after format 1
 * shipped: stores created before it get the table on their first writable
 * open (migrate_later_schema).  A value here is shadowed by a local one in
 * dprop; masked = 1 records a plain `inherit` over it (the value stays,
 * visible with get -o received, until inherit -S brings it back).  The
 * trigger drops a destroyed dataset's rows, whatever version of cairn
 * destroys it, so a reused dataset id never inherits another dataset's
 * values. */
static const char *rprop_schema =
	"CREATE TABLE IF NOT EXISTS rprop(dataset INTEGER NOT NULL, name TEXT NOT NULL,"
	" value TEXT NOT NULL, masked INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY(dataset, name)) WITHOUT ROWID;"
	"CREATE TRIGGER IF NOT EXISTS rprop_gone AFTER DELETE ON dataset"
	" BEGIN DELETE FROM rprop WHERE dataset = OLD.id; END;";

/* A covering index for listing snapshots, also added after format 1
 * shipped.  It holds every column a listing reads, in listing order, so a
 * listing reads index pages only: through snapshot_order each row cost a
 * descent of the table's b-tree as well, about a third of the CPU of
 * `list -t snapshot` of 2000 rows.  The price is a second copy of those
 * columns (about 60 bytes a snapshot).  Without it (an old store opened
 * read-only) listings are as correct, only slower. */
static const char *list_index_schema =
	"CREATE INDEX IF NOT EXISTS snapshot_list ON snapshot(dataset, createtxg, id, name,"
	" guid, creation, userrefs, defer_destroy, used, referenced, logicalreferenced,"
	" written, lastverified);";

static int sql_err(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CONSTRAINT:
		return -EEXIST;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return CAIRN_ECORRUPT;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	default:
		return -EIO;
	}
}

/* Records the current failure's message and errno-style code, once per
 * operation: the first error wins. */
static int save_err(catalog_t *c, int rc)
{
	int r = sql_err(rc);
	if (r == -EACCES) {
		/* SQLite says "readonly database"; name the real cause when it
		 * is the filesystem. */
		struct statvfs vfs;
		if (c->path && statvfs(c->path, &vfs) == 0 && (vfs.f_flag & ST_RDONLY))
			r = -EROFS;
	}
	if (!c->err_saved) {
		if (r == -EROFS || r == -ENOSPC)
			snprintf(c->err, sizeof(c->err), "%s", strerror(-r));
		else
			snprintf(c->err, sizeof(c->err), "%s", sqlite3_errmsg(c->db));
		c->err_saved = true;
	}
	return r;
}

void ds_row_clear(ds_row_t *r)
{
	free(r->name);
	memset(r, 0, sizeof(*r));
}

void snap_row_clear(snap_row_t *r)
{
	free(r->name);
	memset(r, 0, sizeof(*r));
}

/* ---- waiting for other writers ---- */

#define WRITER_WAIT_MS 600000

static const volatile int *g_stop_waits;

void catalog_stop_waits_on(const volatile int *flag)
{
	g_stop_waits = flag;
}

static bool waits_stopped(void)
{
	/* the flag may be set by another thread (cairn_gc_interrupt): atomic read */
	return g_stop_waits && __atomic_load_n(g_stop_waits, __ATOMIC_RELAXED);
}

/* SQLite's busy_timeout schedule (sleeps of 1, 2, 5 ... 100 ms, then
 * 100 ms each) up to WRITER_WAIT_MS, but ending as soon as the command was
 * asked to stop.  A signal also cuts the current sleep short. */
static int wait_for_writer(void *arg, int count)
{
	static const int delay[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100};
	static const int prior[] = {0, 1, 3, 8, 18, 33, 53, 78, 103, 128, 178, 228};
	enum { N = sizeof(delay) / sizeof(delay[0]) };
	if (waits_stopped())
		return 0;
	int d = delay[count < N ? count : N - 1];
	long waited = count < N ? prior[count] : prior[N - 1] + (long)(count - N + 1) * d;
	if (waited + d > WRITER_WAIT_MS)
		d = WRITER_WAIT_MS - waited;
	if (d <= 0)
		return 0;
	struct timespec ts = {d / 1000, (d % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	return 1;
}

static void wait_for_writers(sqlite3 *db)
{
	sqlite3_busy_handler(db, wait_for_writer, NULL);
}

void catalog_writer_wait(catalog_t *c, int ms)
{
	if (ms >= 0)
		sqlite3_busy_timeout(c->db, ms);
	else
		wait_for_writers(c->db);
}

/* After a commit that left a large WAL (a hold of 10,000 snapshots),
 * checkpoint and truncate it so the WAL stays bounded.  Best effort: a
 * busy reader just postpones it to a later commit. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	if (pages < 2000)
		return SQLITE_OK;
	sqlite3_busy_timeout(db, 100);
	sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	wait_for_writers(db);
	return SQLITE_OK;
}

/* An I/O-level failure as the OS errno behind it (ENOSPC while creating
 * the -shm file on a full disk...), else sql_err(). */
static int os_err(sqlite3 *db, int rc)
{
	int prim = rc & 0xff, e = db ? sqlite3_system_errno(db) : 0;
	if ((prim == SQLITE_IOERR || prim == SQLITE_CANTOPEN || prim == SQLITE_FULL ||
	     prim == SQLITE_READONLY) && e > 0)
		return -e;
	return sql_err(rc);
}

static int open_db(const char *path, int flags, sqlite3 **out)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		int r = os_err(db, rc);
		sqlite3_close(db);
		return r;
	}
	/* Writers wait for each other instead of failing: concurrent
	 * snapshot commands on one store are normal. */
	wait_for_writers(db);
	/* Short commands (a listing) must not pay a WAL checkpoint and the
	 * WAL's re-creation at every close; commits checkpoint as it grows. */
	sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	sqlite3_wal_hook(db, wal_hook, NULL);
	/* The first 8 MiB of the catalog are read through a mapping: a
	 * listing of a dataset whose snapshot rows lie among other datasets'
	 * reads hundreds of pages, and each one copied into a fresh page-cache
	 * slot costs a page fault; mapped ones come 16 at a time from the
	 * page cache (fault-around).  Small, so that the mapped pages (which
	 * count in RSS) add at most 8 MiB to a listing of 1M snapshots. */
	rc = sqlite3_exec(db,
			  "PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;"
			  "PRAGMA cache_size=-16384; PRAGMA journal_size_limit=4194304;"
			  "PRAGMA mmap_size=8388608;",
			  NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		int r = os_err(db, rc);
		sqlite3_close(db);
		return r;
	}
	*out = db;
	return 0;
}

int catalog_create(const char *path)
{
	sqlite3 *db;
	int r = open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &db);
	if (r < 0)
		return r;
	int rc = sqlite3_exec(db, schema, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, rprop_schema, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, list_index_schema, NULL, NULL, NULL);
	sqlite3_close(db);
	return sql_err(rc);
}

/* SQLite would block opening a FIFO, and follow a symlink, planted as the
 * catalog: refuse anything but a regular file first. */
static int check_regular(const char *path)
{
	int fd = open_regular(AT_FDCWD, path, O_RDONLY);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* Reads the format; 0, or why the database is not a usable catalog.  The
 * same statement says whether any temporary hold exists (*temp_holds), so
 * that opening a store, which reaps dead owners' holds, compiles no query
 * of its own for it when there are none; true when that cannot be told. */
static int read_format(sqlite3 *db, bool *temp_holds)
{
	sqlite3_stmt *s;
	*temp_holds = true;
	int rc = sqlite3_prepare_v2(db,
				    "SELECT value, EXISTS(SELECT 1 FROM hold WHERE pid != 0)"
				    " FROM meta WHERE key='format'",
				    -1, &s, NULL);
	bool with_holds = rc == SQLITE_OK;
	if (!with_holds)
		rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='format'", -1, &s,
					NULL);
	if (rc != SQLITE_OK) {
		int prim = rc & 0xff;
		return prim == SQLITE_ERROR || prim == SQLITE_NOTADB ? CAIRN_ENOTSTORE
								     : os_err(db, rc);
	}
	rc = sqlite3_step(s);
	int64_t fmt = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	if (rc == SQLITE_ROW && with_holds)
		*temp_holds = sqlite3_column_int(s, 1) != 0;
	int r = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : os_err(db, rc);
	sqlite3_finalize(s);
	if (r < 0)
		return r;
	return fmt == 1 ? 0 : fmt ? CAIRN_EVERSION : CAIRN_ENOTSTORE;
}

/* A store on a read-only filesystem whose WAL was checkpointed away (a
 * clean last close, a copy) has no -shm file, and SQLite cannot create
 * one.  With no WAL content to miss, the database file is all there is:
 * open it immutable (read-only, no locks, no -shm). */
static bool can_open_immutable(const char *path)
{
	struct statvfs vfs;
	if (statvfs(path, &vfs) < 0 || !(vfs.f_flag & ST_RDONLY))
		return false;
	char wal[4200];
	snprintf(wal, sizeof(wal), "%s-wal", path);
	struct stat sb;
	return stat(wal, &sb) < 0 ? errno == ENOENT : sb.st_size == 0;
}

static int open_immutable(const char *path, sqlite3 **db)
{
	/* URI form: percent-encode everything but unreserved characters. */
	char uri[3 * 4096 + 32];
	size_t k = (size_t)snprintf(uri, sizeof(uri), "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p && k + 4 < sizeof(uri) - 16;
	     p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("/-._~", *p))
			uri[k++] = *p;
		else
			k += snprintf(uri + k, 4, "%%%02X", *p);
	}
	snprintf(uri + k, sizeof(uri) - k, "?immutable=1");
	return open_db(uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, db);
}

/* Which of the objects added after format 1 the schema has: one query,
 * as every command runs it at open.  rprop counts only with its trigger. */
static void later_schema_present(sqlite3 *db, bool *rprop, bool *list_index)
{
	sqlite3_stmt *s;
	*rprop = *list_index = false;
	if (sqlite3_prepare_v2(db,
			       "SELECT count(*) FILTER (WHERE (type = 'table' AND name = 'rprop')"
			       "  OR (type = 'trigger' AND name = 'rprop_gone')),"
			       " count(*) FILTER (WHERE type = 'index' AND name = 'snapshot_list')"
			       " FROM sqlite_master",
			       -1, &s, NULL) != SQLITE_OK)
		return;
	if (sqlite3_step(s) == SQLITE_ROW) {
		*rprop = sqlite3_column_int(s, 0) == 2;
		*list_index = sqlite3_column_int(s, 1) == 1;
	}
	sqlite3_finalize(s);
}

/* Adds the objects added after format 1 (the rprop table and its
 * trigger, the listing index) to a store created before them.  Best
 * effort, and never waiting: a store that cannot be written (read-only
 * filesystem or file) or whose writer lock is taken right now stays
 * readable as a store without received values or that index, and the
 * next command that opens it tries again. */
static void migrate_later_schema(catalog_t *c)
{
	bool list_index;
	later_schema_present(c->db, &c->has_rprop, &list_index);
	if ((c->has_rprop && list_index) || sqlite3_db_readonly(c->db, "main"))
		return;
	sqlite3_busy_timeout(c->db, 0); /* a listing must not wait for a writer */
	if (sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK) {
		if (sqlite3_exec(c->db, rprop_schema, NULL, NULL, NULL) != SQLITE_OK ||
		    sqlite3_exec(c->db, list_index_schema, NULL, NULL, NULL) != SQLITE_OK ||
		    sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
			sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		else
			c->migrated = true;
	}
	wait_for_writers(c->db);
	later_schema_present(c->db, &c->has_rprop, &list_index);
}

int catalog_open(const char *path, catalog_t **out)
{
	*out = NULL;
	int e = check_regular(path);
	if (e < 0)
		return e;
	catalog_t *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	int r = open_db(path, SQLITE_OPEN_READWRITE, &c->db);
	if (r == 0)
		r = read_format(c->db, &c->temp_holds);
	if (r < 0 && r != CAIRN_EVERSION && can_open_immutable(path)) {
		sqlite3_close_v2(c->db);
		c->db = NULL;
		r = open_immutable(path, &c->db);
		if (r == 0)
			r = read_format(c->db, &c->temp_holds);
	}
	if (r < 0) {
		sqlite3_close_v2(c->db);
		free(c);
		return r;
	}
	c->path = strdup(path);
	migrate_later_schema(c);
	*out = c;
	return 0;
}

/* A connection that changed the catalog moves its commits from the WAL
 * into the database before it closes.  The next process to open the
 * catalog is usually the only connection, and SQLite then rebuilds the
 * WAL index by reading and checksumming every frame in the WAL: up to the
 * 2000 pages wal_hook lets it grow, milliseconds for each listing.  A
 * writer already pays for its commit's fsync; readers never checkpoint
 * (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE).  Never waiting: with a concurrent
 * reader or writer the checkpoint does what it can and leaves the rest. */
static void checkpoint_if_wrote(catalog_t *c)
{
	if ((sqlite3_total_changes64(c->db) == 0 && !c->migrated) ||
	    sqlite3_db_readonly(c->db, "main") != 0)
		return;
	sqlite3_busy_timeout(c->db, 0);
	sqlite3_wal_checkpoint_v2(c->db, "main", SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
}

/* A catalog_on_end registration; level is the savepoint depth it
 * belongs to now (0: the outermost transaction). */
struct end_hook {
	void (*fn)(void *arg, bool committed);
	void *arg;
	int level;
};

int catalog_on_end(catalog_t *c, void (*fn)(void *arg, bool committed), void *arg)
{
	if (!c->in_write)
		return -EINVAL;
	struct end_hook *h = realloc(c->hooks, (c->nhooks + 1) * sizeof(*h));
	if (!h)
		return -ENOMEM;
	c->hooks = h;
	c->hooks[c->nhooks++] = (struct end_hook){fn, arg, c->depth};
	return 0;
}

/* Ends the hooks of level and deeper: a rollback of that savepoint (or,
 * at level 0, the outermost transaction's end) decides them. */
static void hooks_end(catalog_t *c, int level, bool committed)
{
	size_t kept = 0;
	for (size_t i = 0; i < c->nhooks; i++) {
		struct end_hook h = c->hooks[i];
		if (h.level >= level)
			h.fn(h.arg, committed);
		else
			c->hooks[kept++] = h;
	}
	c->nhooks = kept;
	if (!kept) {
		free(c->hooks);
		c->hooks = NULL;
	}
}

/* A released savepoint's hooks now wait for the one around it. */
static void hooks_release(catalog_t *c, int level)
{
	for (size_t i = 0; i < c->nhooks; i++)
		if (c->hooks[i].level >= level)
			c->hooks[i].level = level - 1;
}

void catalog_close(catalog_t *c)
{
	if (!c)
		return;
	hooks_end(c, 0, false); /* a transaction still open never commits */
	checkpoint_if_wrote(c);
	sqlite3_close_v2(c->db);
	free(c->path);
	free(c);
}

sqlite3 *catalog_db(catalog_t *c)
{
	return c->db;
}

int catalog_error(catalog_t *c)
{
	int rc = sqlite3_errcode(c->db);
	return save_err(c, rc) ?: -EIO;
}

const char *catalog_errmsg(catalog_t *c)
{
	return c->err_saved ? c->err : sqlite3_errmsg(c->db);
}

/* Prepared statements are cached by SQLite's own lookaside; preparing per
 * call keeps this module simple and costs microseconds per command, never
 * per row of a scan. */
static int prep(catalog_t *c, const char *sql, sqlite3_stmt **s)
{
	c->err_saved = false; /* a new operation */
	int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, s, NULL);
	return sql_err(rc);
}

static int exec(catalog_t *c, const char *sql)
{
	return sql_err(sqlite3_exec(c->db, sql, NULL, NULL, NULL));
}

int catalog_begin_write(catalog_t *c, uint64_t *txg)
{
	if (c->in_write) {
		int r = exec(c, "SAVEPOINT nested");
		if (r == 0) {
			c->depth++;
			*txg = c->txg;
		}
		return r;
	}
	c->err_saved = false;
	c->temp_holds = true; /* this write may take some */
	int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if ((rc & 0xff) == SQLITE_BUSY && waits_stopped()) {
		snprintf(c->err, sizeof(c->err), "interrupted while waiting for another writer");
		c->err_saved = true;
		return -EINTR;
	}
	if (rc != SQLITE_OK)
		return save_err(c, rc);
	sqlite3_stmt *s;
	int r = sql_err(sqlite3_prepare_v3(c->db,
					   "UPDATE meta SET value = value + 1 WHERE key='txg' RETURNING value",
					   -1, SQLITE_PREPARE_PERSISTENT, &s, NULL));
	if (r == 0) {
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW)
			*txg = sqlite3_column_int64(s, 0);
		else
			r = save_err(c, rc) ?: -EIO;
		sqlite3_finalize(s);
	} else {
		r = save_err(c, sqlite3_errcode(c->db));
	}
	if (r < 0) {
		if (!sqlite3_get_autocommit(c->db))
			exec(c, "ROLLBACK");
		return r;
	}
	c->in_write = true;
	c->txg = *txg;
	return 0;
}

int catalog_commit(catalog_t *c)
{
	if (c->depth > 0) {
		int r = exec(c, "RELEASE nested");
		if (r == 0)
			hooks_release(c, c->depth);
		c->depth--;
		return r;
	}
	int rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	int r = 0;
	if (rc != SQLITE_OK) {
		c->err_saved = false; /* the commit's own error is the one to keep */
		r = save_err(c, rc);
		/* On a full disk SQLite has already rolled back. */
		if (!sqlite3_get_autocommit(c->db))
			exec(c, "ROLLBACK");
	}
	c->in_write = false;
	c->rehearsal = false;
	hooks_end(c, 0, r == 0);
	return r;
}

void catalog_rollback(catalog_t *c)
{
	if (c->depth > 0) {
		hooks_end(c, c->depth, false);
		c->depth--;
		exec(c, "ROLLBACK TO nested");
		exec(c, "RELEASE nested");
		return;
	}
	if (!sqlite3_get_autocommit(c->db)) {
		int rc = sqlite3_errcode(c->db);
		if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
			save_err(c, rc);
		exec(c, "ROLLBACK");
	}
	c->in_write = false;
	c->rehearsal = false;
	hooks_end(c, 0, false);
}

void catalog_set_rehearsal(catalog_t *c)
{
	/* Only the outermost transaction's owner knows it will roll back:
	 * inside a savepoint the transaction around it is a caller's, which
	 * may commit, and a real destroy in it would keep no key claim. */
	if (c->in_write && c->depth == 0)
		c->rehearsal = true;
}

bool catalog_rehearsal(const catalog_t *c)
{
	return c->rehearsal;
}

int catalog_begin_read(catalog_t *c)
{
	c->err_saved = false;
	return exec(c, "BEGIN");
}

void catalog_end_read(catalog_t *c)
{
	if (!sqlite3_get_autocommit(c->db))
		exec(c, "COMMIT");
}

int catalog_config_get(catalog_t *c, const char *key, int64_t *value)
{
	sqlite3_stmt *s;
	int r = prep(c, "SELECT value FROM config WHERE key=?", &s);
	if (r < 0)
		return r;
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*value = sqlite3_column_int64(s, 0);
	else
		r = rc == SQLITE_DONE ? -ENOENT : sql_err(rc);
	sqlite3_finalize(s);
	return r;
}

int catalog_config_set(catalog_t *c, const char *key, int64_t value)
{
	sqlite3_stmt *s;
	int r = prep(c, "INSERT OR REPLACE INTO config VALUES(?, ?)", &s);
	if (r < 0)
		return r;
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, value);
	r = sql_err(sqlite3_step(s));
	sqlite3_finalize(s);
	return r;
}

static char *col_strdup(sqlite3_stmt *s, int i)
{
	const char *t = (const char *)sqlite3_column_text(s, i);
	return strdup(t ? t : "");
}

static void ds_from_stmt(sqlite3_stmt *s, ds_row_t *o)
{
	o->id = sqlite3_column_int64(s, 0);
	o->name = col_strdup(s, 1);
	o->parent = sqlite3_column_int64(s, 2);
	o->type = sqlite3_column_int(s, 3);
	o->guid = sqlite3_column_int64(s, 4);
	o->createtxg = sqlite3_column_int64(s, 5);
	o->creation = sqlite3_column_int64(s, 6);
}

#define DS_COLS "id, name, parent, type, guid, createtxg, creation"

static int ds_fetch(catalog_t *c, const char *sql, const char *name, int64_t id, ds_row_t *out)
{
	sqlite3_stmt *s;
	int r = prep(c, sql, &s);
	if (r < 0)
		return r;
	if (name)
		sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
	else
		sqlite3_bind_int64(s, 1, id);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		ds_from_stmt(s, out);
	else
		r = rc == SQLITE_DONE ? -ENOENT : sql_err(rc);
	sqlite3_finalize(s);
	return r;
}

int catalog_ds_by_name(catalog_t *c, const char *name, ds_row_t *out)
{
	return ds_fetch(c, "SELECT " DS_COLS " FROM dataset WHERE name=?", name, 0, out);
}

int catalog_ds_by_id(catalog_t *c, int64_t id, ds_row_t *out)
{
	return ds_fetch(c, "SELECT " DS_COLS " FROM dataset WHERE id=?", NULL, id, out);
}

/* A new dataset's row id is one no dataset ever had: SQLite would give
 * max(id) + 1, a destroyed dataset's id when that one was the largest.
 * An encryption root's key in the kernel keyring is named by its row id,
 * and a destroy cannot reach the keys other users loaded: a new root
 * with a reused id would find such a stale key under its own name (and,
 * for the same key material, a raw copy received again, take it as
 * loaded).  meta 'dataset_id_max' keeps the largest id ever given (from
 * the first insert on: ids destroyed before that are not known). */
#define DS_NEW_ID_SQL                                                              \
	"max(coalesce((SELECT max(id) FROM dataset), 0),"                          \
	" coalesce((SELECT value FROM meta WHERE key='dataset_id_max'), 0)) + 1"

static int ds_id_max_note(catalog_t *c, int64_t id)
{
	sqlite3_stmt *s;
	int e = prep(c, "INSERT OR REPLACE INTO meta VALUES('dataset_id_max', ?)", &s);
	if (e < 0)
		return e;
	sqlite3_bind_int64(s, 1, id);
	e = sql_err(sqlite3_step(s));
	sqlite3_finalize(s);
	return e;
}

int catalog_ds_insert(catalog_t *c, ds_row_t *r)
{
	sqlite3_stmt *s;
	int e = prep(c,
		     "INSERT INTO dataset(id, name, parent, type, guid, createtxg, creation)"
		     " VALUES(" DS_NEW_ID_SQL ", ?, ?, ?, ?, ?, ?)",
		     &s);
	if (e < 0)
		return e;
	sqlite3_bind_text(s, 1, r->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, r->parent);
	sqlite3_bind_int(s, 3, r->type);
	sqlite3_bind_int64(s, 4, (int64_t)r->guid);
	sqlite3_bind_int64(s, 5, (int64_t)r->createtxg);
	sqlite3_bind_int64(s, 6, r->creation);
	e = sql_err(sqlite3_step(s));
	sqlite3_finalize(s);
	if (e == 0)
		r->id = sqlite3_last_insert_rowid(c->db);
	if (e == 0)
		e = ds_id_max_note(c, r->id);
	/* A new dataset has no partial receive.  A row under its name can
	 * only be one that a destroy by an older version left behind. */
	if (e == 0 && (e = prep(c, "DELETE FROM recvstate WHERE dataset=?", &s)) == 0) {
		sqlite3_bind_text(s, 1, r->name, -1, SQLITE_STATIC);
		e = sql_err(sqlite3_step(s));
		sqlite3_finalize(s);
	}
	return e;
}

int catalog_ds_subtree(catalog_t *c, int64_t id, int64_t **ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	sqlite3_stmt *s;
	/* Descendants share the "name/" prefix; a range scan on the unique
	 * name index finds them without recursion. */
	int r = prep(c,
		     "SELECT d.id FROM dataset d, dataset p WHERE p.id=?1 AND"
		     " (d.id = p.id OR (d.name > p.name || '/' AND d.name < p.name || '0'))"
		     " ORDER BY d.name",
		     &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, id);
	size_t cap = 0;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			int64_t *p = realloc(*ids, cap * sizeof(**ids));
			if (!p) {
				rc = SQLITE_NOMEM;
				break;
			}
			*ids = p;
		}
		(*ids)[(*n)++] = sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return sql_err(rc) ?: -EIO;
	}
	return 0;
}

int catalog_prop_get(catalog_t *c, int64_t ds, const char *name, char **value)
{
	sqlite3_stmt *s;
	int r = prep(c, "SELECT value FROM dprop WHERE dataset=? AND name=?", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, ds);
	sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*value = col_strdup(s, 0);
	else
		r = rc == SQLITE_DONE ? -ENOENT : sql_err(rc);
	sqlite3_finalize(s);
	return r;
}

int catalog_prop_set(catalog_t *c, int64_t ds, const char *name, const char *value)
{
	sqlite3_stmt *s;
	int r = prep(c,
		     value ? "INSERT OR REPLACE INTO dprop VALUES(?, ?, ?)"
			   : "DELETE FROM dprop WHERE dataset=? AND name=?",
		     &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, ds);
	sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	if (value)
		sqlite3_bind_text(s, 3, value, -1, SQLITE_STATIC);
	r = sql_err(sqlite3_step(s));
	sqlite3_finalize(s);
	return r;
}

#define SNAP_COLS                                                                          \
	"id, dataset, name, guid, createtxg, creation, referenced, logicalreferenced, written," \
	" used, userrefs, defer_destroy"

static void snap_from_stmt(sqlite3_stmt *s, snap_row_t *o)
{
	o->id = sqlite3_column_int64(s, 0);
	o->dataset = sqlite3_column_int64(s, 1);
	o->name = col_strdup(s, 2);
	o->guid = sqlite3_column_int64(s, 3);
	o->createtxg = sqlite3_column_int64(s, 4);
	o->creation = sqlite3_column_int64(s, 5);
	o->referenced = sqlite3_column_int64(s, 6);
	o->logicalreferenced = sqlite3_column_int64(s, 7);
	o->written = sqlite3_column_int64(s, 8);
	o->used = sqlite3_column_int64(s, 9);
	o->userrefs = sqlite3_column_int(s, 10);
	o->defer_destroy = sqlite3_column_int(s, 11);
}

static int snap_fetch_one(sqlite3_stmt *s, snap_row_t *out)
{
	int rc = sqlite3_step(s);
	int r = 0;
	if (rc == SQLITE_ROW)
		snap_from_stmt(s, out);
	else
		r = rc == SQLITE_DONE ? -ENOENT : sql_err(rc);
	sqlite3_finalize(s);
	return r;
}

int catalog_snap_lookup(catalog_t *c, int64_t ds, const char *name, snap_row_t *out)
{
	sqlite3_stmt *s;
	int r = prep(c, "SELECT " SNAP_COLS " FROM snapshot WHERE dataset=? AND name=?", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, ds);
	sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	return snap_fetch_one(s, out);
}

int catalog_snap_prev(catalog_t *c, int64_t ds, uint64_t before_txg, snap_row_t *out)
{
	sqlite3_stmt *s;
	int r = prep(c,
		     "SELECT " SNAP_COLS " FROM snapshot WHERE dataset=? AND createtxg < ?"
		     " ORDER BY createtxg DESC LIMIT 1",
		     &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, ds);
	sqlite3_bind_int64(s, 2, before_txg > INT64_MAX ? INT64_MAX : (int64_t)before_txg);
	return snap_fetch_one(s, out);
}

int catalog_snap_next(catalog_t *c, int64_t ds, uint64_t after_txg, snap_row_t *out)
{
	sqlite3_stmt *s;
	if (after_txg >= INT64_MAX)
		return -ENOENT; /* no txg is that large */
	int r = prep(c,
		     "SELECT " SNAP_COLS " FROM snapshot WHERE dataset=? AND createtxg > ?"
		     " ORDER BY createtxg ASC LIMIT 1",
		     &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, ds);
	sqlite3_bind_int64(s, 2, (int64_t)after_txg);
	return snap_fetch_one(s, out);
}

int catalog_snap_insert(catalog_t *c, snap_row_t *row, const buf_t *tree, const buf_t *index)
{
	sqlite3_stmt *s;
	int r = prep(c,
		     "INSERT INTO snapshot(dataset, name, guid, createtxg, creation, referenced,"
		     " logicalreferenced, written, used, userrefs, defer_destroy)"
		     " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		     &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, row->dataset);
	sqlite3_bind_text(s, 2, row->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, (int64_t)row->guid);
	sqlite3_bind_int64(s, 4, (int64_t)row->createtxg);
	sqlite3_bind_int64(s, 5, row->creation);
	sqlite3_bind_int64(s, 6, (int64_t)row->referenced);
	sqlite3_bind_int64(s, 7, (int64_t)row->logicalreferenced);
	sqlite3_bind_int64(s, 8, (int64_t)row->written);
	sqlite3_bind_int64(s, 9, (int64_t)row->used);
	sqlite3_bind_int(s, 10, row->userrefs);
	sqlite3_bind_int(s, 11, row->defer_destroy);
	r = sql_err(sqlite3_step(s));
	sqlite3_finalize(s);
	if (r < 0)
		return r;
	row->id = sqlite3_last_insert_rowid(c->db);
	r = prep(c, "INSERT INTO snapdata VALUES(?, ?, ?)", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, row->id);
	sqlite3_bind_blob(s, 2, tree->data ? (void *)tree->data : "", tree->len, SQLITE_STATIC);
	sqlite3_bind_blob(s, 3, index->data ? (void *)index->data : "", index->len, SQLITE_STATIC);
	r = sql_err(sqlite3_step(s));
	sqlite3_finalize(s);
	return r;
}

int catalog_snap_set_used(catalog_t *c, int64_t id, uint64_t used)
{
	sqlite3_stmt *s;
	int r = prep(c, "UPDATE snapshot SET used=? WHERE id=?", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)used);
	sqlite3_bind_int64(s, 2, id);
	r = sql_err(sqlite3_step(s));
	sqlite3_finalize(s);
	return r;
}

int catalog_snap_roots(catalog_t *c, int64_t id, buf_t *tree, buf_t *index)
{
	sqlite3_stmt *s;
	int r = prep(c, "SELECT tree, idx FROM snapdata WHERE snapshot=?", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, id);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		tree->len = index->len = 0;
		r = buf_append(tree, sqlite3_column_blob(s, 0), sqlite3_column_bytes(s, 0));
		if (r == 0)
			r = buf_append(index, sqlite3_column_blob(s, 1), sqlite3_column_bytes(s, 1));
		if (r == 0 && (tree->len % CHUNK_REF_WIRE || index->len % CHUNK_REF_WIRE))
			r = CAIRN_ECORRUPT;
	} else {
		r = rc == SQLITE_DONE ? -ENOENT : sql_err(rc);
	}
	sqlite3_finalize(s);
	return r;
}

int catalog_snap_index(catalog_t *c, int64_t id, buf_t *index)
{
	buf_t tree = {0};
	int r = catalog_snap_roots(c, id, &tree, index);
	buf_free(&tree);
	return r;
}

int catalog_snap_prop_set(catalog_t *c, int64_t snap, const char *name, const char *value)
{
	sqlite3_stmt *s;
	int r = prep(c, "INSERT OR REPLACE INTO sprop VALUES(?, ?, ?)", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, snap);
	sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, value, -1, SQLITE_STATIC);
	r = sql_err(sqlite3_step(s));
	sqlite3_finalize(s);
	return r;
}

/* ---- received property values (rprop) ---- */

int catalog_rprop_get(catalog_t *c, int64_t ds, const char *name, char **value, bool *masked)
{
	if (!c->has_rprop)
		return -ENOENT;
	sqlite3_stmt *s;
	int r = prep(c, "SELECT value, masked FROM rprop WHERE dataset=? AND name=?", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, ds);
	sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*value = col_strdup(s, 0);
		if (masked)
			*masked = sqlite3_column_int(s, 1) != 0;
		r = *value ? 0 : -ENOMEM;
	} else {
		r = rc == SQLITE_DONE ? -ENOENT : sql_err(rc);
	}
	sqlite3_finalize(s);
	return r;
}

int catalog_prop_effective(catalog_t *c, int64_t ds, const char *name, char **value,
			   bool *received)
{
	*received = false;
	int r = catalog_prop_get(c, ds, name, value);
	if (r != -ENOENT)
		return r;
	bool masked = false;
	r = catalog_rprop_get(c, ds, name, value, &masked);
	if (r == 0 && masked) {
		free(*value);
		*value = NULL;
		return -ENOENT;
	}
	*received = r == 0;
	return r;
}

/* The names of ds's masked received values, to keep their masks across a
 * new received set. */
static int masked_names(catalog_t *c, int64_t ds, char ***names, size_t *n)
{
	*names = NULL;
	*n = 0;
	sqlite3_stmt *s;
	int r = prep(c, "SELECT name FROM rprop WHERE dataset=? AND masked=1", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, ds);
	int rc;
	while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		char **p = realloc(*names, (*n + 1) * sizeof(*p));
		char *v = p ? col_strdup(s, 0) : NULL;
		if (p)
			*names = p;
		if (!v)
			r = -ENOMEM;
		else
			(*names)[(*n)++] = v;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = sql_err(rc) ?: -EIO;
	sqlite3_finalize(s);
	return r;
}

static void names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int catalog_rprop_replace(catalog_t *c, int64_t ds, const char *const *names,
			  const char *const *values, size_t n)
{
	if (!c->has_rprop)
		return -EROFS; /* an old store that could not be migrated */
	char **masked;
	size_t nm;
	int r = masked_names(c, ds, &masked, &nm);
	sqlite3_stmt *s = NULL;
	if (r == 0)
		r = prep(c, "DELETE FROM rprop WHERE dataset=?", &s);
	if (r == 0) {
		sqlite3_bind_int64(s, 1, ds);
		r = sql_err(sqlite3_step(s));
		sqlite3_finalize(s);
	}
	for (size_t i = 0; r == 0 && i < n; i++) {
		bool m = false;
		for (size_t k = 0; k < nm && !m; k++)
			m = !strcmp(masked[k], names[i]);
		r = prep(c, "INSERT OR REPLACE INTO rprop VALUES(?, ?, ?, ?)", &s);
		if (r < 0)
			break;
		sqlite3_bind_int64(s, 1, ds);
		sqlite3_bind_text(s, 2, names[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, values[i], -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 4, m);
		r = sql_err(sqlite3_step(s));
		sqlite3_finalize(s);
	}
	names_free(masked, nm);
	return r;
}

int catalog_rprop_mask(catalog_t *c, int64_t ds, const char *name, bool masked)
{
	if (!c->has_rprop)
		return 0; /* no received values to mask */
	sqlite3_stmt *s;
	int r = prep(c, "UPDATE rprop SET masked=? WHERE dataset=? AND name=?", &s);
	if (r < 0)
		return r;
	sqlite3_bind_int(s, 1, masked);
	sqlite3_bind_int64(s, 2, ds);
	sqlite3_bind_text(s, 3, name, -1, SQLITE_STATIC);
	r = sql_err(sqlite3_step(s));
	sqlite3_finalize(s);
	return r;
}

bool catalog_may_have_temp_holds(catalog_t *c)
{
	return c->temp_holds;
}

bool catalog_has_rprop(catalog_t *c)
{
	return c->has_rprop;
}
