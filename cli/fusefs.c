/* fusefs.c - the read-only FUSE file system behind cairn mount.
 *
 * Layout, as zfs shows snapshots:
 *   MOUNTPOINT/                       the dataset given (or all top-level ones)
 *   MOUNTPOINT/CHILD/                 child datasets, nested by name
 *   MOUNTPOINT/.zfs/snapshot/NAME/... a snapshot's files
 * A snapshot's tree is loaded on first access; at that moment it gets a
 * temporary hold (tag mount.PID) so gc and destroy leave its chunks alone
 * while it can be read.  The holds go at unmount (or, if the process dies,
 * at the next store open, as every temporary hold does).  Loaded snapshots
 * are known by identity (id and guid), not by name: NAME is looked up each
 * time, so after a rename it leads to the snapshot that has it now.  Holds
 * are ours by owner id (cairn_temp_holder), not by tag, and are released
 * by guid in one transaction (cairn_release_temp), not by a name a rename
 * may move meanwhile.
 *
 * The high-level libfuse API gives the kernel one inode per path: after a
 * name is reused, files opened under it before the rename share their
 * inode, page cache and size with the new snapshot's file of that path
 * (cairn-mount(8) says so; telling them apart needs the low-level API).
 *
 * The catalog is used under one lock; file reads go through the shared
 * chunk cache (snapview.h) without it.  Only this file and cmd_mount.c link
 * libfuse3: libcairn does not depend on it.
 */
#define FUSE_USE_VERSION 312
#include <fuse3/fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "crypt/encroot.h"
#include "crypt/keyring.h"
#include "fusefs.h"
#include "data/snapview.h"
#include "store/store.h"

#define CACHE_BYTES (256u << 20)

/* A loaded snapshot: its tree, its keys, and the hold taken on it.  An
 * entry is allocated once and neither moved nor freed while the mount
 * lives: open files and requests in flight keep pointers to it after
 * g.lock is dropped, and everything in it is read-only once published. */
typedef struct view_ent {
	char *snap;       /* "ds@name" when it was loaded (for messages) */
	int64_t snap_id;  /* its identity: a rename keeps both, a reused */
	uint64_t guid;    /* name is another snapshot */
	bool owned;       /* the hold is this process's (released at unmount) */
	snapview_t *v;
	crypt_keys_t *key; /* an encrypted dataset's keys, or NULL */
	int64_t root_id;   /* with key: its encryption root, whose key must */
	char keydesc[KEYRING_DESC_MAX]; /* stay loaded (key_gone) */
	uint32_t id;       /* for inode numbers */
} view_ent_t;

/* Which snapshot a "ds@name" last led to.  A name that has led to two
 * (renamed away, then reused) is marked reused: the kernel may still cache
 * paths under it as they were, so its files are opened uncached. */
typedef struct name_ent {
	char *snap;
	const view_ent_t *ve;
	bool reused;
	int64_t version; /* the catalog's data_version when last looked up */
} name_ent_t;

static struct {
	cairn_store *st;
	const char *top; /* the mounted dataset, "" for all */
	chunkcache_t *cache;
	pthread_mutex_t lock; /* catalog, views and names lists */
	view_ent_t **views;
	size_t nviews, capviews;
	name_ent_t *names;
	size_t nnames, capnames;
	sqlite3_stmt *version; /* PRAGMA data_version */
	char tag[32];
	int64_t holder; /* this process's owner id (cairn_temp_holder) */
	bool holder_known;
	time_t mounted;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

enum kind { K_DS, K_ZFS, K_SNAPDIR, K_FILE };

typedef struct res {
	enum kind kind;
	char ds[1024];
	const view_ent_t *ve;
	bool reused; /* the snapshot's name has led to another one before */
	uint32_t idx;
} res_t;

/* ---- catalog (under g.lock) ---- */

static bool ds_exists(const char *name)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(g.st->cat), "SELECT 1 FROM dataset WHERE name=? AND type=?",
			       -1, &q, NULL))
		return false;
	sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 2, CAIRN_TYPE_FILESYSTEM);
	bool ok = sqlite3_step(q) == SQLITE_ROW;
	sqlite3_finalize(q);
	return ok;
}

