/* hold.c - user and temporary holds, batched: one transaction per call.
 *
 * After illumos' fix for `zfs send -R`: one sync per hold and per release
 * made 88 holds cost 20 s.  Here a whole list of (snapshot, tag) pairs is
 * checked and applied in one catalog transaction, with prepared statements
 * reused across items, so the sync count does not depend on the count.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/dataset.h"
#include "store/store.h"
#include "catalog/writer.h"

#define TAG_MAX 255

typedef struct holdctx {
	cairn_store *st;
	sqlite3_stmt *find, *ins, *del, *inc;
	int first_err;
	size_t nfail;
} holdctx_t;

static int prep(holdctx_t *h, const char *sql, sqlite3_stmt **s)
{
	if (sqlite3_prepare_v3(catalog_db(h->st->cat), sql, -1, SQLITE_PREPARE_PERSISTENT, s,
			       NULL))
		return store_err(h->st, -EIO, "catalog: %s", catalog_errmsg(h->st->cat));
	return 0;
}

static int holdctx_init(holdctx_t *h, cairn_store *st)
{
	memset(h, 0, sizeof(*h));
	h->st = st;
	int r = prep(h,
		     "SELECT s.id FROM snapshot s JOIN dataset d ON s.dataset = d.id"
		     " WHERE d.name = ? AND s.name = ?",
		     &h->find);
	if (r == 0)
		r = prep(h, "INSERT INTO hold VALUES(?, ?, ?, ?, ?)", &h->ins);
	if (r == 0)
		r = prep(h, "DELETE FROM hold WHERE snapshot = ? AND tag = ?", &h->del);
	if (r == 0)
		r = prep(h, "UPDATE snapshot SET userrefs = userrefs + ? WHERE id = ?", &h->inc);
	return r;
}

static void holdctx_free(holdctx_t *h)
{
	sqlite3_finalize(h->find);
	sqlite3_finalize(h->ins);
	sqlite3_finalize(h->del);
	sqlite3_finalize(h->inc);
}

/* Records an item's failure; the batch goes on so every bad item is named. */
static void item_fail(holdctx_t *h, cairn_hold_item *it, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void item_fail(holdctx_t *h, cairn_hold_item *it, int err, const char *fmt, ...)
{
	it->err = err;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(it->why, sizeof(it->why), fmt, ap);
	va_end(ap);
	if (!h->first_err) {
		h->first_err = err;
		snprintf(h->st->errdetail, sizeof(h->st->errdetail), "%s", it->why);
	}
	h->nfail++;
}

static int64_t find_snapshot(holdctx_t *h, cairn_hold_item *it)
{
	char why[256];
	const char *at = strchr(it->snapshot, '@');
	if (!at || cairn_name_check(it->snapshot, true, why, sizeof(why)) < 0) {
		item_fail(h, it, CAIRN_EBADNAME, "%s: %s", it->snapshot,
			  at ? why
			  : strchr(it->snapshot, '#')
				  ? "is a bookmark; holds apply to snapshots only"
				  : "is not a snapshot (holds apply to snapshots only)");
		return 0;
	}
	sqlite3_bind_text(h->find, 1, it->snapshot, at - it->snapshot, SQLITE_STATIC);
	sqlite3_bind_text(h->find, 2, at + 1, -1, SQLITE_STATIC);
	int64_t id = sqlite3_step(h->find) == SQLITE_ROW ? sqlite3_column_int64(h->find, 0) : 0;
	sqlite3_reset(h->find);
	if (!id)
		item_fail(h, it, -ENOENT, "%s: snapshot does not exist", it->snapshot);
	return id;
}

static bool tag_ok(holdctx_t *h, cairn_hold_item *it)
{
	size_t n = it->tag ? strlen(it->tag) : 0;
	if (n == 0)
		item_fail(h, it, CAIRN_EBADNAME, "%s: empty hold tag", it->snapshot);
	else if (n > TAG_MAX)
		item_fail(h, it, CAIRN_EBADNAME, "%s: hold tag is %zu bytes long (at most %d bytes)",
			  it->snapshot, n, TAG_MAX);
	return n && n <= TAG_MAX;
}

/* Entry of cairn_hold and cairn_release: a NULL item array, snapshot or
 * tag is the caller's mistake, refused (-EINVAL, each such item's err
 * set) before the catalog is touched, as other items' failures are. */
static int items_check(cairn_store *st, const char *call, cairn_hold_item *items, size_t n)
{
	int r = STORE_ENTER(st);
	if (r == 0 && n && !items)
		r = store_err(st, -EINVAL, "%s: items is NULL (with %zu entries)", call, n);
	const char *first = NULL;
	for (size_t i = 0; r == 0 && i < n; i++) {
		cairn_hold_item *it = &items[i];
		it->err = it->snapshot && it->tag ? 0 : -EINVAL;
		if (it->err)
			snprintf(it->why, sizeof(it->why), "%s: items[%zu].%s is NULL", call, i,
				 it->snapshot ? "tag" : "snapshot");
		if (it->err && !first)
			first = it->why;
	}
	return first ? store_err(st, -EINVAL, "%s", first) : r;
}

static int bump(holdctx_t *h, int64_t id, int delta)
{
	sqlite3_bind_int(h->inc, 1, delta);
	sqlite3_bind_int64(h->inc, 2, id);
	int rc = sqlite3_step(h->inc);
	sqlite3_reset(h->inc);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int finish(holdctx_t *h, int r)
{
	if (r == 0 && h->first_err)
		r = h->first_err;
	r = store_txn_end(h->st, r);
	holdctx_free(h);
	return r;
}

/* Temporary holds belong to a process, but are not judged by its pid:
 * pids lie across PID namespaces and get reused.  The first temporary hold
 * a process takes in a store publishes <store>/holders/<id> and keeps an
 * exclusive OFD lock on it for the rest of the process's life (the kernel
 * drops the lock at death, kill -9 included).  Its rows carry the id in
 * hold.pstart, where it is negative (older versions put a process start
 * time, always >= 0, there); hold.pid keeps the pid for display only. */
static void holder_name(int64_t id, char *out, size_t len)
{
	snprintf(out, len, "%016llx", (unsigned long long)id);
}

/* This process's owner file per store (by device and inode of the store
 * directory), open and locked until exit. */
static struct holder {
	pid_t pid; /* a forked child must publish its own */
	dev_t dev;
	ino_t ino;
	int fd;
	int64_t id;
} holders[16];
static size_t nholders;
static pthread_mutex_t holders_lock = PTHREAD_MUTEX_INITIALIZER;

/* root writing to a store that another user owns (an administrator
 * restoring a user's files, say) gives what it makes there for temporary
 * holds to the store's owner, as SQLite does with the journals it makes:
 * a holders/ directory of root's, mode 0700, would keep the owner's own
 * commands from publishing holds (a send fails) and from judging root's
 * (a killed root restore's hold could never be reaped).  Through the
 * descriptor: never a name that could have been swapped. */
static void give_to_store_owner(cairn_store *st, int fd)
{
	struct stat store, sb;
	if (geteuid() == 0 && fstat(st->dirfd, &store) == 0 && store.st_uid != 0 &&
	    fstat(fd, &sb) == 0 && (sb.st_uid != store.st_uid || sb.st_gid != store.st_gid) &&
	    fchown(fd, store.st_uid, store.st_gid) < 0) {
		/* best effort: the owner's commands say what they cannot do */
	}
}

static int holders_dir(cairn_store *st)
{
	if (mkdirat(st->dirfd, "holders", 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(st->dirfd, "holders", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	give_to_store_owner(st, fd);
	return fd;
}

static int holder_publish(cairn_store *st, int64_t *id)
{
	int dfd = holders_dir(st);
	if (dfd < 0)
		return dfd;
	*id = (int64_t)(random_u64() | (1ull << 63)); /* negative */
	char name[32], hidden[40];
	holder_name(*id, name, sizeof(name));
	snprintf(hidden, sizeof(hidden), ".new.%s", name);
	int fd;
	/* Not durable: after a crash its owner is gone anyway. */
	int r = owner_file_publish(dfd, hidden, name, false, &fd);
	close(dfd);
	if (r == 0)
		give_to_store_owner(st, fd);
	return r < 0 ? r : fd;
}

/* The id of this process's owner file in st's store, publishing it first
 * unless !publish (then -ENOENT when there is none). */
static int holder_id_ex(cairn_store *st, int64_t *id, bool publish)
{
	struct stat sb;
	if (fstat(st->dirfd, &sb) < 0)
		return -errno;
	pthread_mutex_lock(&holders_lock);
	if (nholders && holders[0].pid != getpid()) {
		/* Inherited through fork: the parent's lock is not ours to count
		 * on (closing our copy leaves the parent's lock in place). */
		for (size_t k = 0; k < nholders; k++)
			close(holders[k].fd);
		nholders = 0;
	}
	int r = 0;
	size_t i;
	for (i = 0; i < nholders; i++)
		if (holders[i].dev == sb.st_dev && holders[i].ino == sb.st_ino)
			break;
	if (i == nholders && !publish) {
		r = -ENOENT;
	} else if (i == nholders && nholders == ARRAY_SIZE(holders)) {
		r = -EMFILE;
	} else if (i == nholders) {
		int fd = holder_publish(st, &holders[i].id);
		if (fd < 0) {
			r = fd;
		} else {
			holders[i] = (struct holder){getpid(), sb.st_dev, sb.st_ino, fd, holders[i].id};
			nholders++;
		}
	}
	if (r == 0)
		*id = holders[i].id;
	pthread_mutex_unlock(&holders_lock);
	return r;
}

static int holder_id(cairn_store *st, int64_t *id)
{
	return holder_id_ex(st, id, true);
}

int cairn_temp_holder(cairn_store *st, int64_t *id)
{
	int r = STORE_ENTER(st, id);
	if (r < 0)
		return r;
	r = holder_id(st, id);
	if (r < 0)
		return store_err(st, r, "holders: %s", strerror(-r));
	return 0;
}

/* Whether the owner of temporary holds (pid, pstart) is gone. */
static bool owner_dead(cairn_store *st, int pid, int64_t pstart)
{
	if (pstart >= 0) /* written by an older version: pid + start time */
		return process_start_time(pid) != (uint64_t)pstart;
	char path[64];
	holder_name(pstart, path, sizeof(path));
	memmove(path + 8, path, strlen(path) + 1);
	memcpy(path, "holders/", 8);
	int fd = open_regular(st->dirfd, path, O_RDONLY);
	if (fd == -ENOENT || fd == CAIRN_ECORRUPT)
		return true; /* closed its store, or never a lock file */
	if (fd < 0)
		return false; /* cannot tell: keep the holds */
	bool dead = owner_file_dead(fd) == 0;
	close(fd);
	return dead;
}

int cairn_hold(cairn_store *st, cairn_hold_item *items, size_t n, bool temporary)
{
	int r = items_check(st, __func__, items, n);
	if (r < 0)
		return r;
	holdctx_t h;
	uint64_t txg;
	int64_t pstart = 0;
	r = temporary ? holder_id(st, &pstart) : 0;
	if (r == -EROFS) {
		/* A store on a read-only filesystem cannot change under us: a
		 * send from it needs no holds (and could not take them). */
		st->temp_holds_skipped = true;
		return 0;
	}
	if (r < 0)
		return store_err(st, r, "holders: %s", strerror(-r));
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	r = holdctx_init(&h, st);
	int pid = temporary ? getpid() : 0;
	int64_t now = time(NULL);
	for (size_t i = 0; r == 0 && i < n; i++) {
		cairn_hold_item *it = &items[i];
		it->err = 0;
		int64_t id = find_snapshot(&h, it);
		if (!id || !tag_ok(&h, it))
			continue;
		sqlite3_bind_int64(h.ins, 1, id);
		sqlite3_bind_text(h.ins, 2, it->tag, -1, SQLITE_STATIC);
		sqlite3_bind_int64(h.ins, 3, now);
		sqlite3_bind_int(h.ins, 4, pid);
		sqlite3_bind_int64(h.ins, 5, pstart);
		int rc = sqlite3_step(h.ins);
		sqlite3_reset(h.ins);
		if ((rc & 0xff) == SQLITE_CONSTRAINT)
			item_fail(&h, it, -EEXIST, "%s: tag '%s' is already held", it->snapshot,
				  it->tag);
		else if (rc != SQLITE_DONE)
			r = store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
		else
			r = bump(&h, id, 1);
	}
	return finish(&h, r);
}

/* Snapshots marked defer_destroy that lost their last hold go now. */
static int destroy_deferred(cairn_store *st, const int64_t *ids, size_t n)
{
	int64_t *gone = malloc((n ? n : 1) * sizeof(*gone));
	size_t ngone = 0;
	sqlite3_stmt *s;
	if (!gone)
		return -ENOMEM;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT 1 FROM snapshot WHERE id=? AND userrefs=0 AND defer_destroy=1",
			       -1, &s, NULL)) {
		free(gone);
		return -EIO;
	}
	for (size_t i = 0; i < n; i++) {
		bool dup = false;
		for (size_t k = 0; k < ngone && !dup; k++)
			dup = gone[k] == ids[i];
		sqlite3_bind_int64(s, 1, ids[i]);
		if (!dup && sqlite3_step(s) == SQLITE_ROW)
			gone[ngone++] = ids[i];
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	int r = ngone ? destroy_snapshots_in_txn(st, gone, ngone, NULL) : 0;
	free(gone);
	return r;
}

int cairn_release(cairn_store *st, cairn_hold_item *items, size_t n)
{
	int r = items_check(st, __func__, items, n);
	if (r < 0)
		return r;
	holdctx_t h;
	uint64_t txg;
	r = catalog_begin_write(st->cat, &txg);
	if (r == -EROFS && st->temp_holds_skipped)
		return 0; /* the temporary holds cairn_hold() did not take */
	if (r < 0)
		return store_err(st, r, "catalog: %s", catalog_errmsg(st->cat));
	r = holdctx_init(&h, st);
	int64_t *ids = calloc(n ? n : 1, sizeof(*ids));
	if (!ids && r == 0)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++) {
		cairn_hold_item *it = &items[i];
		it->err = 0;
		int64_t id = find_snapshot(&h, it);
		if (!id || !tag_ok(&h, it))
			continue;
		sqlite3_bind_int64(h.del, 1, id);
		sqlite3_bind_text(h.del, 2, it->tag, -1, SQLITE_STATIC);
		int rc = sqlite3_step(h.del);
		sqlite3_reset(h.del);
		if (rc != SQLITE_DONE)
			r = store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
		else if (!sqlite3_changes(catalog_db(st->cat)))
			item_fail(&h, it, -ENOENT, "%s: no hold with tag '%s'", it->snapshot,
				  it->tag);
		else
			r = bump(&h, id, -1);
		ids[i] = id;
	}
	if (r == 0 && !h.first_err)
		r = destroy_deferred(st, ids, n);
	free(ids);
	return finish(&h, r);
}

int cairn_release_temp(cairn_store *st, const uint64_t *guids, size_t n_guids, const char *tag)
{
	int r = STORE_ENTER(st);
	if (r == 0 && n_guids && !guids)
		r = store_err(st, -EINVAL, "%s: guids is NULL (with %zu entries)", __func__, n_guids);
	if (r < 0)
		return r;
	size_t len = tag ? strlen(tag) : 0;
	if (len == 0 || len > TAG_MAX)
		return store_err(st, CAIRN_EBADNAME, "hold tag is empty or over %d bytes long",
				 TAG_MAX);
	int64_t owner;
	r = holder_id_ex(st, &owner, false);
	if (r == -ENOENT)
		return 0; /* no temporary hold taken in this store */
	if (r < 0)
		return store_err(st, r, "holders: %s", strerror(-r));
	uint64_t txg;
	r = catalog_begin_write(st->cat, &txg);
	if (r == -EROFS && st->temp_holds_skipped)
		return 0;
	if (r < 0)
		return store_err(st, r, "catalog: %s", catalog_errmsg(st->cat));
	/* Found by guid and deleted in this one statement: no name involved. */
	sqlite3_stmt *q = NULL, *dec = NULL;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "DELETE FROM hold WHERE tag = ?1 AND pid != 0 AND pstart = ?2"
			       " AND snapshot IN (SELECT id FROM snapshot WHERE guid = ?3)"
			       " RETURNING snapshot",
			       -1, &q, NULL) ||
	    sqlite3_prepare_v2(catalog_db(st->cat),
			       "UPDATE snapshot SET userrefs = userrefs - 1 WHERE id = ?", -1, &dec,
			       NULL))
		r = store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
	int64_t *ids = NULL;
	size_t n = 0, cap = 0;
	for (size_t k = 0; r == 0 && k < n_guids; k++) {
		sqlite3_bind_text(q, 1, tag, -1, SQLITE_STATIC);
		sqlite3_bind_int64(q, 2, owner);
		sqlite3_bind_int64(q, 3, (int64_t)guids[k]);
		int rc;
		while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
			if (array_reserve(&ids, &cap, n + 1, sizeof(*ids)) < 0) {
				r = -ENOMEM;
				break;
			}
			ids[n++] = sqlite3_column_int64(q, 0);
		}
		if (r == 0 && rc != SQLITE_DONE)
			r = store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
		sqlite3_reset(q);
	}
	sqlite3_finalize(q);
	for (size_t i = 0; r == 0 && i < n; i++) {
		sqlite3_bind_int64(dec, 1, ids[i]);
		if (sqlite3_step(dec) != SQLITE_DONE)
			r = store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
		sqlite3_reset(dec);
	}
	sqlite3_finalize(dec);
	if (r == 0)
		r = destroy_deferred(st, ids, n);
	free(ids);
	r = store_txn_end(st, r);
	return r < 0 ? r : (int)n;
}

