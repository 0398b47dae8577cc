/* restore.c - writing a snapshot back out: a directory tree or an image.
 *
 * Every chunk is checked against its digest as it is read.  Paths come
 * from a tree stream that may have been received from elsewhere, so every
 * parent directory is opened with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: a
 * hostile tree cannot make restore write outside the target.
 *
 * The reading thread walks the tree stream, creates directories, symlinks
 * and devices itself, and hands each regular file to a writer lane
 * (lanes.h): one thread per CPU, each with its own parent-directory and
 * bundle caches, creating, writing and closing its files.  A bundle's
 * files go to one lane in runs of BUNDLE_RUN, so a bundle is decoded
 * about once per run; other files go to the lane with the shortest queue.
 * A hardlink goes to the lane its target went to, behind it (lanes are
 * FIFO); when the target is not known, all lanes are drained first.
 * Directory modes and times are set once all lanes are idle.  Failures
 * are counted as they happen, but the one returned and named in the error
 * detail is the earliest in stream order, as it would be with a single
 * writer.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "catalog/dataset.h"
#include "crypt/encroot.h"
#include "data/lanes.h"
#include "data/pathmap.h"
#include "data/snapio.h"
#include "store/store.h"

typedef struct dirmeta {
	char *path;
	uint32_t mode, uid, gid;
	int64_t atime_ns, mtime_ns;
	uint64_t seq;         /* its position in the tree stream (see fail) */
	tree_xattr_t default_acl; /* set last: children must not inherit it */
} dirmeta_t;

/* Bundles decoded most recently.  After incremental backups a directory's
 * small files alternate between the bundle their unchanged files stayed in
 * and the one the changed files were carried into: with a single slot each
 * switch would read and decode a bundle again. */
#define BUNDLE_SLOTS 4
#define RESTORE_LANES_MAX 16
#define BUNDLE_RUN 64

typedef struct bundleslot {
	digest_t d;
	buf_t data;
	uint64_t used; /* 0: empty */
} bundleslot_t;

/* What all writers share.  lock guards first_err, first_seq, the error
 * detail, opts->errors and the progress and warn callbacks; opts->files
 * and opts->bytes are added to atomically; the rest belongs to the
 * reading thread. */
typedef struct rctx {
	cairn_store *st;
	cairn_restore_opts *opts;
	const crypt_keys_t *key; /* the encryption root's keys, or NULL */
	int rootfd;
	dirmeta_t *dirs;
	size_t ndirs, capdirs;
	bool *found; /* per requested path */
	bool as_root;
	bool owners; /* as_root, and not told to leave owners (no_owner) */
	bool root_made; /* the snapshot's root is made: finish_dirs sets its mode */
	pthread_mutex_t lock;
	int first_err;
	uint64_t first_seq; /* stream position of the entry that failed first */
	int64_t last_progress;
	lanes_t *lanes; /* NULL: the reading thread writes every file */
	int nlanes;
	digest_t run_bundle; /* the bundle of the current run of files */
	int run_lane, run_len;
	pathmap_t links; /* multiply linked file -> its lane + 1, for its hardlinks */
	pathmap_t aside; /* partial restore: first names left out -> aside_t */
	pathmap_t linked; /* partial restore: first names that wanted hardlinks name */
} rctx_t;

/* The first name of a multiply linked inode that a partial restore left
 * out, kept in case a name it restores is a hardlink to it: that name
 * then gets the content (now = that name, for the inode's later names). */
typedef struct aside {
	tree_entry_t e;
	char *now;
} aside_t;

/* One writer: the reading thread, or a lane. */
typedef struct wctx {
	rctx_t *c;
	bool reader;     /* the reading thread: it reports progress */
	uint64_t seq;    /* stream position of the entry being written */
	char *pdir_path; /* the cached parent directory */
	int pdir_fd;
	bundleslot_t bundles[BUNDLE_SLOTS];
	uint64_t bundle_clock;
	buf_t chunk;
	/* First names of multiply linked files this writer could not create
	 * -> aside_t: the inode's next name gets the content instead (its
	 * hardlinks come to the same writer, see dispatch). */
	pathmap_t lost;
} wctx_t;

static void aside_free(void *p);

static void wctx_free(wctx_t *w)
{
	pathmap_free(&w->lost, aside_free);
	if (w->pdir_fd >= 0)
		close(w->pdir_fd);
	free(w->pdir_path);
	for (size_t i = 0; i < BUNDLE_SLOTS; i++)
		buf_free(&w->bundles[i].data);
	buf_free(&w->chunk);
}