/* Calls fn for each child dataset (last name component) of ds ("" = top
 * level) or, with snaps, each snapshot name of ds. */
static int each_name(const char *ds, bool snaps, void (*fn)(const char *, void *), void *arg)
{
	static const char *qds = "SELECT name FROM dataset WHERE type=?2 AND "
				 "((?1 = '' AND parent = 0) OR parent = (SELECT id FROM dataset WHERE name=?1)) "
				 "ORDER BY name";
	static const char *qsn = "SELECT s.name FROM snapshot s JOIN dataset d ON d.id=s.dataset "
				 "WHERE d.name=?1 ORDER BY s.createtxg";
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(g.st->cat), snaps ? qsn : qds, -1, &q, NULL))
		return -EIO;
	sqlite3_bind_text(q, 1, ds, -1, SQLITE_STATIC);
	if (!snaps)
		sqlite3_bind_int(q, 2, CAIRN_TYPE_FILESYSTEM);
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(q, 0);
		const char *slash = snaps ? NULL : strrchr(n, '/');
		fn(slash ? slash + 1 : n, arg);
	}
	sqlite3_finalize(q);
	return 0;
}

/* The catalog's data_version: it changes whenever another connection (a
 * rename, a destroy...) has changed it.  -1 when unknown. */
static int64_t catalog_version(void)
{
	if (!g.version && sqlite3_prepare_v3(catalog_db(g.st->cat), "PRAGMA data_version", -1,
					     SQLITE_PREPARE_PERSISTENT, &g.version, NULL))
		return -1;
	int64_t v = sqlite3_step(g.version) == SQLITE_ROW ? sqlite3_column_int64(g.version, 0) : -1;
	sqlite3_reset(g.version);
	return v;
}

/* Releases our temporary hold on the snapshot with this guid, wherever
 * renames have taken it: found and deleted in one transaction, so a rename
 * meanwhile cannot turn it into a release of another snapshot's hold. */
static int release_snap(uint64_t guid)
{
	return cairn_release_temp(g.st, &guid, 1, g.tag);
}

static view_ent_t *view_find(int64_t id, uint64_t guid)
{
	for (size_t i = 0; i < g.nviews; i++)
		if (g.views[i]->snap_id == id && g.views[i]->guid == guid)
			return g.views[i];
	return NULL;
}

/* This process's owner id, carried by each of its temporary holds: the
 * tag mount.PID alone does not tell two mounts apart (pids repeat across
 * PID namespaces).  Known once a temporary hold has been taken. */
static int holder(int64_t *id)
{
	if (!g.holder_known) {
		int r = cairn_temp_holder(g.st, &g.holder);
		if (r < 0)
			return r;
		g.holder_known = true;
	}
	*id = g.holder;
	return 0;
}

/* Whether our tag is on the snapshot (id, guid), both compared (a
 * destroyed snapshot's id can be given to a new one): 1 by a temporary
 * hold of this process, 0 by another hold (a user hold made with our tag,
 * another process's), -ENOENT not at all, or a negative errno. */
static int held_here(int64_t id, uint64_t guid)
{
	int64_t me;
	int r = holder(&me);
	if (r < 0)
		return r;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(g.st->cat),
			       "SELECT h.pid != 0 AND h.pstart = ? FROM hold h "
			       "JOIN snapshot s ON s.id=h.snapshot WHERE s.id=? AND s.guid=? AND h.tag=?",
			       -1, &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, me);
	sqlite3_bind_int64(q, 2, id);
	sqlite3_bind_int64(q, 3, (int64_t)guid);
	sqlite3_bind_text(q, 4, g.tag, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	r = rc == SQLITE_ROW ? sqlite3_column_int(q, 0) != 0 : rc == SQLITE_DONE ? -ENOENT : -EIO;
	sqlite3_finalize(q);
	return r;
}

/* Whether a view of ours owns the hold on a snapshot with this guid. */
static bool guid_owned(uint64_t guid)
{
	for (size_t i = 0; i < g.nviews; i++)
		if (g.views[i]->owned && g.views[i]->guid == guid)
			return true;
	return false;
}