int cairn_holds_iter(cairn_store *st, const char *snap,
		     int (*fn)(const char *, const char *, int64_t, int, void *), void *arg)
{
	int r = STORE_ENTER(st, snap);
	if (r == 0 && !fn)
		r = store_err(st, -EINVAL, "%s: fn is NULL", __func__);
	if (r < 0)
		return r;
	ds_row_t ds = {0};
	const char *sname;
	r = snapshot_split(st, snap, &ds, &sname);
	snap_row_t s = {0};
	if (r == 0 && (r = catalog_snap_lookup(st->cat, ds.id, sname, &s)) == -ENOENT)
		r = store_err(st, r, "%s: snapshot does not exist", snap);
	sqlite3_stmt *q = NULL;
	if (r == 0 && sqlite3_prepare_v2(catalog_db(st->cat),
					 "SELECT tag, time, pid FROM hold WHERE snapshot=? ORDER BY tag",
					 -1, &q, NULL))
		r = -EIO;
	if (r == 0) {
		sqlite3_bind_int64(q, 1, s.id);
		while (r == 0 && sqlite3_step(q) == SQLITE_ROW)
			r = fn(snap, (const char *)sqlite3_column_text(q, 0),
			       sqlite3_column_int64(q, 1), sqlite3_column_int(q, 2), arg);
	}
	sqlite3_finalize(q);
	snap_row_clear(&s);
	ds_row_clear(&ds);
	return r;
}

