/* fusefs.c - the read-only FUSE file system behind cairn mount.
 *
 * Layout, as zfs shows snapshots:
 *   MOUNTPOINT/                       the dataset given (or all top-level ones)
 *   MOUNTPOINT/CHILD/                 child datasets, nested by name
 *   MOUNTPOINT/.zfs/snapshot/NAME/... a snapshot's files
 * A snapshot's tree is loaded on first access; at that moment it gets a
 * temporary hold (tag mount.PID) so gc and destroy leave its chunks alone
 * while it can be read.  The holds go at unmount (or, if the process dies,
 * at the next store open, as every temporary hold does).
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
#include "fusefs.h"
#include "data/snapview.h"
#include "store/store.h"

#define CACHE_BYTES (256u << 20)

typedef struct view_ent {
	char *snap; /* "ds@name" */
	snapview_t *v;
	crypt_keys_t *key; /* an encrypted dataset's keys, or NULL */
	uint32_t id; /* for inode numbers */
} view_ent_t;

static struct {
	cairn_store *st;
	const char *top; /* the mounted dataset, "" for all */
	chunkcache_t *cache;
	pthread_mutex_t lock; /* catalog, views list */
	view_ent_t *views;
	size_t nviews, capviews;
	char tag[32];
	time_t mounted;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

enum kind { K_DS, K_ZFS, K_SNAPDIR, K_FILE };

typedef struct res {
	enum kind kind;
	char ds[1024];
	const view_ent_t *ve;
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

/* The view of ds@name, loaded (and held) on first use. */
static int view_get(const char *ds, const char *name, const view_ent_t **out)
{
	char snap[1200];
	snprintf(snap, sizeof(snap), "%s@%s", ds, name);
	for (size_t i = 0; i < g.nviews; i++)
		if (!strcmp(g.views[i].snap, snap)) {
			*out = &g.views[i];
			return 0;
		}
	if (g.nviews == g.capviews) {
		size_t cap = g.capviews ? g.capviews * 2 : 16;
		view_ent_t *v = realloc(g.views, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		g.views = v;
		g.capviews = cap;
	}
	/* Hold first: from here on gc and destroy keep its chunks. */
	cairn_hold_item it = {.snapshot = snap, .tag = g.tag};
	int r = cairn_hold(g.st, &it, 1, true);
	if (r < 0)
		return r == -ENOENT || r == CAIRN_EBADNAME ? -ENOENT : -EIO;
	ds_row_t d = {0};
	snap_row_t s = {0};
	buf_t tree = {0}, idx = {0};
	r = catalog_ds_by_name(g.st->cat, ds, &d);
	if (r == 0)
		r = catalog_snap_lookup(g.st->cat, d.id, name, &s);
	if (r == 0)
		r = catalog_snap_roots(g.st->cat, s.id, &tree, &idx);
	snapview_t *v = NULL;
	chunk_ref_t failed = {0};
	crypt_keys_t *key = NULL;
	bool keyless = false;
	if (r == 0 && (r = encroot_keys(g.st, &d, &key)) < 0)
		keyless = true; /* encrypted, and its key is not loaded */
	if (r == 0)
		r = snapview_load(g.st->cs, key, &tree, &v, &failed);
	buf_free(&tree);
	buf_free(&idx);
	ds_row_clear(&d);
	snap_row_clear(&s);
	if (r < 0) {
		fprintf(stderr, "cairn: mount: %s: cannot load its tree: %s\n", snap,
			*cairn_store_errdetail(g.st) ? cairn_store_errdetail(g.st) : cairn_strerror(r));
		cairn_release(g.st, &it, 1);
		crypt_keys_free(key);
		return r == -ENOMEM ? r : keyless ? -EACCES : -EIO;
	}
	view_ent_t *e = &g.views[g.nviews];
	e->snap = strdup(snap);
	e->v = v;
	e->key = key;
	e->id = (uint32_t)g.nviews + 1;
	if (!e->snap) {
		snapview_free(v);
		crypt_keys_free(key);
		cairn_release(g.st, &it, 1);
		return -ENOMEM;
	}
	g.nviews++;
	*out = e;
	return 0;
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
			err = view_get(r->ds, c, &r->ve);
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
	fi->keep_cache = 1; /* a snapshot never changes */
	return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	ofile_t *o = (ofile_t *)(uintptr_t)fi->fh;
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
	cfg->use_ino = 1;      /* hardlinks show as one inode */
	cfg->kernel_cache = 1; /* content never changes */
	cfg->entry_timeout = cfg->attr_timeout = 60;
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

static void release_all(void)
{
	if (!g.nviews)
		return;
	cairn_hold_item *it = calloc(g.nviews, sizeof(*it));
	if (it) {
		for (size_t i = 0; i < g.nviews; i++) {
			it[i].snapshot = g.views[i].snap;
			it[i].tag = g.tag;
		}
		if (cairn_release(g.st, it, g.nviews) < 0)
			fprintf(stderr, "cairn: mount: releasing holds: %s\n", cairn_store_errdetail(g.st));
		free(it);
	}
	for (size_t i = 0; i < g.nviews; i++) {
		free(g.views[i].snap);
		snapview_free(g.views[i].v);
		crypt_keys_free(g.views[i].key);
	}
	free(g.views);
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