/* Releases holds of this process that no view owns: a hold taken by name
 * while another process renamed the snapshot away (and another in).  Only
 * this process's temporary holds are looked at, never another mount's
 * with the same tag. */
static void release_strays(void)
{
	int64_t me;
	if (holder(&me) < 0)
		return;
	sqlite3_stmt *q;
	uint64_t guids[8];
	size_t n = 0;
	/* At most 8 a time: more would take as many lost races. */
	if (sqlite3_prepare_v2(catalog_db(g.st->cat),
			       "SELECT s.guid FROM hold h JOIN snapshot s ON s.id=h.snapshot "
			       "WHERE h.tag=? AND h.pid != 0 AND h.pstart=?",
			       -1, &q, NULL))
		return;
	sqlite3_bind_text(q, 1, g.tag, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, me);
	while (n < 8 && sqlite3_step(q) == SQLITE_ROW) {
		uint64_t guid = (uint64_t)sqlite3_column_int64(q, 0);
		if (!guid_owned(guid))
			guids[n++] = guid;
	}
	sqlite3_finalize(q);
	if (n)
		cairn_release_temp(g.st, guids, n, g.tag);
}

/* Holds and loads the snapshot s of dataset d (found as ds@name) into a new
 * view.  -EAGAIN when the name went to another snapshot meanwhile. */