int cairn_snapshot_expand(cairn_store *st, const char *snap, char ***names, size_t *n)
{
	clear_names_out(names, n);
	int r = STORE_ENTER(st, snap, names, n);
	if (r < 0)
		return r;
	ds_row_t ds = {0};
	const char *sname;
	r = snapshot_split(st, snap, &ds, &sname);
	sqlite3_stmt *q = NULL;
	/* One query for the whole subtree, not a lookup per dataset. */
	if (r == 0 && sqlite3_prepare_v2(catalog_db(st->cat),
					 "SELECT d.name FROM dataset d JOIN snapshot s ON s.dataset = d.id"
					 " WHERE (d.name = ?1 OR (d.name > ?1 || '/' AND d.name < ?1 || '0'))"
					 " AND s.name = ?2 ORDER BY d.name",
					 -1, &q, NULL))
		r = store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
	size_t cap = 0;
	if (r == 0) {
		sqlite3_bind_text(q, 1, ds.name, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 2, sname, -1, SQLITE_STATIC);
		while (r == 0 && sqlite3_step(q) == SQLITE_ROW) {
			if (*n + 1 >= cap) {
				cap = cap ? cap * 2 : 16;
				char **p = realloc(*names, cap * sizeof(char *));
				if (!p) {
					r = -ENOMEM;
					break;
				}
				*names = p;
			}
			if (asprintf(&(*names)[*n], "%s@%s", sqlite3_column_text(q, 0), sname) < 0)
				r = -ENOMEM;
			else
				(*n)++;
		}
	}
	sqlite3_finalize(q);
	if (r == 0 && *n == 0)
		r = store_err(st, -ENOENT, "%s: snapshot does not exist", snap);
	ds_row_clear(&ds);
	return r;
}