static int open_beneath(int rootfd, const char *path, int flags)
{
	struct open_how how = {.flags = flags | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS};
	long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/* The parent directory fd of path and its last component. */
static int parent_of(wctx_t *w, const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	*name = slash ? slash + 1 : path;
	if (!slash)
		return w->c->rootfd;
	size_t len = slash - path;
	if (w->pdir_path && strlen(w->pdir_path) == len && !memcmp(w->pdir_path, path, len))
		return w->pdir_fd;
	if (w->pdir_fd >= 0)
		close(w->pdir_fd);
	free(w->pdir_path);
	w->pdir_path = strndup(path, len);
	w->pdir_fd = w->pdir_path
			     ? open_beneath(w->c->rootfd, w->pdir_path, O_RDONLY | O_DIRECTORY)
			     : -ENOMEM;
	if (w->pdir_fd < 0) {
		int e = w->pdir_fd;
		free(w->pdir_path);
		w->pdir_path = NULL;
		return e;
	}
	return w->pdir_fd;
}

static int fail(wctx_t *w, const char *path, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Records a per-file failure; restore goes on with the next file. */
static int fail(wctx_t *w, const char *path, int err, const char *fmt, ...)
{
	rctx_t *c = w->c;
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&c->lock);
	if (!c->first_err || w->seq < c->first_seq) {
		c->first_err = err;
		c->first_seq = w->seq;
		store_err(c->st, err, "%s (file %s)", why, *path ? path : "/");
	}
	c->opts->errors++;
	if (c->opts->warn) {
		char obj[4200];
		snprintf(obj, sizeof(obj), "%s: %s", *path ? path : "/", why);
		c->opts->warn(obj, err, c->opts->arg);
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static int chunk_fail(wctx_t *w, const char *path, const chunk_ref_t *ref, int err)
{
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(&ref->digest, hex);
	return fail(w, path, err, "chunk %s: %s", hex,
		    err == -ENOENT ? "missing from the chunk store" : cairn_strerror(err));
}

static void add_bytes(rctx_t *c, uint64_t n)
{
	__atomic_fetch_add(&c->opts->bytes, n, __ATOMIC_RELAXED);
}

/* Only the reading thread reports progress. */
static void progress(rctx_t *c, bool force)
{
	if (!c->opts->progress)
		return;
	int64_t now = mono_ns();
	if (!force && now - c->last_progress < 200000000)
		return;
	c->last_progress = now;
	cairn_progress p = {.phase = "restore",
			    .files = __atomic_load_n(&c->opts->files, __ATOMIC_RELAXED),
			    .bytes = __atomic_load_n(&c->opts->bytes, __ATOMIC_RELAXED)};
	/* Never at once with a lane's warn callback: both write the terminal. */
	pthread_mutex_lock(&c->lock);
	c->opts->progress(&p, c->opts->arg);
	pthread_mutex_unlock(&c->lock);
}

static void progress_tick(void *arg)
{
	progress(arg, false);
}

static struct timespec ts_of(int64_t ns)
{
	struct timespec t = {ns / 1000000000, ns % 1000000000};
	if (t.tv_nsec < 0) {
		t.tv_sec--;
		t.tv_nsec += 1000000000;
	}
	return t;
}

/* ---- content ---- */

/* blockdev: the target is a block device, which has no holes (they are
 * written as zeros) and a fixed size (no truncate). */
static int write_extents(wctx_t *w, int fd, const tree_entry_t *e, bool blockdev)
{
	uint64_t off = 0;
	for (uint32_t i = 0; i < e->nextent; i++) {
		const tree_extent_t *x = &e->extents[i];
		if (x->kind == TREE_EXT_HOLE) {
			if (blockdev) {
				static const uint8_t z[65536];
				for (uint64_t k = 0; k < x->length; k += sizeof(z)) {
					int r = pwrite_full(fd, z, MIN(sizeof(z), x->length - k), off + k);
					if (r < 0)
						return fail(w, e->path, r, "write: %s", strerror(-r)), r;
				}
			}
			off += x->length;
			continue;
		}
		int r = chunkstore_get_key(w->c->st->cs, w->c->key, &x->ref.digest, &w->chunk);
		if (r < 0)
			return chunk_fail(w, e->path, &x->ref, r), r;
		r = pwrite_full(fd, w->chunk.data, w->chunk.len, off);
		if (r < 0)
			return fail(w, e->path, r, "write: %s", strerror(-r)), r;
		off += w->chunk.len;
		add_bytes(w->c, w->chunk.len);
		if (w->reader)
			progress(w->c, false);
	}
	if (!blockdev && ftruncate(fd, off) < 0)
		return fail(w, e->path, -errno, "truncate: %s", strerror(errno)), -errno;
	return 0;
}

/* The decoded bundle d, from a slot or read into the least recently used. */
static int bundle_get(wctx_t *w, const digest_t *d, const buf_t **out)
{
	bundleslot_t *victim = &w->bundles[0];
	for (size_t i = 0; i < BUNDLE_SLOTS; i++) {
		bundleslot_t *s = &w->bundles[i];
		if (s->used && !digest_cmp(&s->d, d)) {
			s->used = ++w->bundle_clock;
			*out = &s->data;
			return 0;
		}
		if (s->used < victim->used)
			victim = s;
	}
	victim->used = 0;
	int r = chunkstore_get_key(w->c->st->cs, w->c->key, d, &victim->data);
	if (r < 0)
		return r;
	victim->d = *d;
	victim->used = ++w->bundle_clock;
	*out = &victim->data;
	return 0;
}

static int write_bundle_part(wctx_t *w, int fd, const tree_entry_t *e)
{
	const buf_t *bundle;
	int r = bundle_get(w, &e->bundle.digest, &bundle);
	if (r < 0)
		return chunk_fail(w, e->path, &e->bundle, r), r;
	if ((uint64_t)e->bundle_off + e->size > bundle->len)
		return fail(w, e->path, CAIRN_ECORRUPT, "bundle reference out of range"),
		       CAIRN_ECORRUPT;
	r = write_full(fd, bundle->data + e->bundle_off, e->size);
	if (r < 0)
		return fail(w, e->path, r, "write: %s", strerror(-r)), r;
	add_bytes(w->c, e->size);
	return 0;
}

/* ---- metadata ---- */

#define DEFAULT_ACL "system.posix_acl_default"
#define ACCESS_ACL "system.posix_acl_access"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452 /* Linux 6.6; the same number on every architecture */
#endif

/* chmod of what the O_PATH descriptor pfd pins, never of a name: fchmod
 * takes no O_PATH descriptor, fchmodat2 with AT_EMPTY_PATH does (Linux
 * 6.6); before that (or where a seccomp filter refuses it), the pin's
 * /proc path, which needs /proc. */
static int chmod_pinned(int pfd, mode_t mode)
{
	if (syscall(SYS_fchmodat2, pfd, "", mode, AT_EMPTY_PATH) == 0)
		return 0;
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	return chmod(proc, mode);
}

/* One extended attribute, on an open file or (fd < 0) by the /proc path
 * of an O_PATH descriptor pinning a node (pin_made; followed: to that
 * node, a symlink itself included, since xattr calls take no O_PATH
 * descriptor).  One that cannot be
 * set is a per-file failure naming it: the data is restored, but the
 * restore does not claim full fidelity.  As with owners, a non-root
 * restore skips the namespaces only root may write. */
static void set_xattr(wctx_t *w, int fd, const char *pathfd, const tree_entry_t *e,
		      const tree_xattr_t *x)
{
	int r = fd >= 0 ? fsetxattr(fd, x->name, x->value, x->len, 0)
			: setxattr(pathfd, x->name, x->value, x->len, 0);
	if (r == 0)
		return;
	bool root_only = !strncmp(x->name, "trusted.", 8) || !strncmp(x->name, "security.", 9);
	if (!w->c->as_root && root_only && errno == EPERM)
		return;
	fail(w, e->path, -errno, "extended attribute %s: %s", x->name, strerror(errno));
}

/* Extended attributes (ACLs among them), but a directory's default ACL:
 * that one is set once its children exist (finish_dirs), or every child
 * would inherit an ACL it did not have. */
static void set_xattrs(wctx_t *w, int fd, const char *pathfd, const tree_entry_t *e)
{
	for (uint16_t i = 0; i < e->nxattr; i++)
		if (e->type != TREE_DIR || strcmp(e->xattrs[i].name, DEFAULT_ACL))
			set_xattr(w, fd, pathfd, e, &e->xattrs[i]);
}

/* The owner comes first: the kernel clears file capabilities
 * (security.capability) and set-id bits on a chown, so xattrs and the
 * mode follow it.  Owners only stick for root, as with tar; a root
 * restore that cannot set one (a user namespace, root_squash) says so. */
static void set_owner(wctx_t *w, int fd, int dfd, const char *name, const tree_entry_t *e)
{
	if (!w->c->owners)
		return;
	int r = fd >= 0 ? fchown(fd, e->uid, e->gid)
			: fchownat(dfd, name, e->uid, e->gid,
				   AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH));
	if (r < 0)
		fail(w, e->path, -errno, "owner %u:%u: %s", e->uid, e->gid, strerror(errno));
}

/* A pinned node's times: utimensat takes an O_PATH descriptor with
 * AT_EMPTY_PATH (not a NULL path, which wants one opened for I/O); where
 * that is refused, its /proc path, followed to the node. */
static int utimens_pinned(int pfd, const struct timespec t[2])
{
	if (utimensat(pfd, "", t, AT_EMPTY_PATH) == 0)
		return 0;
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	return utimensat(AT_FDCWD, proc, t, 0);
}

/* Set-id bits grant their file's owner's or group's rights to whoever
 * runs it.  Where the file did not get the recorded owner (--no-same-owner,
 * a user's restore, a chown that failed), keeping them would grant the
 * restoring user's or root's rights, which the snapshot never did: as
 * cp -p does when it cannot keep an owner, each bit is cleared unless its
 * owner (setuid: the user, setgid: the group) is the recorded one.  A
 * directory keeps its setgid bit: it only passes the group on to new
 * children, and grants no rights (cp and tar keep it too). */
static mode_t setid_kept(int fd, const tree_entry_t *e)
{
	mode_t mode = e->mode;
	if (e->type == TREE_DIR || !(mode & (S_ISUID | S_ISGID)))
		return mode;
	struct stat sb;
	if (fstat(fd, &sb) < 0)
		return mode & ~(S_ISUID | S_ISGID);
	if (sb.st_uid != e->uid)
		mode &= ~S_ISUID;
	if (sb.st_gid != e->gid)
		mode &= ~S_ISGID;
	return mode;
}

/* Mode and times, last: after the owner and the xattrs (an ACL's mask is
 * the mode's group bits, so chmod after the ACL keeps both as recorded).
 * Through an open file, or (fd < 0) the O_PATH pin pfd of a node that
 * cannot be opened (pin_made; a symlink has no mode of its own). */
static void set_mode_times(wctx_t *w, int fd, int pfd, const tree_entry_t *e)
{
	struct timespec t[2] = {ts_of(e->atime_ns ? e->atime_ns : e->mtime_ns), ts_of(e->mtime_ns)};
	bool symlink = e->type == TREE_SYMLINK;
	mode_t mode = symlink ? 0 : setid_kept(fd >= 0 ? fd : pfd, e);
	if (!symlink && (fd >= 0 ? fchmod(fd, mode) : chmod_pinned(pfd, mode)) < 0)
		fail(w, e->path, -errno, "mode %o: %s", mode & 07777, strerror(errno));
	if ((fd >= 0 ? futimens(fd, t) : utimens_pinned(pfd, t)) < 0)
		fail(w, e->path, -errno, "times: %s", strerror(errno));
}

/* ---- objects ---- */

/* With --force, whatever is in the way (a file, a symlink, a FIFO that
 * would block an open, a read-only file) is removed first; a directory in
 * the way is an error, as with tar. */
static int clear_way(wctx_t *w, int dfd, const char *name, const tree_entry_t *e)
{
	if (!w->c->opts->force || !unlinkat(dfd, name, 0) || errno == ENOENT)
		return 0;
	if (errno == EISDIR)
		return fail(w, e->path, -EISDIR, "a directory is in the way"), -EISDIR;
	return fail(w, e->path, -errno, "removing the old entry: %s", strerror(errno)), -errno;
}

/* A multiply linked file's first name could not be created (a directory
 * in the way, say): its entry is kept, so that the inode's next name gets
 * the content rather than a link to nothing. */
static int note_lost_first(wctx_t *w, const tree_entry_t *e)
{
	aside_t *a = calloc(1, sizeof(*a));
	if (!a || tree_entry_copy(&a->e, e) < 0 || pathmap_put(&w->lost, e->path, a) < 0) {
		if (a)
			aside_free(a);
		return -ENOMEM;
	}
	return 0;
}

static int make_reg(wctx_t *w, int dfd, const char *name, const tree_entry_t *e);
static int make_other(wctx_t *w, int dfd, const char *name, const tree_entry_t *e);

/* A hardlink e to a first name that could not be created: the first such
 * name to be created becomes the inode's first name and gets the content;
 * later ones link to it. */
static int link_lost_first(wctx_t *w, int dfd, const char *name, const tree_entry_t *e,
			   aside_t *lost)
{
	if (lost->now) {
		tree_entry_t to = *e;
		to.link = lost->now;
		return make_other(w, dfd, name, &to);
	}
	tree_entry_t first = lost->e;
	first.path = e->path;
	int r = make_reg(w, dfd, name, &first);
	/* (Not created either: it is noted as lost in turn, and the next
	 * name tries again.) */
	if (r == 0 && !pathmap_get(&w->lost, e->path))
		r = (lost->now = strdup(e->path)) ? 0 : -ENOMEM;
	return r;
}

static int make_reg(wctx_t *w, int dfd, const char *name, const tree_entry_t *e)
{
	if (clear_way(w, dfd, name, e) < 0)
		return e->nlink > 1 ? note_lost_first(w, e) : 0;
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_EXCL;
	int fd = openat(dfd, name, flags, 0600);
	if (fd < 0) {
		fail(w, e->path, -errno, "create: %s", strerror(errno));
		return e->nlink > 1 ? note_lost_first(w, e) : 0;
	}
	int r = 0;
	if (e->content == TREE_CONTENT_EXTENTS)
		r = write_extents(w, fd, e, false);
	else if (e->content == TREE_CONTENT_BUNDLE)
		r = write_bundle_part(w, fd, e);
	/* A file whose content failed (already reported) keeps what could
	 * be written, but not the recorded mode and times: with mode 0600
	 * and the time of the restore, no tool comparing size and mtime
	 * takes it for the complete file. */
	if (r == 0) {
		set_owner(w, fd, -1, NULL, e);
		set_xattrs(w, fd, NULL, e);
		set_mode_times(w, fd, -1, e);
	}
	close(fd);
	return 0;
}

static bool recorded(const tree_entry_t *e, const char *name)
{
	for (uint16_t i = 0; i < e->nxattr; i++)
		if (!strcmp(e->xattrs[i].name, name))
			return true;
	return false;
}

/* A directory restore did not just make (the target, made by the user or
 * by a mkdir that inherited its parent's default ACL, or one kept with
 * --force) may carry xattrs the snapshot does not record: it ends with
 * exactly the recorded ones, so every other one goes.  So does its default
 * ACL even when recorded, which every child would inherit meanwhile
 * (finish_dirs sets the recorded one at the end); set_xattrs sets the
 * other recorded ones.  The security.* attributes belong to the security
 * modules (an SELinux label cannot be removed, only replaced): one that
 * cannot be removed stays, and is no failure. */
static void drop_unrecorded_xattrs(wctx_t *w, int fd, const tree_entry_t *e)
{
	char small[1024], *names = small;
	ssize_t n = flistxattr(fd, small, sizeof(small));
	if (n < 0 && errno == ERANGE) {
		ssize_t need = flistxattr(fd, NULL, 0);
		names = need > 0 ? malloc(need) : NULL;
		n = names ? flistxattr(fd, names, need) : (errno = need < 0 ? errno : ENOMEM, -1);
		if (!names)
			names = small;
	}
	if (n < 0) {
		if (errno != ENOTSUP)
			fail(w, e->path, -errno, "listing the directory's extended attributes: %s",
			     strerror(errno));
		n = 0;
	}
	for (ssize_t i = 0; i < n; i += strlen(names + i) + 1) {
		const char *name = names + i;
		if ((strcmp(name, DEFAULT_ACL) && recorded(e, name)) || fremovexattr(fd, name) == 0 ||
		    errno == ENODATA || !strncmp(name, "security.", 9))
			continue;
		fail(w, e->path, -errno, "removing the extended attribute %s: %s", name,
		     strerror(errno));
	}
	if (names != small)
		free(names);
}

/* An existing directory that a user's earlier run left unreadable to
 * that user (the snapshot's mode 0311 or 0000) cannot be opened to be made
 * writable.  It is pinned with O_PATH instead (pfd, taken here) and given
 * mode|0700 through the pin (chmod_pinned; a pinned directory cannot be
 * swapped for a symlink), then opened as "." below the pin.  finish_dirs
 * sets the recorded mode at the end. */
static int open_pinned_dir(int pfd, mode_t *was)
{
	if (pfd < 0)
		return pfd;
	struct stat sb;
	int fd = fstat(pfd, &sb) < 0 || chmod_pinned(pfd, (sb.st_mode & 07777) | 0700) < 0
			 ? -1
			 : openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (was && fd >= 0)
		*was = sb.st_mode & 07777;
	if (fd < 0)
		fd = -errno;
	close(pfd);
	return fd;
}

/* The target may be read-only from an earlier run too (finish_dirs gave
 * it the snapshot root's mode), and a user, unlike root, could then
 * replace nothing in it.  Only then does it get u+rwx, until finish_dirs
 * sets the recorded mode: a target that is a live tree (a file restored
 * in place) keeps its mode for everyone else meanwhile. */
static void open_root(const rctx_t *c, int fd)
{
	struct stat sb;
	if (!c->as_root && fstat(fd, &sb) == 0 && sb.st_uid == geteuid() &&
	    (sb.st_mode & 0700) != 0700)
		fchmod(fd, (sb.st_mode & 07777) | 0700);
}

static int make_dir(wctx_t *w, int dfd, const char *name, const tree_entry_t *e)
{
	rctx_t *c = w->c;
	bool existed = false;
	if (*e->path && mkdirat(dfd, name, 0700) < 0) {
		struct stat sb;
		bool isdir = errno == EEXIST && !fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) &&
			     S_ISDIR(sb.st_mode);
		/* --force replaces a non-directory in the way. */
		if (!isdir && (errno != EEXIST || !c->opts->force || unlinkat(dfd, name, 0) < 0 ||
			       mkdirat(dfd, name, 0700) < 0))
			return fail(w, e->path, -errno, "mkdir: %s", strerror(errno));
		existed = isdir;
	}
	int fd = *e->path ? open_beneath(c->rootfd, e->path, O_RDONLY | O_DIRECTORY)
			  : dup(c->rootfd);
	if (fd == -EACCES && existed) {
		int again = open_pinned_dir(open_beneath(c->rootfd, e->path, O_PATH | O_DIRECTORY),
					    NULL);
		fd = again >= 0 ? again : fd; /* else: the first reason */
	}
	if (fd < 0)
		return fail(w, e->path, fd, "open directory: %s", strerror(-fd));
	/* An existing directory may be read-only from an earlier run; its
	 * mode is changed through the descriptor, which cannot have been
	 * swapped for a symlink out of the target since the check. */
	if (existed)
		fchmod(fd, 0700);
	else if (!*e->path)
		open_root(c, fd);
	if (!*e->path || existed)
		drop_unrecorded_xattrs(w, fd, e);
	set_xattrs(w, fd, NULL, e);
	close(fd);
	const tree_xattr_t *dacl = NULL;
	for (uint16_t i = 0; i < e->nxattr; i++)
		if (!strcmp(e->xattrs[i].name, DEFAULT_ACL))
			dacl = &e->xattrs[i];
	if (c->ndirs == c->capdirs) {
		size_t n = c->capdirs ? c->capdirs * 2 : 64;
		dirmeta_t *p = realloc(c->dirs, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->dirs = p;
		c->capdirs = n;
	}
	dirmeta_t *d = &c->dirs[c->ndirs];
	d->path = strdup(e->path);
	if (!d->path)
		return -ENOMEM;
	d->mode = e->mode;
	d->uid = e->uid;
	d->gid = e->gid;
	d->atime_ns = e->atime_ns;
	d->mtime_ns = e->mtime_ns;
	d->seq = w->seq;
	d->default_acl = (tree_xattr_t){0};
	if (dacl) {
		d->default_acl.name = DEFAULT_ACL;
		d->default_acl.len = dacl->len;
		d->default_acl.value = malloc(dacl->len ? dacl->len : 1);
		if (!d->default_acl.value) {
			free(d->path);
			return -ENOMEM;
		}
		memcpy(d->default_acl.value, dacl->value, dacl->len);
	}
	c->ndirs++;
	c->root_made |= !*e->path;
	return 0;
}

/* Whether the node pinned by pfd is the one just made for e: of its type
 * and, a symlink, pointing where e's does (one swapped in that matches
 * both only gets what the one made would have).  Not by its owner: where
 * the filesystem picks it (root squashed to nobody on NFS), the node made
 * is not this process's either. */
static bool is_made(int pfd, const tree_entry_t *e)
{
	mode_t want = e->type == TREE_SYMLINK ? S_IFLNK
		      : e->type == TREE_CHR   ? S_IFCHR
		      : e->type == TREE_BLK   ? S_IFBLK
		      : e->type == TREE_FIFO  ? S_IFIFO
					      : S_IFSOCK;
	struct stat sb;
	if (fstat(pfd, &sb) < 0 || (sb.st_mode & S_IFMT) != want)
		return false;
	if (e->type != TREE_SYMLINK)
		return true;
	size_t len = strlen(e->link);
	char *got = malloc(len + 2);
	bool same = got && readlinkat(pfd, "", got, len + 2) == (ssize_t)len &&
		    !memcmp(got, e->link, len);
	free(got);
	return same;
}

/* Owner, xattrs, mode and times of a new symlink, FIFO, device or socket,
 * which cannot be opened for them.  The node is pinned first by an O_PATH
 * descriptor and checked to be what was made (is_made): in a target others
 * can write to, its name could have been swapped meanwhile for a symlink
 * that a chmod by name would follow out of the target, or for another
 * file, which would get the snapshot's owner and times.  Everything then
 * goes through the pin. */
static int pin_made(wctx_t *w, int dfd, const char *name, const tree_entry_t *e)
{
	int pfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int err = pfd < 0 ? -errno : is_made(pfd, e) ? 0 : -EEXIST;
	if (err) {
		if (pfd >= 0)
			close(pfd);
		return fail(w, e->path, err, "%s",
			    err == -EEXIST ? "replaced by another file while being restored"
					   : strerror(-err));
	}
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	set_owner(w, -1, pfd, "", e);
	set_xattrs(w, -1, proc, e);
	set_mode_times(w, -1, pfd, e);
	close(pfd);
	return 0;
}

static int make_other(wctx_t *w, int dfd, const char *name, const tree_entry_t *e)
{
	rctx_t *c = w->c;
	if (clear_way(w, dfd, name, e) < 0)
		return 0;
	int r = 0;
	switch (e->type) {
	case TREE_SYMLINK:
		r = symlinkat(e->link, dfd, name);
		break;
	case TREE_HARDLINK: {
		aside_t *lost = pathmap_get(&w->lost, e->link);
		if (lost)
			return link_lost_first(w, dfd, name, e, lost);
		const char *tname;
		char *tpath = strdup(e->link);
		if (!tpath)
			return -ENOMEM;
		char *slash = strrchr(tpath, '/');
		int tfd = c->rootfd;
		if (slash) {
			*slash = 0;
			tfd = open_beneath(c->rootfd, tpath, O_RDONLY | O_DIRECTORY);
			tname = slash + 1;
		} else {
			tname = tpath;
		}
		r = tfd < 0 ? (errno = -tfd, -1) : linkat(tfd, tname, dfd, name, 0);
		int saved = errno;
		if (slash && tfd >= 0)
			close(tfd);
		free(tpath);
		errno = saved;
		if (r < 0)
			return fail(w, e->path, -errno, "link to %s: %s", e->link, strerror(errno));
		return 0;
	}
	case TREE_CHR:
	case TREE_BLK:
		r = mknodat(dfd, name, (e->type == TREE_CHR ? S_IFCHR : S_IFBLK) | 0600, e->rdev);
		break;
	case TREE_FIFO:
		r = mknodat(dfd, name, S_IFIFO | 0600, 0);
		break;
	case TREE_SOCK:
		r = mknodat(dfd, name, S_IFSOCK | 0600, 0);
		break;
	}
	if (r < 0)
		return fail(w, e->path, -errno, "create: %s", strerror(errno));
	return pin_made(w, dfd, name, e);
}

static int restore_entry(wctx_t *w, const tree_entry_t *e)
{
	const char *name = e->path;
	int dfd = *e->path ? parent_of(w, e->path, &name) : w->c->rootfd;
	if (dfd < 0)
		return fail(w, e->path, dfd, "parent directory: %s", strerror(-dfd));
	__atomic_fetch_add(&w->c->opts->files, 1, __ATOMIC_RELAXED);
	switch (e->type) {
	case TREE_DIR:
		return make_dir(w, dfd, name, e);
	case TREE_REG:
		if (!*e->path)
			return fail(w, e->path, -EISDIR, "a volume image in a filesystem tree");
		return make_reg(w, dfd, name, e);
	default:
		return make_other(w, dfd, name, e);
	}
}

/* A lane's writer: one regular file. */
static void lane_write(void *arg, tree_entry_t *e, uint64_t seq)
{
	wctx_t *w = arg;
	w->seq = seq;
	restore_entry(w, e);
	tree_entry_clear(e);
}

/* Where a multiply linked object went: a lane, BY_READER (a symlink,
 * device or FIFO: the reading thread made it already), or -1 (unknown). */
#define BY_READER RESTORE_LANES_MAX

static int link_lane(const rctx_t *c, const char *path)
{
	void *v = pathmap_get(&c->links, path);
	return v ? (int)(uintptr_t)v - 1 : -1;
}

static int link_note(rctx_t *c, const char *path, int lane)
{
	return pathmap_put(&c->links, path, (void *)(uintptr_t)(lane + 1));
}

/* A bundle's files go to one lane in runs of BUNDLE_RUN: the lane decodes
 * the bundle once per run, and one bundle of thousands of tiny files
 * still spreads over the lanes.  Files with their own chunks, and each
 * new run, go to the lane with the shortest queue. */
static int lane_of(rctx_t *c, const tree_entry_t *e)
{
	if (e->content != TREE_CONTENT_BUNDLE)
		return lanes_shortest(c->lanes);
	if (c->run_len && c->run_len < BUNDLE_RUN &&
	    !digest_cmp(&c->run_bundle, &e->bundle.digest)) {
		c->run_len++;
		return c->run_lane;
	}
	c->run_bundle = e->bundle.digest;
	c->run_len = 1;
	return c->run_lane = lanes_shortest(c->lanes);
}

/* Restores one entry from the reading thread's writer w, or hands a
 * regular file to a lane (which takes e). */
static int dispatch(rctx_t *c, wctx_t *w, tree_entry_t *e, uint64_t seq)
{
	progress(c, false);
	if (c->lanes && e->type == TREE_REG && *e->path) {
		int lane = lane_of(c, e);
		if (e->nlink > 1 && link_note(c, e->path, lane) < 0)
			return -ENOMEM;
		lanes_push(c->lanes, lane, e, seq);
		return 0;
	}
	/* Its target may be a file that a lane has not written yet: behind
	 * it in its lane, or, if we do not know where it went, once every
	 * lane is done. */
	if (c->lanes && e->type == TREE_HARDLINK) {
		int lane = link_lane(c, e->link);
		if (lane >= 0 && lane != BY_READER) {
			lanes_push(c->lanes, lane, e, seq);
			return 0;
		}
		if (lane < 0)
			lanes_drain(c->lanes);
	}
	if (c->lanes && e->nlink > 1 && e->type != TREE_DIR && e->type != TREE_HARDLINK &&
	    link_note(c, e->path, BY_READER) < 0)
		return -ENOMEM;
	w->seq = seq;
	return restore_entry(w, e);
}

/* ---- partial restores and hardlinks ---- */

static void aside_free(void *p)
{
	aside_t *a = p;
	tree_entry_clear(&a->e);
	free(a->now);
	free(a);
}

/* A partial restore leaves e out; keeps it (taking its fields) if a name
 * it restores is a hardlink to it (find_linked). */
static int set_aside(rctx_t *c, tree_entry_t *e)
{
	if (e->nlink < 2 || e->type == TREE_DIR || e->type == TREE_HARDLINK ||
	    !pathmap_get(&c->linked, e->path))
		return 0;
	aside_t *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->e = *e;
	if (pathmap_put(&c->aside, e->path, a) < 0) {
		free(a);
		return -ENOMEM;
	}
	*e = (tree_entry_t){0};
	return 0;
}

/* Restores wanted entry e.  A hardlink to a first name the restore left
 * out becomes that inode's first name here: it gets the content, and the
 * inode's later names link to it. */
static int restore_wanted(rctx_t *c, wctx_t *w, tree_entry_t *e, uint64_t seq)
{
	aside_t *a = e->type == TREE_HARDLINK ? pathmap_get(&c->aside, e->link) : NULL;
	if (!a)
		return dispatch(c, w, e, seq);
	if (a->now) {
		char *now = strdup(a->now);
		if (!now)
			return -ENOMEM;
		free(e->link);
		e->link = now;
		return dispatch(c, w, e, seq);
	}
	if (!(a->now = strdup(e->path)))
		return -ENOMEM;
	tree_entry_t first = a->e;
	a->e = (tree_entry_t){0};
	free(first.path);
	first.path = strdup(e->path);
	int r = first.path ? dispatch(c, w, &first, seq) : -ENOMEM;
	tree_entry_clear(&first);
	return r;
}

/* Directory modes and times go last: creating children changes mtimes,
 * and a read-only directory could not receive its children. */
static void finish_dirs(rctx_t *c, wctx_t *w)
{
	for (size_t i = c->ndirs; i-- > 0;) {
		dirmeta_t *d = &c->dirs[i];
		tree_entry_t e = {.type = TREE_DIR, .path = d->path, .mode = d->mode, .uid = d->uid,
				  .gid = d->gid, .atime_ns = d->atime_ns, .mtime_ns = d->mtime_ns};
		w->seq = d->seq;
		int fd = *d->path ? open_beneath(c->rootfd, d->path, O_RDONLY | O_DIRECTORY)
				  : dup(c->rootfd);
		if (fd < 0) {
			fail(w, d->path, fd, "open directory: %s", strerror(-fd));
		} else {
			set_owner(w, fd, -1, NULL, &e);
			if (d->default_acl.value)
				set_xattr(w, fd, NULL, &e, &d->default_acl);
			set_mode_times(w, fd, -1, &e);
			close(fd);
		}
		free(d->default_acl.value);
		free(d->path);
	}
	free(c->dirs);
	c->dirs = NULL;
	c->ndirs = 0;
}

/* ---- path selection ---- */

static bool has_prefix_dir(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && path[n] == '/';
}

/* 1 = restore, 0 = skip; ancestors of a wanted path are restored too. */
static int wanted(rctx_t *c, const char *path)
{
	if (!c->opts->npaths)
		return 1;
	int w = 0;
	for (size_t i = 0; i < c->opts->npaths; i++) {
		const char *p = c->opts->paths[i];
		if (!*p) { /* the whole tree */
			c->found[i] = true;
			w = 1;
		} else if (!strcmp(path, p)) {
			c->found[i] = true;
			w = 1;
		} else if (has_prefix_dir(path, p) || !*path || has_prefix_dir(p, path)) {
			w = 1;
		}
	}
	return w;
}

/* ---- entry points ---- */

/* *was: the target's mode before open_pinned_dir changed it, else -1. */
static int open_target_dir(cairn_store *st, const char *target, bool force, mode_t *was)
{
	*was = (mode_t)-1;
	if (mkdir(target, 0700) < 0 && errno != EEXIST)
		return store_err(st, -errno, "%s: %s", target, strerror(errno));
	int fd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && force) {
		int pfd = open(target, O_PATH | O_DIRECTORY | O_CLOEXEC);
		fd = pfd < 0 ? -1 : open_pinned_dir(pfd, was);
		errno = EACCES; /* if that failed too: the first reason */
	}
	if (fd < 0)
		return store_err(st, -errno, "%s: %s", target, strerror(errno));
	if (!force) {
		int probe = dup(fd);
		DIR *d = fdopendir(probe);
		struct dirent *de;
		bool empty = true;
		while (d && (de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				empty = false;
		if (d)
			closedir(d);
		if (!empty) {
			close(fd);
			return store_err(st, -ENOTEMPTY,
					 "%s: target directory is not empty (use --force)", target);
		}
	}
	return fd;
}

/* How many lanes write files: CAIRN_RESTORE_THREADS, else one per CPU
 * this process may run on.  One means no lane: the reading thread
 * writes. */
static int lane_count(void)
{
	long n = 0;
	const char *env = getenv("CAIRN_RESTORE_THREADS");
	cpu_set_t cpus;
	if (env && *env)
		n = strtol(env, NULL, 10);
	if (n <= 0 && sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
		n = CPU_COUNT(&cpus);
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > RESTORE_LANES_MAX ? RESTORE_LANES_MAX : (int)n;
}

/* Starts the lanes, each with a writer from w[]; without them (one CPU,
 * or threads cannot start) the reading thread writes every file. */
static void start_lanes(rctx_t *c, wctx_t *w, int n)
{
	void *args[RESTORE_LANES_MAX];
	for (int i = 0; i < n; i++) {
		w[i] = (wctx_t){.c = c, .pdir_fd = -1};
		args[i] = &w[i];
	}
	if (n > 1 && lanes_start(&c->lanes, n, lane_write, args, progress_tick, c) == 0)
		c->nlanes = n;
}

/* For a partial restore: notes the first names that the wanted hardlinks
 * point at, so that only those are set aside (a tree of hardlinked copies
 * can have millions of others).  It costs one more read of the tree
 * stream; a damaged one is reported by the restore's own read. */
static int find_linked(rctx_t *c, const crypt_keys_t *key, const buf_t *roots)
{
	snaptree_t t;
	tree_entry_t e = {0};
	int r = snaptree_open_key(&t, c->st->cs, key, roots);
	while (r >= 0 && (r = snaptree_next(&t, &e)) == 1) {
		if (e.type == TREE_HARDLINK && wanted(c, e.path))
			r = pathmap_put(&c->linked, e.link, (void *)1);
		tree_entry_clear(&e);
	}
	snaptree_close(&t);
	return r == -ENOMEM ? r : 0;
}

/* Keeps the path of the entry last read from the tree stream (a lane
 * may take the entry itself), to say where a broken stream stopped. */
static int note_last(buf_t *last, const char *path)
{
	last->len = 0;
	return buf_append(last, path, strlen(path) + 1);
}

/* The tree stream cannot be read on, so nothing after the entry last read
 * is restored.  That is what the restore ends with, even when files failed
 * before it: each of those was reported as it failed, but naming only the
 * first would hide that the rest of the snapshot was never reached. */
static int tree_fail(cairn_store *st, const snaptree_t *t, int r, const buf_t *last)
{
	char where[4200];
	const char *path = last->len ? (const char *)last->data : NULL;
	if (path)
		snprintf(where, sizeof(where), "the restore stopped after %s", *path ? path : "/");
	else
		snprintf(where, sizeof(where), "nothing was restored");
	const char *why = r == -ENOENT ? "missing from the chunk store" : cairn_strerror(r);
	/* No chunk failed to read: a record in a chunk that read well is bad. */
	if (!t->m.failed.plain_len)
		return store_err(st, r, "tree stream: %s; %s", cairn_strerror(r), where);
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(&t->m.failed.digest, hex);
	return store_err(st, r, "tree stream chunk %s: %s; %s", hex, why, where);
}

/* The target as judged before the snapshot is held and read (judge_target):
 * a tree's open directory, or what stat found at a volume's. */
typedef struct rtarget {
	int rootfd;      /* a tree's target, or -1 */
	mode_t was;      /* open_target_dir's */
	bool exists;     /* a volume's target existed ... */
	struct stat sb;  /* ... as this */
} rtarget_t;

/* Gives back the mode a pin changed (open_target_dir) if the restore did
 * not reach the snapshot's root, and closes the target. */
static void target_close(rtarget_t *tg, bool root_made)
{
	if (tg->rootfd < 0)
		return;
	if (tg->was != (mode_t)-1 && !root_made)
		fchmod(tg->rootfd, tg->was);
	close(tg->rootfd);
	tg->rootfd = -1;
}

static int restore_tree(cairn_store *st, const crypt_keys_t *key, const buf_t *roots,
			rtarget_t *tg, cairn_restore_opts *opts)
{
	rctx_t c = {.st = st, .opts = opts, .as_root = geteuid() == 0, .key = key,
		    .lock = PTHREAD_MUTEX_INITIALIZER};
	c.owners = c.as_root && !opts->no_owner;
	c.found = calloc(opts->npaths + 1, sizeof(bool));
	if (!c.found)
		return -ENOMEM;
	c.rootfd = tg->rootfd;
	wctx_t reader = {.c = &c, .reader = true, .pdir_fd = -1}, lane[RESTORE_LANES_MAX];
	int nlanes = lane_count();
	start_lanes(&c, lane, nlanes);
	snaptree_t t = {0};
	int dr = opts->npaths ? find_linked(&c, key, roots) : 0;
	if (dr < 0)
		store_err(st, dr, "finding the hardlinks to restore: %s", cairn_strerror(dr));
	int r = dr < 0 ? 0 : snaptree_open_key(&t, st->cs, key, roots);
	tree_entry_t e = {0};
	buf_t last = {0};
	for (uint64_t seq = 0; !dr && r >= 0 && (r = snaptree_next(&t, &e)) == 1; seq++) {
		/* Only running out of memory stops a restore; name the entry, not
		 * the tree stream (e is intact: a lane takes it only on success). */
		dr = note_last(&last, e.path);
		if (!dr)
			dr = wanted(&c, e.path) ? restore_wanted(&c, &reader, &e, seq)
						: set_aside(&c, &e);
		if (dr < 0)
			store_err(st, dr, "%s: %s", *e.path ? e.path : "/", cairn_strerror(dr));
		tree_entry_clear(&e);
	}
	/* Every file is written before directories get their modes and times,
	 * and before the first error is read; draining shows progress. */
	if (c.lanes)
		lanes_drain(c.lanes);
	lanes_stop(c.lanes);
	for (int i = 0; i < nlanes; i++)
		wctx_free(&lane[i]);
	pathmap_free(&c.links, NULL);
	pathmap_free(&c.aside, aside_free);
	pathmap_free(&c.linked, NULL);
	if (dr < 0)
		r = dr;
	finish_dirs(&c, &reader);
	/* A restore that stopped before the snapshot's root (its tree stream
	 * unreadable from the start) gives back the mode the pin changed. */
	target_close(tg, c.root_made);
	/* After finish_dirs, whose failures would replace the detail. */
	if (r < 0 && !dr)
		tree_fail(st, &t, r, &last);
	buf_free(&last);
	snaptree_close(&t);
	for (size_t i = 0; r >= 0 && i < opts->npaths; i++)
		if (!c.found[i])
			r = store_err(st, -ENOENT, "%s: no such path in the snapshot",
				      opts->paths[i]);
	progress(&c, true);
	wctx_free(&reader);
	free(c.found);
	if (r < 0)
		return r;
	return c.first_err;
}

/* The image entry of a volume's tree, read before the target is opened:
 * a tree that cannot be read leaves an existing image as it was. */
static int volume_entry(cairn_store *st, const crypt_keys_t *key, const buf_t *roots,
			tree_entry_t *e)
{
	snaptree_t t;
	buf_t none = {0};
	int r = snaptree_open_key(&t, st->cs, key, roots);
	if (r == 0)
		r = snaptree_next(&t, e);
	if (r < 0 && r != -ENOMEM)
		tree_fail(st, &t, r, &none);
	else if (r == 0)
		r = store_err(st, CAIRN_ECORRUPT, "volume tree is empty");
	else if (r == 1 && (e->type != TREE_REG || *e->path))
		r = store_err(st, CAIRN_ECORRUPT, "volume tree has no image entry");
	snaptree_close(&t);
	if (r < 0)
		tree_entry_clear(e);
	return r < 0 ? r : 0;
}

/* Whether a volume may be written onto target as stat found it (exists:
 * whether it did): a regular file that is empty or a block device, whose
 * contents are overwritten, only with --force, as a non-empty target
 * directory is refused; nothing else at all (a character device, FIFO or
 * socket cannot hold an image). */
static int volume_target_ok(cairn_store *st, const char *target, bool exists,
			    const struct stat *sb, bool force)
{
	if (!exists)
		return 0;
	if (S_ISBLK(sb->st_mode) && !force)
		return store_err(st, -EEXIST,
				 "%s: target is a block device, whose contents would be "
				 "overwritten (use --force)",
				 target);
	if (S_ISREG(sb->st_mode) && sb->st_size > 0 && !force)
		return store_err(st, -EEXIST, "%s: target exists and is not empty (use --force)",
				 target);
	if (!S_ISREG(sb->st_mode) && !S_ISBLK(sb->st_mode))
		return store_err(st, -EINVAL, "%s: target is not a file or block device", target);
	return 0;
}

/* Opens the volume's target, judged by volume_target_ok, for writing.  It
 * is opened without waiting (a FIFO swapped in meanwhile would block the
 * open) and must still be what was judged: made here (O_EXCL) if there
 * was none, else the same inode, judged again as it is now (an empty
 * image written to meanwhile); a regular file is truncated only then (the
 * image's holes must read as zeros). */
static int open_volume_target(cairn_store *st, const char *target, bool exists,
			      const struct stat *was, bool force)
{
	/* A block device exclusively, as mkfs opens one: one in use (a
	 * mounted filesystem) is refused, EBUSY, not written under its user. */
	bool blockdev = exists && S_ISBLK(was->st_mode);
	int fd = open(target, O_WRONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
				      (!exists ? O_CREAT | O_EXCL : blockdev ? O_EXCL : 0),
		      0600);
	if (fd < 0 && blockdev && errno == EBUSY)
		return store_err(st, -EBUSY,
				 "%s: target is a block device in use (mounted, say); not written",
				 target);
	if (fd < 0 && !exists && errno == EEXIST)
		return store_err(st, -EEXIST,
				 "%s: target made by another program meanwhile; not written "
				 "(run it again)",
				 target);
	if (fd < 0)
		return store_err(st, -errno, "%s: %s", target, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) < 0) {
		int e = -errno;
		close(fd);
		return store_err(st, e, "%s: %s", target, strerror(-e));
	}
	if (exists && (sb.st_dev != was->st_dev || sb.st_ino != was->st_ino ||
		       (sb.st_mode & S_IFMT) != (was->st_mode & S_IFMT))) {
		close(fd);
		return store_err(st, -EEXIST, "%s: target replaced by another file meanwhile",
				 target);
	}
	int r = exists ? volume_target_ok(st, target, true, &sb, force) : 0;
	if (r < 0) {
		close(fd);
		return r;
	}
	if (S_ISREG(sb.st_mode) && ftruncate(fd, 0) < 0) {
		int e = -errno;
		close(fd);
		return store_err(st, e, "%s: %s", target, strerror(-e));
	}
	return fd;
}

static int restore_volume(cairn_store *st, const crypt_keys_t *key, const buf_t *roots,
			  const char *target, const rtarget_t *tg, cairn_restore_opts *opts)
{
	bool blockdev = tg->exists && S_ISBLK(tg->sb.st_mode);
	tree_entry_t e = {0};
	int r = volume_entry(st, key, roots, &e);
	if (r < 0)
		return r;
	int fd = open_volume_target(st, target, tg->exists, &tg->sb, opts->force);
	if (fd < 0) {
		tree_entry_clear(&e);
		return fd;
	}
	rctx_t c = {.st = st, .opts = opts, .rootfd = -1, .key = key,
		    .lock = PTHREAD_MUTEX_INITIALIZER};
	wctx_t w = {.c = &c, .reader = true, .pdir_fd = -1};
	/* Failures name the image by its target: its path in the tree is
	 * empty, which reads as "/", the root filesystem. */
	char *image = strdup(target);
	if (!image) {
		close(fd);
		tree_entry_clear(&e);
		return -ENOMEM;
	}
	free(e.path);
	e.path = image;
	/* A block device is not sparse: its holes must become zeros. */
	write_extents(&w, fd, &e, blockdev);
	opts->files = 1;
	tree_entry_clear(&e);
	wctx_free(&w);
	if (fsync(fd) < 0 && !c.first_err)
		r = store_err(st, -errno, "%s: %s", target, strerror(errno));
	close(fd);
	return r < 0 ? r : c.first_err;
}

/* Judges the target before the snapshot is held: a refused restore (a
 * target not empty, not a directory, a device without --force) takes no
 * hold. */
static int judge_target(cairn_store *st, const ds_row_t *ds, const char *target,
			const cairn_restore_opts *opts, rtarget_t *tg)
{
	*tg = (rtarget_t){.rootfd = -1, .was = (mode_t)-1};
	if (ds->type != CAIRN_TYPE_VOLUME) {
		tg->rootfd = open_target_dir(st, target, opts->force, &tg->was);
		return tg->rootfd < 0 ? tg->rootfd : 0;
	}
	tg->exists = stat(target, &tg->sb) == 0;
	/* A symlink to nothing (or to itself) would be written through by
	 * the create: as cp, the restore does not let a symlink someone
	 * planted choose where the image goes. */
	if (!tg->exists && lstat(target, &tg->sb) == 0 && S_ISLNK(tg->sb.st_mode))
		return store_err(st, -EEXIST,
				 "%s: target is a symlink to nothing, not written through", target);
	return volume_target_ok(st, target, tg->exists, &tg->sb, opts->force);
}

/* ---- the hold ---- */

/* How long a restore waits for another writer to take or release its hold. */
#define RESTORE_HOLD_WAIT_MS 5000

struct tag_find {
	const char *tag;
	bool found;
};

static int tag_seen(const char *snap, const char *tag, int64_t when, int pid, void *arg)
{
	struct tag_find *f = arg;
	f->found |= pid && !strcmp(tag, f->tag);
	return 0;
}

/* Whether snap has the temporary hold tag (a read: it waits for no one),
 * keeping the error detail. */
static bool tag_held(cairn_store *st, const char *snap, const char *tag)
{
	char saved[sizeof(st->errdetail)];
	memcpy(saved, st->errdetail, sizeof(saved));
	struct tag_find f = {.tag = tag};
	bool held = cairn_holds_iter(st, snap, tag_seen, &f) == 0 && f.found;
	memcpy(st->errdetail, saved, sizeof(saved));
	return held;
}

/* Holds snap for the restore (a temporary hold, as send and mount take):
 * a destroy meanwhile, a prune run by its timer say, is refused or
 * deferred (destroy -d), so gc cannot take the chunks the restore has yet
 * to read.  A restore only reads, and must bring files back also where no
 * hold can be taken: a user who cannot write to the store, a full disk.
 * So a failed hold is reported through warn and the restore goes on (a
 * store on a read-only filesystem takes none and needs none). */
static bool hold_snap(cairn_store *st, const char *snap, cairn_restore_opts *opts, char *tag,
		      size_t len)
{
	static unsigned calls; /* two restores in one process: two tags */
	snprintf(tag, len, ".restore-%d-%llu-%u", (int)getpid(),
		 (unsigned long long)process_start_time(getpid()),
		 __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED));
	cairn_hold_item it = {.snapshot = snap, .tag = tag};
	/* Not the usual 600 s behind another command's long transaction (a
	 * dry-run receive of a slow stream keeps one open throughout): the
	 * restore does without. */
	catalog_writer_wait(st->cat, RESTORE_HOLD_WAIT_MS);
	int r = cairn_hold(st, &it, 1, true);
	catalog_writer_wait(st->cat, -1);
	/* On a bucket store the hold can be committed here and only its
	 * catalog copy fail to reach the bucket (a read-only credential): the
	 * hold is in effect then, and is released at the end like any. */
	if (r == 0 || (r != -EBUSY && tag_held(st, snap, tag)))
		r = 0;
	if (r == 0) {
		st->errdetail[0] = 0;
		return true;
	}
	if (opts->warn) {
		char obj[sizeof(st->errdetail) + 256];
		if (r == -EBUSY)
			snprintf(st->errdetail, sizeof(st->errdetail),
				 "another command is writing the catalog (waited %d s)",
				 RESTORE_HOLD_WAIT_MS / 1000);
		snprintf(obj, sizeof(obj),
			 "%s: not held while restored, so a destroy and gc meanwhile can take "
			 "chunks it still needs: %s",
			 snap, st->errdetail[0] ? st->errdetail : cairn_strerror(r));
		opts->warn(obj, r, opts->arg);
	}
	st->errdetail[0] = 0;
	return false;
}

/* Releases the hold by guid (whatever the snapshot is called now), keeping
 * the restore's own error detail. */
static void release_snap(cairn_store *st, uint64_t guid, const char *tag)
{
	char saved[sizeof(st->errdetail)];
	memcpy(saved, st->errdetail, sizeof(saved));
	/* Nor does the restore, done, wait that long to say so: a hold not
	 * released here goes with this process (the next command to open the
	 * store reaps it, and destroys a snapshot destroy -d marked). */
	catalog_writer_wait(st->cat, RESTORE_HOLD_WAIT_MS);
	cairn_release_temp(st, &guid, 1, tag);
	catalog_writer_wait(st->cat, -1);
	memcpy(st->errdetail, saved, sizeof(saved));
}

/* The snapshot snap names now: its dataset and catalog row. */
static int find_snap(cairn_store *st, const char *snap, ds_row_t *ds, snap_row_t *row)
{
	const char *sname;
	int r = snapshot_split(st, snap, ds, &sname);
	if (r == 0 && (r = catalog_snap_lookup(st->cat, ds->id, sname, row)) == -ENOENT)
		store_err(st, r, "%s: snapshot does not exist", snap);
	return r;
}

/* Holds row, the snapshot found as snap.  cairn_hold takes a name, not
 * an id, and a rename (or a destroy and a new snapshot of that name)
 * between the lookup and the hold would have it hold another snapshot
 * than the one restored: so the name is looked up again once held, and
 * if it names another snapshot now the hold is released (wherever it
 * went: by both guids, the tag being this restore's own).
 * @return 1: held; 0: not held (hold_snap warned); -EAGAIN: snap names
 * another snapshot now, and nothing is held. */
static int hold_found(cairn_store *st, const char *snap, const snap_row_t *row,
		      cairn_restore_opts *opts, char *tag, size_t len)
{
	if (!hold_snap(st, snap, opts, tag, len))
		return 0;
	ds_row_t ds = {0};
	snap_row_t now = {0};
	int r = find_snap(st, snap, &ds, &now);
	bool same = r == 0 && now.id == row->id;
	if (!same) {
		release_snap(st, row->guid, tag);
		if (r == 0)
			release_snap(st, now.guid, tag);
	}
	snap_row_clear(&now);
	ds_row_clear(&ds);
	st->errdetail[0] = 0;
	return same ? 1 : -EAGAIN;
}

/* How often a restore looks its snapshot up again when the name moved
 * to another snapshot while it was held (hold_found). */
#define RESTORE_FIND_TRIES 3

int cairn_restore(cairn_store *st, const char *snap, const char *target,
		  cairn_restore_opts *opts)
{
	int r = STORE_ENTER(st, snap, target);
	cairn_restore_opts none = {0};
	if (!opts)
		opts = &none;
	if (r == 0)
		r = store_check_names(st, __func__, "opts->paths", opts->paths, opts->npaths);
	if (r < 0)
		return r;
	ds_row_t ds = {0};
	snap_row_t row = {0};
	crypt_keys_t *key = NULL;
	rtarget_t tg = {.rootfd = -1};
	char tag[128];
	bool held = false;
	for (int tries = 1;; tries++) {
		r = find_snap(st, snap, &ds, &row);
		/* Before the target is touched: an encrypted snapshot needs its key. */
		if (r == 0)
			r = encroot_keys(st, &ds, &key);
		if (r == 0)
			r = judge_target(st, &ds, target, opts, &tg);
		int h = r == 0 ? hold_found(st, snap, &row, opts, tag, sizeof(tag)) : 0;
		held = h == 1;
		if (h != -EAGAIN)
			break;
		if (tries == RESTORE_FIND_TRIES) {
			r = store_err(st, -EAGAIN,
				      "%s: the name moved to another snapshot each time the "
				      "restore held it (%d times); run it again",
				      snap, tries);
			break;
		}
		target_close(&tg, false);
		crypt_keys_free(key);
		key = NULL;
		snap_row_clear(&row);
		ds_row_clear(&ds);
	}
	buf_t tree = {0}, idx = {0};
	if (r == 0)
		r = catalog_snap_roots(st->cat, row.id, &tree, &idx);
	if (r == 0)
		r = ds.type == CAIRN_TYPE_VOLUME ? restore_volume(st, key, &tree, target, &tg, opts)
						 : restore_tree(st, key, &tree, &tg, opts);
	target_close(&tg, false); /* (not reached the tree restore) */
	if (held)
		release_snap(st, row.guid, tag);
	crypt_keys_free(key);
	buf_free(&tree);
	buf_free(&idx);
	snap_row_clear(&row);
	ds_row_clear(&ds);
	return r;
}