static int view_load(const char *snap, const ds_row_t *d, const snap_row_t *s, view_ent_t **out)
{
	if (g.nviews == g.capviews) {
		size_t cap = g.capviews ? g.capviews * 2 : 16;
		view_ent_t **v = realloc(g.views, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		g.views = v; /* only the array of pointers moves, under g.lock */
		g.capviews = cap;
	}
	view_ent_t *e = calloc(1, sizeof(*e));
	if (!e || !(e->snap = strdup(snap))) {
		free(e);
		return -ENOMEM;
	}
	/* Hold first: from here on gc and destroy keep its chunks.  The hold
	 * goes by name: check it landed on the snapshot we looked up. */
	cairn_hold_item it = {.snapshot = snap, .tag = g.tag};
	int r = cairn_hold(g.st, &it, 1, true);
	bool owned = !g.st->temp_holds_skipped;
	if (r == -EEXIST) {
		/* Our tag is on the snapshot the name leads to now.  If that is
		 * the one looked up, the hold is there already: a stray of ours
		 * (kept, and released at unmount) or one made by hand with our
		 * tag (used, and left to whoever made it).  Otherwise the name
		 * has moved on: look it up again. */
		int h = held_here(s->id, s->guid);
		r = h >= 0 ? 0 : h == -ENOENT ? -EAGAIN : -EIO;
		owned = h == 1;
	} else if (r == 0 && owned) {
		int h = held_here(s->id, s->guid);
		if (h != 1) {
			/* The name moved on (our hold is elsewhere): again. */
			release_strays();
			r = h == -ENOENT || h == 0 ? -EAGAIN : -EIO;
		}
	} else if (r < 0) {
		r = r == -ENOENT || r == CAIRN_EBADNAME ? -ENOENT : -EIO;
	}
	if (r < 0) {
		free(e->snap);
		free(e);
		return r;
	}
	/* A handled -EEXIST left the hold's detail: the load below reports
	 * its own failure, and must not be given that text. */
	g.st->errdetail[0] = 0;
	buf_t tree = {0}, idx = {0};
	snapview_t *v = NULL;
	chunk_ref_t failed = {0};
	crypt_keys_t *key = NULL;
	bool keyless = false;
	r = catalog_snap_roots(g.st->cat, s->id, &tree, &idx);
	if (r == 0 && (r = encroot_keys(g.st, d, &key)) < 0)
		keyless = true; /* encrypted, and its key is not loaded */
	/* A view keeps its key as long as the mount lives: it must not keep
	 * unload-key from working (key_gone refuses reads after it). */
	encroot_keys_unmark(key);
	if (r == 0)
		r = snapview_load(g.st->cs, key, &tree, &v, &failed);
	buf_free(&tree);
	buf_free(&idx);
	if (r < 0) {
		fprintf(stderr, "cairn: mount: %s: cannot load its tree: %s\n", snap,
			*cairn_store_errdetail(g.st) ? cairn_store_errdetail(g.st) : cairn_strerror(r));
		/* (Released by guid: not while a loaded view of another
		 * snapshot with this guid, a second received copy, needs it.
		 * Unmount releases it then.) */
		if (owned && !guid_owned(s->guid))
			release_snap(s->guid);
		crypt_keys_free(key);
		free(e->snap);
		free(e);
		return r == -ENOMEM ? r : keyless ? -EACCES : -EIO;
	}
	ds_row_t root = {0};
	if (key && encroot_find(g.st, d, &root) == 1 && encroot_desc(g.st, &root, e->keydesc) == 0)
		e->root_id = root.id;
	ds_row_clear(&root);
	e->snap_id = s->id;
	e->guid = s->guid;
	e->owned = owned;
	e->v = v;
	e->key = key;
	e->id = (uint32_t)g.nviews + 1;
	g.views[g.nviews++] = e;
	*out = e;
	return 0;
}

/* An encrypted view is readable only while its key could be had now, as a
 * view loaded now would need it: loaded in the keyring, or in a readable
 * key file (keylocation=file://, read by each command).  So after unload-key its
 * files cannot be opened or read (EACCES), as when the mount began
 * without the key; they can again once the key is loaded.  (A view of an
 * encrypted dataset whose root could not be found is refused too.)
 * Called under g.lock (the catalog). */
static bool key_gone(const view_ent_t *ve)
{
	if (!ve->key)
		return false;
	if (!ve->root_id)
		return true;
	if (keyring_present(ve->keydesc))
		return false;
	char *loc = NULL;
	bool file = catalog_prop_get(g.st->cat, ve->root_id, "keylocation", &loc) == 0 &&
		    !strncmp(loc, "file://", 7) && access(loc + 7, R_OK) == 0;
	free(loc);
	return !file;
}

static name_ent_t *name_find(const char *snap)
{
	for (size_t i = 0; i < g.nnames; i++)
		if (!strcmp(g.names[i].snap, snap))
			return &g.names[i];
	return NULL;
}

/* Notes that snap ("ds@name") leads to ve, as of catalog version; *reused
 * tells whether it has led to another snapshot during this mount. */
static int name_note(const char *snap, const view_ent_t *ve, int64_t version, bool *reused)
{
	name_ent_t *n = name_find(snap);
	if (n) {
		if (n->ve != ve) {
			n->ve = ve;
			n->reused = true;
		}
		n->version = version;
		*reused = n->reused;
		return 0;
	}
	if (g.nnames == g.capnames) {
		size_t cap = g.capnames ? g.capnames * 2 : 16;
		name_ent_t *n = realloc(g.names, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		g.names = n;
		g.capnames = cap;
	}
	char *s = strdup(snap);
	if (!s)
		return -ENOMEM;
	g.names[g.nnames++] = (name_ent_t){.snap = s, .ve = ve, .version = version};
	*reused = false;
	return 0;
}

/* The view of the snapshot named ds@name now, loaded (and held) on first use.
 * Views are kept by snapshot identity, so a renamed snapshot keeps its view
 * (under its new name too) and a reused name reaches the new snapshot. */
static int view_get(const char *ds, const char *name, const view_ent_t **out, bool *reused)
{
	char snap[1200];
	snprintf(snap, sizeof(snap), "%s@%s", ds, name);
	/* Nothing has changed the catalog since this name was looked up. */
	int64_t version = catalog_version();
	name_ent_t *n = name_find(snap);
	if (n && version >= 0 && n->version == version) {
		*out = n->ve;
		*reused = n->reused;
		return 0;
	}
	int r = -EAGAIN;
	for (int tries = 0; r == -EAGAIN && tries < 5; tries++) {
		ds_row_t d = {0};
		snap_row_t s = {0};
		r = catalog_ds_by_name(g.st->cat, ds, &d);
		if (r == 0)
			r = catalog_snap_lookup(g.st->cat, d.id, name, &s);
		view_ent_t *e = NULL;
		if (r == 0 && !(e = view_find(s.id, s.guid)))
			r = view_load(snap, &d, &s, &e);
		if (r == 0)
			r = name_note(snap, e, version, reused);
		if (r == 0)
			*out = e;
		ds_row_clear(&d);
		snap_row_clear(&s);
	}
	if (r == -EAGAIN)
		fprintf(stderr, "cairn: mount: %s: it keeps being renamed, try again\n", snap);
	return r == 0 || r == -ENOENT || r == -ENOMEM || r == -EACCES ? r : -EIO;
}

/* ---- paths ---- */

static int resolve(const char *path, res_t *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->ds, sizeof(r->ds), "%s", g.top);
	r->kind = K_DS;
	char buf[8192];
	snprintf(buf, sizeof(buf), "%s", path);
	char *save, *c = strtok_r(buf, "/", &save);
	int err = 0;
	pthread_mutex_lock(&g.lock);
	for (; c && !err; c = strtok_r(NULL, "/", &save)) {
		if (r->kind == K_DS && !strcmp(c, ".zfs") && *r->ds) {
			r->kind = K_ZFS;
		} else if (r->kind == K_DS) {
			size_t n = strlen(r->ds);
			snprintf(r->ds + n, sizeof(r->ds) - n, "%s%s", n ? "/" : "", c);
			if (!ds_exists(r->ds))
				err = -ENOENT;
		} else if (r->kind == K_ZFS) {
			if (strcmp(c, "snapshot"))
				err = -ENOENT;
			r->kind = K_SNAPDIR;
		} else if (r->kind == K_SNAPDIR) {
			err = view_get(r->ds, c, &r->ve, &r->reused);
			if (!err && key_gone(r->ve))
				err = -EACCES;
			r->kind = K_FILE;
			r->idx = 0;
			/* The rest of the path is inside the snapshot. */
			char *rest = strtok_r(NULL, "", &save);
			if (!err && rest) {
				while (*rest == '/')
					rest++;
				size_t n = strlen(rest);
				while (n && rest[n - 1] == '/')
					rest[--n] = 0;
				r->idx = snapview_lookup(r->ve->v, rest);
				if (r->idx == SV_NONE)
					err = -ENOENT;
			}
			break;
		}
	}
	pthread_mutex_unlock(&g.lock);
	return err;
}

/* ---- attributes ---- */

static uint32_t type_bits(uint8_t type)
{
	switch (type) {
	case TREE_DIR: return S_IFDIR;
	case TREE_SYMLINK: return S_IFLNK;
	case TREE_CHR: return S_IFCHR;
	case TREE_BLK: return S_IFBLK;
	case TREE_FIFO: return S_IFIFO;
	case TREE_SOCK: return S_IFSOCK;
	default: return S_IFREG;
	}
}

static struct timespec ts(int64_t ns)
{
	struct timespec t = {ns / 1000000000, ns % 1000000000};
	if (t.tv_nsec < 0)
		t.tv_sec--, t.tv_nsec += 1000000000;
	return t;
}

static void node_stat(const view_ent_t *ve, uint32_t idx, struct stat *s)
{
	const snapview_t *v = ve->v;
	const sv_node_t *n = &v->n[idx], *t = &v->n[n->target];
	const tree_entry_t *e = &n->e;
	memset(s, 0, sizeof(*s));
	s->st_ino = ((uint64_t)ve->id << 32) | (n->target + 1); /* links share one */
	/* A later name of an inode is what its first name is. */
	s->st_mode = type_bits(t->e.type) | (e->mode & 07777);
	s->st_uid = e->uid;
	s->st_gid = e->gid;
	s->st_nlink = e->nlink ? e->nlink : 1;
	s->st_rdev = t->e.rdev;
	s->st_size = t->e.type == TREE_SYMLINK ? strlen(t->e.link) : t->e.size;
	s->st_blocks = t->blocks;
	s->st_blksize = 128 << 10;
	s->st_mtim = ts(e->mtime_ns);
	s->st_atim = ts(e->atime_ns ? e->atime_ns : e->mtime_ns); /* atime is not recorded */
	s->st_ctim = ts(e->ctime_ns);
}

static void virtual_stat(const char *path, struct stat *s)
{
	memset(s, 0, sizeof(*s));
	s->st_ino = (1ull << 63) | (fnv1a64(path, strlen(path)) >> 1);
	s->st_mode = S_IFDIR | 0555;
	s->st_nlink = 2;
	s->st_uid = getuid();
	s->st_gid = getgid();
	s->st_mtim.tv_sec = s->st_ctim.tv_sec = s->st_atim.tv_sec = g.mounted;
}

static int fs_getattr(const char *path, struct stat *s, struct fuse_file_info *fi)
{
	res_t r;
	int err = resolve(path, &r);
	if (err)
		return err;
	if (r.kind == K_FILE)
		node_stat(r.ve, r.idx, s);
	else
		virtual_stat(path, s);
	return 0;
}

/* ---- directories ---- */

typedef struct fill {
	void *buf;
	fuse_fill_dir_t fn;
} fill_t;

static void fill_name(const char *name, void *arg)
{
	fill_t *f = arg;
	f->fn(f->buf, name, NULL, 0, 0);
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fn, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	res_t r;
	int err = resolve(path, &r);
	if (err)
		return err;
	fill_t f = {buf, fn};
	if (r.kind == K_FILE && r.ve->v->n[r.idx].e.type != TREE_DIR)
		return -ENOTDIR;
	fn(buf, ".", NULL, 0, 0);
	fn(buf, "..", NULL, 0, 0);
	switch (r.kind) {
	case K_DS:
		if (*r.ds)
			fn(buf, ".zfs", NULL, 0, 0);
		pthread_mutex_lock(&g.lock);
		err = each_name(r.ds, false, fill_name, &f);
		pthread_mutex_unlock(&g.lock);
		return err;
	case K_ZFS:
		fn(buf, "snapshot", NULL, 0, 0);
		return 0;
	case K_SNAPDIR:
		pthread_mutex_lock(&g.lock);
		err = each_name(r.ds, true, fill_name, &f);
		pthread_mutex_unlock(&g.lock);
		return err;
	case K_FILE:
		for (uint32_t c = r.ve->v->n[r.idx].first_child; c != SV_NONE;
		     c = r.ve->v->n[c].next_sibling)
			fn(buf, r.ve->v->n[c].name, NULL, 0, 0);
		return 0;
	}
	return 0;
}

static int fs_readlink(const char *path, char *buf, size_t size)
{
	res_t r;
	int err = resolve(path, &r);
	if (err)
		return err;
	if (r.kind != K_FILE)
		return -EINVAL;
	const tree_entry_t *t = &r.ve->v->n[r.ve->v->n[r.idx].target].e;
	if (t->type != TREE_SYMLINK)
		return -EINVAL;
	snprintf(buf, size, "%s", t->link);
	return 0;
}

/* ---- files ---- */

typedef struct ofile {
	const view_ent_t *ve;
	uint32_t idx;
} ofile_t;

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return -EROFS;
	res_t r;
	int err = resolve(path, &r);
	if (err)
		return err;
	if (r.kind != K_FILE)
		return -EISDIR;
	uint8_t t = r.ve->v->n[r.ve->v->n[r.idx].target].e.type;
	if (t == TREE_DIR)
		return -EISDIR;
	if (t != TREE_REG && t != TREE_HARDLINK)
		return -ENXIO;
	ofile_t *o = malloc(sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->ve = r.ve;
	o->idx = r.idx;
	fi->fh = (uintptr_t)o;
	/* A snapshot never changes, but a name can lead to another one after
	 * a rename, and the high-level API gives the kernel one inode per
	 * path: under a reused name its cached pages may be the old
	 * snapshot's.  Opening such a file drops them (no keep_cache); its
	 * size is refreshed within the 1 s attribute timeout.  No direct_io:
	 * the kernel refuses shared mmap of such files (ENODEV, without
	 * FUSE_CAP_DIRECT_IO_ALLOW_MMAP), and it would not separate the old
	 * file from the new anyway.  A file opened under the name before the
	 * rename shares that inode, so it may see the new snapshot's size and
	 * pages (cairn-mount(8)). */
	fi->keep_cache = !r.reused;
	return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	ofile_t *o = (ofile_t *)(uintptr_t)fi->fh;
	/* A file opened before unload-key is not read on after it (pages
	 * the kernel has cached already are beyond reach here).  g.lock,
	 * which a loading snapshot holds a while, only when the key is not
	 * in the keyring (the catalog is asked for a key file then). */
	const view_ent_t *ve = o->ve;
	if (ve->key && !(ve->root_id && keyring_present(ve->keydesc))) {
		pthread_mutex_lock(&g.lock);
		bool gone = key_gone(ve);
		pthread_mutex_unlock(&g.lock);
		if (gone)
			return -EACCES;
	}
	ssize_t n = snapview_read(o->ve->v, g.cache, o->idx, buf, size, off);
	if (n < 0) {
		fprintf(stderr, "cairn: mount: %s: %s: %s\n", o->ve->snap, path, cairn_strerror(n));
		return -EIO;
	}
	return n;
}

static off_t fs_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	ofile_t *o = (ofile_t *)(uintptr_t)fi->fh;
	return snapview_seek(o->ve->v, o->idx, off, whence == SEEK_DATA);
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	free((void *)(uintptr_t)fi->fh);
	return 0;
}