typedef struct owner {
	int pid;
	int64_t pstart;
} owner_t;

int hold_reap(cairn_store *st)
{
	/* Owner files whose lock is free go first (dead owners, and owners
	 * that exited after releasing everything); rows naming a missing file
	 * are then dead too. */
	int dfd = openat(st->dirfd, "holders", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0) {
		owner_dir_scan(dfd, NULL, NULL);
		close(dfd);
	}
	/* Every command opens the store through here: with no temporary
	 * hold in the catalog there is no row to judge, so no query. */
	if (!catalog_may_have_temp_holds(st->cat))
		return 0;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT DISTINCT pid, pstart FROM hold WHERE pid != 0", -1, &s, NULL))
		return -EIO;
	owner_t *dead = NULL;
	size_t ndead = 0, deadcap = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		owner_t o = {sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1)};
		if (!owner_dead(st, o.pid, o.pstart))
			continue;
		if (array_reserve(&dead, &deadcap, ndead + 1, sizeof(*dead)) < 0)
			break;
		dead[ndead++] = o;
	}
	sqlite3_finalize(s);
	if (!ndead)
		return 0;
	uint64_t txg;
	int r = catalog_begin_write(st->cat, &txg);
	int64_t *ids = NULL;
	size_t nids = 0, idcap = 0;
	for (size_t i = 0; r == 0 && i < ndead; i++) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(catalog_db(st->cat),
				       "DELETE FROM hold WHERE pid=? AND pstart=? RETURNING snapshot", -1,
				       &q, NULL)) {
			r = -EIO;
			break;
		}
		sqlite3_bind_int(q, 1, dead[i].pid);
		sqlite3_bind_int64(q, 2, dead[i].pstart);
		while (sqlite3_step(q) == SQLITE_ROW) {
			if (array_reserve(&ids, &idcap, nids + 1, sizeof(*ids)) < 0) {
				r = -ENOMEM;
				break;
			}
			ids[nids++] = sqlite3_column_int64(q, 0);
		}
		sqlite3_finalize(q);
	}
	for (size_t i = 0; r == 0 && i < nids; i++) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(catalog_db(st->cat),
				       "UPDATE snapshot SET userrefs ="
				       " (SELECT COUNT(*) FROM hold WHERE snapshot = ?1) WHERE id = ?1",
				       -1, &q, NULL)) {
			r = -EIO;
			break;
		}
		sqlite3_bind_int64(q, 1, ids[i]);
		r = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
		sqlite3_finalize(q);
	}
	if (r == 0)
		r = destroy_deferred(st, ids, nids);
	r = store_txn_end(st, r);
	free(ids);
	free(dead);
	return r;
}