/* ---- xattrs ---- */

static int fs_getxattr(const char *path, const char *name, char *value, size_t size)
{
	res_t r;
	int err = resolve(path, &r);
	if (err)
		return err;
	if (r.kind != K_FILE)
		return -ENODATA;
	const tree_entry_t *e = &r.ve->v->n[r.idx].e;
	for (uint32_t i = 0; i < e->nxattr; i++)
		if (!strcmp(e->xattrs[i].name, name)) {
			if (!size)
				return e->xattrs[i].len;
			if (size < e->xattrs[i].len)
				return -ERANGE;
			if (e->xattrs[i].len)
				memcpy(value, e->xattrs[i].value, e->xattrs[i].len);
			return e->xattrs[i].len;
		}
	return -ENODATA;
}

static int fs_listxattr(const char *path, char *list, size_t size)
{
	res_t r;
	int err = resolve(path, &r);
	if (err)
		return err;
	if (r.kind != K_FILE)
		return 0;
	const tree_entry_t *e = &r.ve->v->n[r.idx].e;
	size_t need = 0;
	for (uint32_t i = 0; i < e->nxattr; i++)
		need += strlen(e->xattrs[i].name) + 1;
	if (!size)
		return need;
	if (size < need)
		return -ERANGE;
	char *p = list;
	for (uint32_t i = 0; i < e->nxattr; i++) {
		size_t n = strlen(e->xattrs[i].name) + 1;
		memcpy(p, e->xattrs[i].name, n);
		p += n;
	}
	return need;
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->use_ino = 1; /* hardlinks show as one inode */
	/* fs_open says what the kernel may keep cached (kernel_cache would
	 * override it).  The kernel caches by path, and .zfs/snapshot/NAME is
	 * whatever snapshot has that name now, as in zfs: with one timeout
	 * for every entry, it is short, so a rename shows up within a second. */
	cfg->kernel_cache = 0;
	cfg->entry_timeout = cfg->attr_timeout = 1;
	cfg->negative_timeout = 1; /* new snapshots show up soon */
	return NULL;
}

static const struct fuse_operations ops = {
	.init = fs_init,
	.getattr = fs_getattr,
	.readlink = fs_readlink,
	.readdir = fs_readdir,
	.open = fs_open,
	.read = fs_read,
	.release = fs_release,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.lseek = fs_lseek,
};

/* ---- running ---- */

int fusefs_check(cairn_store *st, const char *dataset)
{
	ds_row_t d = {0};
	int r = catalog_ds_by_name(st->cat, dataset, &d);
	int type = d.type;
	ds_row_clear(&d);
	if (r == -ENOENT) {
		cli_err(dataset, "dataset does not exist");
		return 1;
	}
	if (r < 0) {
		cli_err(dataset, "%s", cairn_strerror(r));
		return 1;
	}
	if (type != CAIRN_TYPE_FILESYSTEM) {
		cli_err(dataset, "a volume has no files to mount (restore it to an image instead)");
		return 1;
	}
	return 0;
}

/* Releases every hold of ours at unmount, each on the snapshot it was
 * taken on (found by guid, whatever its name is now), in one transaction. */
static void release_all(void)
{
	uint64_t *guids = calloc(g.nviews ? g.nviews : 1, sizeof(*guids));
	size_t n = 0;
	for (size_t i = 0; guids && i < g.nviews; i++) {
		const view_ent_t *e = g.views[i];
		bool dup = !e->owned;
		for (size_t k = 0; k < n && !dup; k++)
			dup = guids[k] == e->guid;
		if (!dup)
			guids[n++] = e->guid;
	}
	int r = !guids ? -ENOMEM : n ? cairn_release_temp(g.st, guids, n, g.tag) : 0;
	if (r < 0)
		fprintf(stderr, "cairn: mount: releasing holds: %s\n",
			*cairn_store_errdetail(g.st) ? cairn_store_errdetail(g.st) : cairn_strerror(r));
	else if ((size_t)r < n)
		/* Released by hand meanwhile, or reaped by mistake. */
		fprintf(stderr, "cairn: mount: %zu of its %zu holds (tag %s) were already gone\n",
			n - (size_t)r, n, g.tag);
	free(guids);
	for (size_t i = 0; i < g.nviews; i++) {
		free(g.views[i]->snap);
		snapview_free(g.views[i]->v);
		crypt_keys_free(g.views[i]->key);
		free(g.views[i]);
	}
	free(g.views);
	for (size_t i = 0; i < g.nnames; i++)
		free(g.names[i].snap);
	free(g.names);
	sqlite3_finalize(g.version);
	g.version = NULL;
}

int fusefs_run(const fusefs_opts_t *o)
{
	char opts[256];
	snprintf(opts, sizeof(opts), "ro,default_permissions,fsname=cairn,subtype=cairn%s",
		 o->allow_other ? ",allow_other" : "");
	char *argv[] = {"cairn", "-o", opts, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	g.top = o->dataset ? o->dataset : "";
	g.mounted = time(NULL);
	struct fuse *f = fuse_new(&args, &ops, sizeof(ops), NULL);
	/* fuse_new may copy argv into memory of its own (fuse_opt_add_arg):
	 * ours to free, on every path. */
	if (!f) {
		fuse_opt_free_args(&args);
		cli_err(o->mountpoint, "cannot set up the FUSE file system");
		return 1;
	}
	if (fuse_mount(f, o->mountpoint) != 0) {
		cli_err(o->mountpoint, "cannot mount (is /dev/fuse there and fuse3 installed?)");
		fuse_destroy(f);
		fuse_opt_free_args(&args);
		return 1;
	}
	/* The holds belong to the process that serves the mount: open the store
	 * after going to the background, never across the fork. */
	if (fuse_daemonize(o->foreground) != 0) {
		fuse_unmount(f);
		fuse_destroy(f);
		fuse_opt_free_args(&args);
		return 1;
	}
	snprintf(g.tag, sizeof(g.tag), "mount.%d", (int)getpid());
	int rc = 1;
	if (cairn_store_open(o->store, &g.st) == 0)
		cairn_store_set_warn(g.st, cli_warn, NULL); /* releasing a hold can destroy */
	if (g.st && chunkcache_new(g.st->cs, CACHE_BYTES, &g.cache) == 0) {
		struct fuse_session *se = fuse_get_session(f);
		if (fuse_set_signal_handlers(se) == 0) {
			rc = fuse_loop_mt(f, NULL) ? 1 : 0;
			fuse_remove_signal_handlers(se);
		}
	} else {
		fprintf(stderr, "cairn: mount: %s: cannot open the store\n", o->store);
	}
	fuse_unmount(f);
	if (g.st)
		release_all();
	chunkcache_free(g.cache);
	cairn_store_close(g.st);
	fuse_destroy(f);
	fuse_opt_free_args(&args);
	return rc;
}
