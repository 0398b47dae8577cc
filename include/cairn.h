/* cairn.h - the public API of libcairn, a deduplicating backup datastore.
 *
 * A store is one directory holding a SQLite catalog and a content-addressed
 * chunk store.  Datasets form a hierarchy ("pool/www/logs"); a snapshot
 * ("pool/www@daily-1") is an immutable copy of a dataset's source.
 *
 * Conventions
 * - Every function that can fail returns 0 (or a count) on success and a
 *   negative errno or a negative CAIRN_E* code on failure.  cairn_strerror()
 *   names both.  cairn_store_errdetail() gives the failing object and reason
 *   of the last error on a handle; every call on the handle clears it first.
 * - A pointer argument may be NULL only where its description says so.
 *   Any other NULL (the handle, a name, an out pointer, an array with
 *   entries, or an entry of an array of names, properties or hold items)
 *   fails with -EINVAL before anything is changed.  An options struct
 *   ("opts") that may be NULL acts as a zeroed one, its results dropped;
 *   each function says whether its options may be NULL.
 * - Strings, arrays and handles returned through out pointers are NULL
 *   (their counts 0) after any failure, so they can be freed either way.
 * - The library never prints.  Progress is reported through callbacks.
 * - Handles are opaque.  Every pointer a function returns says who owns it;
 *   every free/close function accepts NULL.
 * - A handle is used by one thread at a time.  Several processes may open
 *   the same store at once; the catalog serialises their commits.
 */
#ifndef CAIRN_H
#define CAIRN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CAIRN_VERSION_MAJOR 0
#define CAIRN_VERSION_MINOR 1

/** @defgroup errors Error codes
 * Domain errors, below every errno value.
 * @{ */
#define CAIRN_E_FIRST -10000
#define CAIRN_ECORRUPT -10001  /**< a chunk, stream or catalog record is damaged */
#define CAIRN_ENOTSTORE -10002 /**< the directory is not a cairn store */
#define CAIRN_EBADNAME -10003  /**< a dataset, snapshot or tag name is invalid */
#define CAIRN_EVERSION -10004  /**< the store or stream has an unknown version */
#define CAIRN_ENOATIME -10005  /**< the filesystem does not update atimes */
#define CAIRN_ENOSOURCE -10006 /**< the dataset's source cannot be read */
#define CAIRN_EBADPROP -10007  /**< unknown property or invalid value */
#define CAIRN_EPARTIAL -10008  /**< done, but some files could not be read */
#define CAIRN_EHELD -10009     /**< the snapshot has holds */
#define CAIRN_EEXIST_DS -10010 /**< reserved */
#define CAIRN_ECHANGED -10011  /**< a source file was replaced (another inode or kind of object) before it was read */
#define CAIRN_EFORBIDDEN -10012 /**< the bucket answered 403 for one object while this credential reads others: missing, or not readable with it */
#define CAIRN_ETORN -10013     /**< a source file was written in place while it was read (recorded as read; a warning) */
#define CAIRN_EBADKEY -10020  /**< incorrect key (wrong passphrase or key file) */
#define CAIRN_ENOKEY -10021   /**< the encryption key is not loaded */
#define CAIRN_E_LAST -10099
/** @} */

/** Returns a static, human-readable description of err (negative errno or
 * CAIRN_E* code).  Never NULL. */
const char *cairn_strerror(int err);

/** An open store.  Opaque. */
typedef struct cairn_store cairn_store;

/** Options for cairn_store_init(). Zero-initialise, then set fields. */
typedef struct cairn_init_opts {
	uint32_t chunk_size; /**< average chunk size in bytes; 0 = default (1 MiB) */
	/** Skip the atime check.  For tests only; a store without working atimes
	 * cannot be garbage-collected safely. */
	bool skip_atime_check;
	/** Where chunks live: NULL (here, in .chunks), "s3://BUCKET[/PREFIX]"
	 * or "file:///PATH" (docs/BACKENDS.md).  The bucket is created if
	 * missing; one already holding a store is refused (-EEXIST). */
	const char *chunks;
	const char *endpoint;         /**< S3 endpoint URL; NULL = $CAIRN_S3_ENDPOINT */
	const char *region;           /**< S3 region; NULL = us-east-1 */
	const char *credentials_file; /**< AWS-style file, used when the environment has no keys */
	bool virtual_host;            /**< bucket.host addressing instead of host/bucket */
	/** Rebuild a store from the catalog copy and chunks in `chunks`
	 * (disaster recovery) instead of creating an empty one. */
	bool import;
} cairn_init_opts;

/** Why the last cairn_store_init() of this thread failed, when the error
 * code alone does not say (bad bucket URL, server answer...); "" if none. */
const char *cairn_store_init_errdetail(void);

/** Creates a new store at path (created mode 0700 if missing; an existing
 * directory must be empty).  Checks that the filesystem updates atimes set
 * with utimensat(); fails with CAIRN_ENOATIME where it does not.  opts may
 * be NULL (the defaults).
 * @return 0, -EEXIST (not empty), CAIRN_ENOATIME, -EINVAL (path NULL), or
 * another negative errno. */
int cairn_store_init(const char *path, const cairn_init_opts *opts);

/** Opens the store at path.  On success *out is a handle the caller closes
 * with cairn_store_close().  Fails with CAIRN_ENOTSTORE when path is not a
 * store.  On failure *out is NULL. */
int cairn_store_open(const char *path, cairn_store **out);

/** Closes a store handle; NULL is allowed. */
void cairn_store_close(cairn_store *st);

/** The object and reason of the last failure on st, e.g.
 * "chunk 3fa1...: digest mismatch (file etc/passwd)".  Owned by st, valid
 * until the next call on st.  Every call on st clears it on entry, so it
 * is the empty string after a call that succeeded (and for st NULL). */
const char *cairn_store_errdetail(const cairn_store *st);

/** @defgroup config Store settings
 * Settings live in the catalog.  For one process, the environment variable
 * CAIRN_<KEY in upper case> overrides a stored setting.
 * @{ */

/** Describes one setting. */
typedef struct cairn_config_info {
	const char *key;
	const char *description;
	int64_t min, max, def; /**< allowed range and default */
	const char *unit;      /**< "bytes", "minutes", ... */
} cairn_config_info;

/** Returns the table of settings, terminated by an entry with key NULL.
 * Static; not owned by the caller. */
const cairn_config_info *cairn_config_table(void);

/** Reads a setting's effective value (environment override, else stored,
 * else default) into *value.  *from_env tells whether the environment won.
 * @return 0, or CAIRN_EBADPROP for an unknown key or a bad env value. */
int cairn_config_get(cairn_store *st, const char *key, int64_t *value, bool *from_env);

/** Checks every CAIRN_<KEY> override set in the environment.  Internal
 * reads of a setting whose override does not parse fall back to the
 * built-in default, not to the stored value, so a caller that honours
 * overrides should refuse to run with a bad one; the command does.
 * @return 0, or CAIRN_EBADPROP (cairn_store_errdetail names the variable
 * and the allowed range). */
int cairn_config_check_env(cairn_store *st);

/** Stores a setting.  value is parsed with its unit ("1M", "64K", "1445").
 * @return 0, or CAIRN_EBADPROP (unknown key, bad value, out of range: see
 * cairn_store_errdetail for the allowed range). */
int cairn_config_set(cairn_store *st, const char *key, const char *value);
/** @} */

/** @defgroup datasets Datasets and properties
 * @{ */
typedef enum cairn_type {
	CAIRN_TYPE_FILESYSTEM = 1,
	CAIRN_TYPE_VOLUME = 2,
	CAIRN_TYPE_SNAPSHOT = 4,
	CAIRN_TYPE_BOOKMARK = 8,
} cairn_type;

/** A property assignment name=value. */
typedef struct cairn_prop {
	const char *name;
	const char *value;
} cairn_prop;

/** Checks a dataset name (components of [A-Za-z0-9_.:-], no "." or ".."
 * component, at most 255 bytes, at most 50 components as zfs's default
 * nesting limit).  With with_snap, accepts "ds@snap" too.
 * On failure, if why is not NULL, writes a reason naming the offending
 * character or component into why (at most whylen bytes).
 * @return 0, CAIRN_EBADNAME, or -EINVAL (name NULL). */
int cairn_name_check(const char *name, bool with_snap, char *why, size_t whylen);

/** Creates a dataset.  type is CAIRN_TYPE_FILESYSTEM or CAIRN_TYPE_VOLUME
 * (the property type=volume also makes a volume).  With parents, missing
 * ancestors are created as filesystems.  props are set locally on the new
 * dataset.
 * @return 0, -EEXIST, -ENOENT (missing parent without parents), -EINVAL
 * (type is not filesystem or volume), -ENOTDIR (the parent is a volume),
 * CAIRN_EBADNAME, CAIRN_EBADPROP. */
int cairn_dataset_create(cairn_store *st, const char *name, cairn_type type,
			 const cairn_prop *props, size_t nprops, bool parents);

/** Sets local properties on a dataset, all in one transaction. */
int cairn_dataset_set(cairn_store *st, const char *name, const cairn_prop *props, size_t nprops);

/** Reads a property's effective value.  *value is malloc'd (caller frees);
 * *source receives "local", "inherited from X" or "default" (malloc'd too;
 * source may be NULL).  @return 0, -ENOENT, CAIRN_EBADPROP. */
int cairn_dataset_get(cairn_store *st, const char *name, const char *prop, char **value,
		      char **source);
/** @} */

/** @defgroup snapshots Snapshots (backup)
 * @{ */

/** Progress of a long operation, reported at most a few times a second. */
typedef struct cairn_progress {
	const char *phase;        /**< "backup", "restore", ... */
	const char *object;       /**< the dataset or snapshot at work */
	uint64_t files;           /**< files done */
	uint64_t bytes;           /**< plain bytes read or written */
	uint64_t bytes_total;     /**< when known, else 0 */
	int64_t elapsed_ns;
} cairn_progress;
typedef void (*cairn_progress_fn)(const cairn_progress *p, void *arg);

/** A problem with one item of a batch that did not stop the batch (an
 * unreadable file), or the item that made a batch fail. */
typedef void (*cairn_warn_fn)(const char *object, int err, void *arg);

/** Sets the store's own warn function (st NULL: nothing), for damage a call works around
 * without failing and whose options have no warn of their own: space
 * figures (used, written) that an unreadable index chunk left uncounted
 * when cairn_prune(), cairn_release() (a deferred destroy), cairn_rollback()
 * with destroy_later or cairn_recv() destroyed or added snapshots.  The
 * object reads "space accounting of WHO: index of WHOSE, chunk HEX" (as
 * for cairn_destroy_opts.warn; also a new snapshot's own warn).  NULL
 * (the default) drops these reports; the calls succeed either way. */
void cairn_store_set_warn(cairn_store *st, cairn_warn_fn fn, void *arg);

/** Options and results of cairn_snapshot_create(). */
typedef struct cairn_snapshot_opts {
	bool recursive;            /**< also every descendant dataset */
	bool strict;               /**< fail on an unreadable file instead of skipping it */
	const cairn_prop *props;   /**< user properties to set on each snapshot */
	size_t nprops;
	cairn_progress_fn progress;
	cairn_warn_fn warn;
	void *arg;                 /**< passed to progress and warn */
	/* results, summed over all snapshots taken */
	/* files: objects recorded; skipped: objects (not directories) left
	 * out as unreadable, reported through warn */
	uint64_t files, bytes_read, bytes_reused, chunks_new, stored_new, skipped;
	uint64_t excluded;         /**< entries left out by exclude rules (a directory counts once) */
	/** directories whose entries were left out (unreadable, or changed
	 * during the backup), each counted once however much was below it;
	 * the directory itself is recorded when only listing it failed */
	uint64_t skipped_dirs;
	/** files written in place while they were read (mtime moved, not
	 * grown): recorded as read, possibly mixing old and new bytes, and
	 * reported through warn with CAIRN_ETORN; they do not make the call
	 * fail (the next backup reads them again) */
	uint64_t torn;
	/** Worker threads that hash, compress and store chunks and bundles
	 * (0 = the number of cores plus one, for the time a worker waits for
	 * its write).  Only speed depends on it: the trees and
	 * chunks of a snapshot are the same byte for byte for any count. */
	int threads;
} cairn_snapshot_opts;

/** Takes the snapshots named in names ("ds@snap"), all committed in ONE
 * catalog transaction with one createtxg.  Either every snapshot becomes
 * visible or none.  Unreadable files inside a source are reported through
 * opts->warn and skipped (the call then returns CAIRN_EPARTIAL after
 * committing) unless opts->strict (opts may be NULL).  The other names
 * (hardlinks) of an unreadable file are skipped with it, each reported as
 * "PATH (a hardlink of FIRST)", so no link in the snapshot points at a
 * name it lacks.  A damaged or missing index chunk of
 * the previous snapshot, or of the one before it, does not stop a backup
 * either: it is reported through opts->warn as "space accounting of
 * DS@NEW: index of DS@OLD, chunk HEX", the figures it was needed for are
 * left as they would be without it (the new snapshot's written counts all
 * it references when the previous index cannot be read; the previous
 * snapshot keeps its used), and it does not by itself make the call fail.
 * @return 0, CAIRN_EPARTIAL, -ENOENT (dataset), -EEXIST (snapshot),
 * CAIRN_ENOSOURCE, CAIRN_EBADNAME, -ENOSPC, -EIO ... */
int cairn_snapshot_create(cairn_store *st, const char *const *names, size_t n,
			  cairn_snapshot_opts *opts);
/** @} */

/** @defgroup restore Restore
 * @{ */
typedef struct cairn_restore_opts {
	/** Allow a non-empty target: a directory, an image file, or a block
	 * device (whose contents a volume overwrites). */
	bool force;
	/** Leave every object owned by the restoring user, as tar's
	 * --no-same-owner.  Without it a root restore sets the recorded
	 * owners and names each one it cannot set (a user namespace, an NFS
	 * export with root squash); a restore by another user never does.
	 * Where a file does not get its recorded owner, its setuid (setgid)
	 * bit is cleared unless its user (group) is the recorded one. */
	bool no_owner;
	/** Restore only these paths (and below).  A hardlink among them
	 * whose inode's first name is not among them gets the content, and
	 * the inode's other restored names link to it. */
	const char *const *paths;
	size_t npaths;
	cairn_progress_fn progress;
	/** Each file that could not be restored, and a temporary hold on
	 * the snapshot that could not be taken (the restore goes on without
	 * it, see cairn_restore).  Files are written by one
	 * thread per CPU (CAIRN_RESTORE_THREADS sets another number), so warn
	 * may be called from any of them, but never from two at once, nor at
	 * once with progress. */
	cairn_warn_fn warn;
	void *arg;
	/* results */
	uint64_t files, bytes, errors;
} cairn_restore_opts;

/** Restores snapshot snap ("ds@name") into target.  A filesystem snapshot
 * becomes a directory tree (created if missing; must be empty unless
 * force); a volume snapshot is written to target as an image (a file, or a
 * block device; a non-empty file or a device only with force).  Every
 * chunk is verified against its digest.  Once the target is judged, the
 * snapshot is held by a temporary hold while it is restored, as by send,
 * so that a destroy meanwhile is refused (or deferred) and gc leaves its
 * chunks; where no hold can be taken (a user who cannot write to the
 * store, a full disk, another command's catalog transaction still open
 * after 5 s) that is reported through warn and the restore goes on
 * without one.  A hold that cannot be released within 5 s at the end is
 * left to be reaped once the process has exited.
 * @return 0; CAIRN_ECORRUPT or -ENOENT naming the chunk and file in
 * cairn_store_errdetail (the restore goes on with other files and the
 * first such error is returned); a tree stream chunk that cannot be read
 * stops the restore and is the error returned, naming the chunk and the
 * last entry read, even when files failed before it; -ENOTEMPTY; -EEXIST
 * (a volume's target without force); -EBUSY (a volume's
 * target is a block device in use, mounted say); -EINVAL (a volume's target is not a
 * file or block device); -EAGAIN (the name moved to another snapshot each
 * time it was held); -ENOENT (snapshot or path).  opts may be NULL. */
int cairn_restore(cairn_store *st, const char *snap, const char *target,
		  cairn_restore_opts *opts);
/** @} */

/** @defgroup diff Differences between snapshots
 * @{ */
/** One changed object, as zfs diff reports it. */
typedef struct cairn_diff_change {
	char kind;            /**< '-' removed, '+' created, 'M' modified, 'R' renamed */
	const char *path;     /**< relative to the dataset root ("" = the root);
			       *   for 'R' the old name */
	const char *new_path; /**< 'R': the new name; NULL otherwise */
	uint32_t mode;        /**< st_mode (type and permission bits) of the object:
			       *   the removed one for '-', the later one otherwise */
	int64_t ctime_ns;     /**< that object's inode change time */
	int link_delta;       /**< 'M': change in link count, 0 when unchanged */
} cairn_diff_change;

typedef struct cairn_diff_opts {
	/** Called for each change, in path order ('-' before '+' on one path);
	 * a non-zero return stops the diff and is returned by cairn_diff().
	 * Pointers are valid during the call only. */
	int (*change)(const cairn_diff_change *c, void *arg);
	void *arg;
	/* results */
	uint64_t changes;       /**< changes reported */
	uint64_t chunks_read;   /**< tree chunks read from the chunk store */
	uint64_t chunks_shared; /**< tree chunk reads saved: both trees had the chunk */
} cairn_diff_opts;

/** Reports what changed from snapshot from ("ds@a") to to: a later snapshot
 * of the same dataset ("ds@b"), or the dataset itself ("ds"), meaning its
 * source directory as it is now.  Objects are matched by inode number, so a
 * moved file is one 'R' change.  File content is compared by chunk
 * references (never read); against a live source, by size, mtime and ctime.
 * Errors: CAIRN_EBADNAME (from is not a snapshot name), -ENOENT (no such
 * dataset or snapshot), -EXDEV (different datasets), -EINVAL (from is later
 * than to; a volume), CAIRN_ENOSOURCE (live source unreadable or none),
 * CAIRN_ECORRUPT / -ENOENT (a damaged or missing tree chunk), -ENOMEM, or
 * the callback's return value.  Details in cairn_store_errdetail().  opts
 * may be NULL: the changes are then only computed, for the return value. */
int cairn_diff(cairn_store *st, const char *from, const char *to, cairn_diff_opts *opts);
/** @} */

/** @defgroup destroy Destroying and renaming
 * @{ */
typedef struct cairn_destroy_opts {
	bool recursive; /**< descendants too (datasets), or the same snapshot name in them */
	bool defer;     /**< mark held snapshots defer_destroy instead of failing */
	bool dry_run;   /**< change nothing; report what would go */
	/** Called for each object, action "destroy" or "defer". */
	void (*item)(const char *name, const char *action, void *arg);
	void *arg;      /**< passed to item and warn */
	uint64_t freed; /**< result: stored bytes the destroy frees (or would) */
	/** Space accounting skipped for a damaged (CAIRN_ECORRUPT) or missing
	 * (-ENOENT) index chunk, the destroy going ahead.  object is "space
	 * accounting of WHO: index of WHOSE, chunk HEX": WHO is the first
	 * snapshot of a destroyed run (the run's bytes are left out of freed)
	 * or a surviving neighbour (its used and written stay as they were);
	 * WHOSE owns the index that could not be read.  NULL: the store's
	 * warn (cairn_store_set_warn). */
	cairn_warn_fn warn;
	uint64_t unaccounted; /**< result: warnings given through warn */
} cairn_destroy_opts;

/** Destroys target in ONE catalog transaction: a dataset (with recursive,
 * its descendants and all their snapshots), a snapshot "ds@a", a list
 * "ds@a,b,c", a range "ds@first%last" (by createtxg, inclusive; an empty
 * side means the first or last), or a bookmark "ds#bm".  Space accounting
 * (used, written) of the surviving neighbours is updated in the same
 * transaction.  Nothing changes if any item fails.  Like zfs, destroy
 * does not need a snapshot's data: a damaged or missing index chunk only
 * leaves space figures uncounted (see warn), so a damaged snapshot can
 * always be destroyed.  A dry run reads only the destroyed snapshots' and
 * their neighbours' indexes, so it can miss a warning the real run gives
 * about a neighbour's figures.
 * opts may be NULL (no recursive, defer or dry run).
 * @return 0, -ENOENT, CAIRN_EHELD (a snapshot has holds; the detail names
 * them), -EBUSY (dataset has children or snapshots and !recursive). */
int cairn_destroy(cairn_store *st, const char *target, cairn_destroy_opts *opts);

/** Renames a snapshot ("ds@a" to "ds@b" or to "b"); with recursive, the
 * snapshot of that name in every descendant.  Or renames a dataset, moving
 * its whole subtree (the new parent must exist unless parents).  One
 * transaction. @return 0, -ENOENT, -EEXIST, CAIRN_EBADNAME, -EINVAL. */
int cairn_rename(cairn_store *st, const char *from, const char *to, bool recursive,
		 bool parents);

/** cairn_prop_inherit without received (zfs inherit without -S): removes a
 * local property so the value is inherited again; with recursive, from
 * every descendant too.  One transaction. */
int cairn_dataset_inherit(cairn_store *st, const char *name, const char *prop, bool recursive);
/** @} */

/** @defgroup rollback Rollback
 * @{ */

/** Options and results of cairn_rollback(). */
typedef struct cairn_rollback_opts {
	bool destroy_later; /**< -r: destroy the later snapshots and bookmarks */
	/** Called for each later snapshot ("ds@s") and bookmark ("ds#b"), oldest
	 * first, whether or not they are destroyed.  May be NULL. */
	void (*item)(const char *name, void *arg);
	void *arg;
	uint64_t destroyed; /**< result: snapshots and bookmarks destroyed */
} cairn_rollback_opts;

/** Makes snapshot snap ("ds@s") the newest of its dataset: with
 * destroy_later, every later snapshot and bookmark of the dataset is
 * destroyed in ONE transaction (space accounting as cairn_destroy).
 * Without it, fails with -EEXIST when there are any (and changes nothing).
 * A cairn dataset has no live state apart from its source, so nothing else
 * changes.  @return 0, -ENOENT, -EEXIST, CAIRN_EHELD (a later snapshot is
 * held), CAIRN_EBADNAME.  opts may be NULL. */
int cairn_rollback(cairn_store *st, const char *snap, cairn_rollback_opts *opts);
/** @} */

/** @defgroup holds Holds and bookmarks
 * @{ */

/** One (snapshot, tag) pair of a hold or release batch.  err is set per
 * item by the call: 0, or why this item failed. */
typedef struct cairn_hold_item {
	const char *snapshot; /**< "ds@snap" */
	const char *tag;
	int err;              /**< out: 0, or why this item failed */
	char why[320];        /**< out: the failure, naming the item */
} cairn_hold_item;

/** Adds every hold in ONE transaction (one sync, whatever n is).  If any
 * item fails, nothing is applied, each failing item's err is set, and the
 * first error is returned (errdetail names it).  With temporary, the holds
 * belong to this process and go away once it has exited.
 * @return 0, -ENOENT (snapshot), -EEXIST (tag already there),
 * CAIRN_EBADNAME (empty or over-long tag), -EINVAL (items NULL, or an
 * item's snapshot or tag NULL: its err says so; nothing is checked
 * further). */
int cairn_hold(cairn_store *st, cairn_hold_item *items, size_t n, bool temporary);

/** Releases every hold in ONE transaction; all or nothing as above.  A
 * snapshot marked defer_destroy whose last hold goes is destroyed in the
 * same transaction.  @return 0, -ENOENT (snapshot or tag not held),
 * CAIRN_EBADNAME, -EINVAL (as cairn_hold). */
int cairn_release(cairn_store *st, cairn_hold_item *items, size_t n);

/** The owner id of this process's temporary holds in st: every hold it
 * takes with cairn_hold(temporary) carries it (the catalog's hold.pstart,
 * a negative number), and no other process alive has it, whatever PID
 * namespace either runs in (pids do not tell owners apart).  The first
 * call publishes this process's owner file if no temporary hold has yet.
 * @return 0, -EROFS (a store on a read-only filesystem takes no temporary
 * holds), or another negative errno. */
int cairn_temp_holder(cairn_store *st, int64_t *id);

/** Releases, in ONE transaction, the temporary holds tag that this
 * process took on the snapshots with the n guids, whatever those snapshots
 * are called now: unlike a release by name, a rename between finding a
 * name and releasing cannot make it release another snapshot's hold.  User
 * holds and other processes' holds with the same tag stay, and a guid
 * without such a hold of this process's is no error (see the count).
 * Every snapshot with a given guid (one, unless the same snapshot was
 * received twice) loses the hold; one marked defer_destroy whose last hold
 * goes is destroyed in the same transaction.
 * @return the count of holds released (it can exceed n, a guid counting
 * once per snapshot that had it; 0 also when this process has taken no
 * temporary hold in st, or the store is read-only and took none),
 * CAIRN_EBADNAME (empty or over-long tag), or a negative errno: then none
 * is released, except that an error publishing the catalog of a bucket
 * store after the commit leaves the commit in place. */
int cairn_release_temp(cairn_store *st, const uint64_t *guids, size_t n, const char *tag);

/** Calls fn for each hold on snap, by tag: pid is 0 for a user hold, the
 * owner process for a temporary one. */
int cairn_holds_iter(cairn_store *st, const char *snap,
		     int (*fn)(const char *snap, const char *tag, int64_t time, int pid, void *arg),
		     void *arg);

/** Expands "ds@snap" to that snapshot name in ds and every descendant that
 * has it (for -r).  *names is malloc'd (free each, then the array). */
int cairn_snapshot_expand(cairn_store *st, const char *snap, char ***names, size_t *n);

/** Creates bookmark `bookmark` ("ds#name" or "name": same dataset) from a
 * snapshot or another bookmark.  It keeps guid, createtxg, creation and the
 * snapshot's chunk index (an incremental send source), but not its data:
 * GC does not keep a bookmark's chunks. */
int cairn_bookmark(cairn_store *st, const char *source, const char *bookmark);

/** Bookmarks each source (as cairn_bookmark) in ONE transaction: all or
 * none.  bookmark is the short name, or "ds#name" for a single source. */
int cairn_bookmark_many(cairn_store *st, const char *const *sources, size_t n,
			const char *bookmark);

/** Retention rules, PBS semantics.  0 = rule unused. */
typedef struct cairn_prune_opts {
	uint32_t keep_last, keep_hourly, keep_daily, keep_weekly, keep_monthly, keep_yearly;
	int64_t keep_within; /**< seconds before the newest snapshot; 0 = unused */
	bool dry_run;
	/** Called per snapshot, newest first: keep or not, and why ("last 1",
	 * "daily 3", "within", "held", "" for removal). */
	void (*item)(const char *snap, bool keep, const char *reason, void *arg);
	void *arg;
	uint64_t kept, removed; /**< results */
} cairn_prune_opts;

/** Applies retention to one dataset's snapshots in ONE transaction.
 * Buckets are in local time (weeks are ISO weeks); keep-last applies
 * first; a bucket is filled by its newest snapshot.  Held snapshots are
 * always kept and fill no bucket.  opts is required.
 * @return 0, -EINVAL (opts NULL, no keep rule set, keep_within < 0),
 * -ENOENT (dataset), CAIRN_EBADNAME (not a dataset name). */
int cairn_prune(cairn_store *st, const char *dataset, cairn_prune_opts *opts);
/** @} */

/** @defgroup replication Send and receive
 * @{ */
typedef struct cairn_send_opts {
	/** Incremental source: "ds@snap", "ds#bookmark", or "@snap"/"#bm" in
	 * the sent dataset.  NULL: a full stream. */
	const char *from;
	bool intermediates; /**< -I: every snapshot between from and the target;
			     * without from: every snapshot up to the target */
	bool recursive;     /**< -R: the dataset subtree, properties, all snapshots.
			     * A descendant made before the snapshot must have its
			     * name (-ENOENT, naming it, otherwise; see
			     * skip_missing); one made after it is left out with
			     * its subtree, as zfs does (see skipped) */
	bool dry_run;       /**< -n: estimate only */
	const char *resume_token; /**< -t: continue an interrupted receive */
	int fd;             /**< where the stream goes */
	/** Estimate lines (zfs send -P): kind "full" or "incremental". */
	void (*estimate)(const char *kind, const char *from, const char *to, uint64_t bytes,
			 void *arg);
	/** Optional: which of n chunks (32-byte digests) the receiver already
	 * has; set present[i] to 1 for those.  Those chunks are left out of the
	 * stream (the receiver checks every listed chunk is there before it
	 * commits).  Asked once per snapshot, in batches.  Returns 0 or <0. */
	int (*have)(const uint8_t (*digests)[32], size_t n, uint8_t *present, void *arg);
	void *have_arg;
	cairn_progress_fn progress;
	void *arg;
	uint64_t bytes;     /**< result: stream bytes written (or estimated) */
	uint64_t chunks_skipped; /**< result: chunks the receiver had (have) */
	uint64_t snapshots; /**< result */
	/** Optional (sync): the guids of every snapshot and bookmark the
	 * receiver has, sorted ascending (not owned).  Each dataset is then
	 * sent from its own newest snapshot or bookmark among them (whole when
	 * there is none), with intermediates; from is ignored. */
	const uint64_t *base_guids;
	size_t nbase_guids;
	/** -w: raw.  Encrypted datasets go as stored (encrypted blobs, keyed
	 * ids) with their wrapped keys: the receiver holds them encrypted,
	 * keystatus unavailable, and never needs the key.  Without it an
	 * encrypted dataset is sent decrypted, exactly as an unencrypted
	 * dataset with the same chunks (docs/SECURITY.md): that needs its
	 * key (CAIRN_ENOKEY otherwise), and recursive is refused (-EINVAL)
	 * when the subtree holds an encrypted dataset, as zfs refuses. */
	bool raw;
	/** Optional, with base_guids (ignored without): nbase_guids names
	 * (not owned), entry i for base_guids[i] (so in the same order: one
	 * guid may repeat, once per dataset that has it): which of the
	 * receiver's datasets has it, as the rest of its name after the
	 * receive target's ("" for the target itself, "/kid" for
	 * TARGET/kid).  A guid then counts for the dataset that maps there
	 * only (a copy of it in another dataset is neither current nor a
	 * source for this one).  NULL, or a NULL entry: that guid counts
	 * wherever it is.  With resume_token, the resumed stream is planned
	 * as sync plans (each dataset to its own newest snapshot), which a
	 * stream that sync sent needs.  (Last in the struct: a field added
	 * after a release goes at the end, so the ones before keep their
	 * offsets.) */
	const char *const *base_datasets;
	/** -s (zfs send --skip-missing), with recursive only (-EINVAL
	 * otherwise; ignored with resume_token: a token of a stream that
	 * left datasets out records it, and the resumed stream is planned
	 * with skip_missing again): a descendant made before the snapshot that lacks its
	 * name is left out with its whole subtree (skipped is called for it)
	 * instead of refusing the send.  The stream then says it left
	 * datasets out, and recv -F destroys no dataset on its strength
	 * (only snapshots of the datasets it carries): the receiver cannot
	 * tell a dataset left out from one destroyed on the sender, and
	 * destroying a copy of a dataset the sender still has would lose
	 * data.  zfs destroys them; see docs/REPLICATION.md. */
	bool skip_missing;
	/** Optional, with recursive (not sync): called once for each
	 * descendant the stream leaves out (not for those below it), with
	 * the snapshot's short name (after the "@").  missing: it existed
	 * when the snapshot was taken (skip_missing left it out); false: it
	 * was made after, and is left out as zfs does.  arg is opts->arg. */
	void (*skipped)(const char *dataset, const char *snap, bool missing, void *arg);
} cairn_send_opts;

/** Writes a send stream of snap ("ds@snap") to opts->fd (opts is
 * required; a zeroed one writes a full stream to fd 0).  Before reading
 * anything it takes temporary holds on every snapshot it sends and every
 * source snapshot in ONE transaction; it releases them in ONE transaction
 * before returning (a killed send's holds are reaped by the next open).
 * snap may be NULL with opts->resume_token, which names what to send.
 * @return 0, -EINVAL (opts NULL), -ENOENT, CAIRN_EBADNAME, -EPIPE or
 * another write error of fd, ... */
int cairn_send(cairn_store *st, const char *snap, cairn_send_opts *opts);

typedef struct cairn_recv_opts {
	const char *target;   /**< dataset the stream's top dataset becomes */
	bool force;           /**< -F: roll back to the stream's source; with a
			       * recursive stream, destroy what the sender no longer has */
	bool resumable;       /**< -s: keep partial state on interruption */
	char naming;          /**< 0, 'd' or 'e' as zfs recv -d / -e */
	const cairn_prop *props; /**< -o overrides */
	size_t nprops;
	const char *const *exclude; /**< -x: properties not to set */
	size_t nexclude;
	int fd;
	void (*item)(const char *what, const char *name, void *arg); /**< -v lines */
	cairn_progress_fn progress;
	void *arg;
	uint64_t bytes, chunks_new, snapshots; /**< results */
	/** -n: dry run.  The stream is read and verified in full (records,
	 * checksums, chunk digests, every snapshot's tree and index, the END
	 * record) and every check against the target is made, then nothing
	 * is kept: no chunk, catalog row, resume state or writer
	 * registration.  Tree and index chunks are staged in a scratch
	 * directory under $TMPDIR (or /tmp), removed before returning.  The
	 * catalog's write lock is held from the first group's checks to the
	 * end of the stream.  item lines then say "would ..." (zfs's
	 * wording); snapshots and chunks_new count what would be received.
	 * Returns what the real receive would return. */
	bool dryrun;
	/** Result: the receive stopped on something a retry can get past
	 * (the stream cut or damaged, a read error) and, with
	 * resumable, kept its partial state: the dataset's
	 * receive_resume_token resumes it.  False after a refusal (the target
	 * diverged, needs -F, another stream's partial state...), even when
	 * an older token is still there: resuming would be refused again. */
	bool partial_kept;
	/** Result, with partial_kept: the dataset that holds the partial
	 * state and its receive_resume_token, the stream's top as received
	 * (the target, or with -d / -e the dataset below it, as in zfs). */
	char partial_dataset[512];
} cairn_recv_opts;

/** Reads a stream and commits each snapshot atomically.  The stream is
 * untrusted: every record's checksum, every chunk's digest and the
 * whole-stream checksum are verified; nothing is written outside the
 * store (a dry run's scratch directory aside).
 *
 * While it runs it handles SIGINT, SIGTERM and SIGHUP (those not ignored
 * when it started) for the whole process, and restores the previous
 * handlers before it returns: the first one stops the receive like a cut
 * stream (-EINTR), a second one ends the process (the default action).
 * So two receives must not run at once in one process.
 * @return 0, CAIRN_ECORRUPT (bad or hostile stream: detail says where),
 * -EPIPE (truncated) or -EINTR (a signal): with resumable, a group in
 * flight keeps its partial state and the dataset's receive_resume_token
 * (opts->partial_kept says whether it did); -EEXIST, -ENOENT;
 * CAIRN_EBADNAME (no or an invalid opts->target); -EINVAL (opts NULL). */
int cairn_recv(cairn_store *st, cairn_recv_opts *opts);

/** For each of n chunk digests, present[i] = 1 if the store has it.  Each
 * present chunk is touched, and the first call registers the handle as a
 * running writer until cairn_store_close: GC then keeps every chunk it
 * touched, even one that a GC starting before the receive that relies on
 * it would otherwise take (close the handle after that receive).  A damaged chunk file (empty, or not a regular file)
 * counts as missing: the sender sends the chunk again. */
int cairn_chunks_present(cairn_store *st, const uint8_t (*digests)[32], size_t n,
			 uint8_t *present);

/** As cairn_chunks_present (with the same answer for a damaged chunk
 * file), but touches nothing: the store is left as it
 * was, atimes included (a dry run: sync -n, have -n).  No receive may
 * rely on its answer, since GC may remove a chunk it found. */
int cairn_chunks_peek(cairn_store *st, const uint8_t (*digests)[32], size_t n,
		      uint8_t *present);

/** Discards the partial state of an interrupted resumable receive. */
int cairn_recv_abort(cairn_store *st, const char *dataset);
/** @} */

/** @defgroup gc Garbage collection and verify
 * @{ */

/** Order in which GC touches (marks) chunks. */
typedef enum cairn_gc_order {
	CAIRN_GC_ORDER_INODE = 0,  /**< by inode number, read from the directories the batch needs */
	CAIRN_GC_ORDER_DIGEST = 1, /**< by digest (directory order) */
	CAIRN_GC_ORDER_NONE = 2,   /**< arrival order, for comparison */
} cairn_gc_order;

typedef struct cairn_gc_opts {
	bool dry_run;             /**< mark nothing, remove nothing; report what sweep would remove */
	int64_t cache_capacity;   /**< LRU digests; -1 = the store setting gc_cache_capacity; 0 = off */
	int64_t batch;            /**< pending touches; 0 = the store setting gc_batch */
	cairn_gc_order order;
	int threads;              /**< sweep workers and mark's touching threads; 0 = number of cores */
	cairn_progress_fn progress;
	/** Each referenced chunk that is missing, with a snapshot needing it. */
	cairn_warn_fn warn;
	void *arg;
	/** Each chunk sweep removes (with dry_run: would remove): its path
	 * relative to the store and its size.  Calls are serialised.  May be NULL. */
	void (*item)(const char *path, uint64_t bytes, void *arg);
} cairn_gc_opts;

/** What a GC run found and did; also kept in the store for cairn gc --status. */
typedef struct cairn_gc_status {
	int64_t start, end;              /**< unix seconds */
	uint64_t snapshots;              /**< snapshots walked */
	uint64_t index_bytes;            /**< logical bytes the walked snapshots' indexes reference */
	uint64_t referenced_chunks;      /**< references marked (cache hits + misses); dry run: distinct chunks */
	uint64_t touched, cache_hits, cache_misses;
	uint64_t missing;                /**< referenced chunks not found */
	uint64_t disk_chunks, disk_bytes; /**< after sweep */
	uint64_t removed_chunks, removed_bytes;
	uint64_t pending_chunks, pending_bytes; /**< unreferenced but inside the cutoff */
	uint64_t removed_temp;           /**< leftover temporary files removed */
	uint64_t other_files;            /**< files with other names (e.g. <digest>.bad), left alone */
	double dedup_factor;             /**< logical referenced bytes / disk bytes */
	uint64_t avg_chunk;              /**< disk bytes / disk chunks */
	int64_t mark_ns, sweep_ns;
	double touches_per_s;
	bool dry_run;
} cairn_gc_status;

/** Runs mark and sweep (PBS semantics).  Only one GC runs per store at a
 * time (-EBUSY "GC already running").  Refuses with CAIRN_ENOATIME where
 * the filesystem does not update atimes.  Missing referenced chunks are
 * reported through opts->warn, counted, and make the call return
 * CAIRN_ECORRUPT after sweep has run (a dry run looks for them too, except
 * on a store whose chunks are in a bucket).  SIGINT/SIGTERM: see
 * cairn_gc_interrupt().  opts may be NULL (the store's settings, inode
 * order, a thread per core); out may be NULL. */
int cairn_gc(cairn_store *st, cairn_gc_opts *opts, cairn_gc_status *out);

/** Asks a running cairn_gc() to stop at the next safe point (async-signal
 * safe).  The call then returns -EINTR; nothing referenced is removed. */
void cairn_gc_interrupt(void);

/** The status of the last GC run, or -ENOENT. */
int cairn_gc_last_status(cairn_store *st, cairn_gc_status *out);

typedef struct cairn_verify_opts {
	const char *const *targets; /**< snapshots or datasets; none = all */
	size_t ntargets;
	bool recursive;
	cairn_gc_order order;       /**< read order (inode or digest) */
	int threads;                /**< 0 = number of cores */
	cairn_progress_fn progress;
	/** Each bad chunk: object "chunk HEX (snapshot S, file F)", err
	 * (CAIRN_EFORBIDDEN: the bucket answered 403 for its object alone). */
	cairn_warn_fn warn;
	void *arg;
	uint64_t chunks, bytes, bad; /**< results */
} cairn_verify_opts;

/** Re-reads every chunk the targets reference once, checks blob checksum
 * and digest, renames bad ones to <digest>.bad (a later backup or receive
 * of the same data heals it), and records lastverified on each snapshot
 * verified.  opts may be NULL (every snapshot).
 * @return 0, or CAIRN_ECORRUPT when any chunk was bad. */
int cairn_verify(cairn_store *st, cairn_verify_opts *opts);
/** @} */

/** @defgroup list Listing
 * Listing is a cursor-based batch iterator, after OpenZFS's projected
 * snapshot listing: each call fills the caller's batch with up to
 * batch_size rows, stopping early once batch_time_us has passed (always at
 * least one row, so it makes progress), inside ONE short read transaction.
 * A long listing therefore never blocks writers or pins the WAL.  Only the
 * projected numeric fields are loaded.
 *
 * Rows come in tree order: each dataset, then its snapshots by createtxg,
 * then its children (component-wise name order).  While a listing runs,
 * other processes may create, rename and destroy snapshots: no snapshot is
 * returned twice, and every snapshot that exists, unrenamed, for the whole
 * listing is returned exactly once.
 * @{ */

/** Numeric fields a listing can project. */
typedef enum cairn_field {
	CAIRN_F_GUID,
	CAIRN_F_CREATETXG,
	CAIRN_F_CREATION,
	CAIRN_F_USERREFS,
	CAIRN_F_DEFER_DESTROY,
	CAIRN_F_USED,
	CAIRN_F_REFERENCED,
	CAIRN_F_LOGICALREFERENCED,
	CAIRN_F_WRITTEN,
	CAIRN_F_OBJSETID,
	CAIRN_F_LASTVERIFIED,
	CAIRN_F_COUNT
} cairn_field;

/** What to list. Zero-initialise, then set fields. */
typedef struct cairn_list_spec {
	const char *const *roots; /**< datasets or snapshots; none = every dataset */
	size_t nroots;
	int depth;          /**< -1 = unlimited; 0 = the roots only */
	int types;          /**< mask of cairn_type; 0 = filesystems and volumes */
	uint32_t fields;    /**< mask of 1u << cairn_field to load */
	uint32_t batch_size;    /**< 1..4096; 0 = the store setting list_batch_size */
	uint32_t batch_time_us; /**< 1..100000; 0 = the store setting */
	/** Load every row one at a time through the full-row lookup instead of
	 * the batched projection.  The batched path must give identical
	 * results; tests compare the two. */
	bool reference;
} cairn_list_spec;

/** One batch of rows, filled by cairn_list_next().  The arrays and names
 * are owned by the batch: free with cairn_list_batch_free(). */
typedef struct cairn_list_batch {
	size_t n;                      /**< rows in this batch */
	uint8_t *type;                 /**< CAIRN_TYPE_* per row */
	const char **name;             /**< full names, "ds" or "ds@snap" */
	uint64_t *field[CAIRN_F_COUNT]; /**< per projected field, a value per row */
	size_t cap;                    /**< private */
	char *arena;                   /**< private */
	size_t arena_len, arena_cap;   /**< private */
} cairn_list_batch;

/** Continuation point of a listing.  Opaque contents; copy freely. */
typedef struct cairn_list_cursor {
	uint64_t unit;  /**< position in the dataset plan */
	uint64_t txg;   /**< last createtxg returned in that unit */
	int64_t id;     /**< last bookmark id returned (bookmarks share txgs) */
	uint32_t state; /**< private */
} cairn_list_cursor;

typedef struct cairn_list cairn_list;

/** Plans a listing: resolves the roots and the datasets to visit (one
 * short read transaction).  Fails with -ENOENT naming a missing root,
 * CAIRN_EBADNAME, CAIRN_EBADPROP (batch settings out of range), -EINVAL
 * (spec NULL).  On failure *out is NULL.  The listing uses st: close it
 * (cairn_list_close) before cairn_store_close(st). */
int cairn_list_open(cairn_store *st, const cairn_list_spec *spec, cairn_list **out);

/** Fills b with the next rows after *cursor (start from a zeroed cursor)
 * and advances *cursor.  b starts zeroed and is reused from call to call
 * (each call replaces its rows).  Returns the row count; 0 at the end; a
 * negative error (-EIO, -ENOMEM...; detail in cairn_store_errdetail;
 * -EINVAL when l, cursor or b is NULL). */
int cairn_list_next(cairn_list *l, cairn_list_cursor *cursor, cairn_list_batch *b);

/** Number of read transactions (batches) used so far (0 for l NULL). */
uint64_t cairn_list_batches(const cairn_list *l);

void cairn_list_close(cairn_list *l);
void cairn_list_batch_free(cairn_list_batch *b);

/** A snapshot's user property, or "-" when unset.  *value is malloc'd. */
int cairn_snapshot_get_user(cairn_store *st, const char *snap, const char *prop, char **value);

/** A property's received value on a dataset (what a -R stream set; see
 * cairn_dataset_get for the value that applies), or "-" when it has none
 * (and for snapshots and bookmarks).  *value is malloc'd.
 * @return 0, -ENOENT, CAIRN_EBADNAME. */
int cairn_prop_get_received(cairn_store *st, const char *name, const char *prop, char **value);

/** zfs inherit: drops name's local value of prop so it is inherited again.
 * name is a dataset or a snapshot (user properties only).  received
 * (inherit -S): a received value applies again; without it a received
 * value is kept but no longer applies (the parent's or the default does).
 * recursive: every descendant too (for a snapshot: the descendants'
 * snapshots of that name).  One transaction.
 * @return 0, -ENOENT, CAIRN_EBADPROP (not inheritable), CAIRN_EBADNAME. */
int cairn_prop_inherit(cairn_store *st, const char *name, const char *prop, bool recursive,
		       bool received);

/** Sets user properties (module:name) on a snapshot, in one transaction.
 * @return 0, -ENOENT, CAIRN_EBADPROP (a native or invalid property). */
int cairn_snapshot_set_user(cairn_store *st, const char *snap, const cairn_prop *props,
			    size_t n);

/** A snapshot's user property: its own value (source "local"), else its
 * dataset's (source "inherited from X"), else "-" (source "-").  *value
 * and *source are malloc'd; source may be NULL. @return 0, -ENOENT. */
int cairn_snapshot_user_get(cairn_store *st, const char *snap, const char *prop, char **value,
			    char **source);

/** The names of the user properties set or received on a dataset or its
 * ancestors (for a snapshot: on it and its dataset's line), sorted.
 * *names is malloc'd: free with cairn_user_props_free. @return 0, -ENOENT. */
int cairn_user_props(cairn_store *st, const char *name, char ***names, size_t *n);
void cairn_user_props_free(char **names, size_t n);

/** Space figures of a dataset or snapshot, in stored bytes
 * (docs/ZFS-COMPAT.md says how each is derived). */
typedef struct cairn_space {
	uint64_t used, usedbysnapshots, usedbydataset, usedbychildren;
	uint64_t referenced, logicalreferenced, logicalused, written;
} cairn_space;
/** @return 0, -ENOENT, CAIRN_EBADNAME. */
int cairn_space_get(cairn_store *st, const char *name, cairn_space *sp);

/** zfs written@SNAP: stored bytes that name (a snapshot, or a dataset's
 * newest snapshot) references and since ("snap" or "ds@snap", an earlier
 * snapshot of the same dataset) does not.
 * @return 0, -ENOENT, -EINVAL (another dataset's or a later snapshot). */
int cairn_written_since(cairn_store *st, const char *name, const char *since, uint64_t *bytes);

/** Free bytes of the filesystem holding the store (property available). */
int cairn_store_available(cairn_store *st, uint64_t *bytes);

/** Calls fn for every dataset (type filesystem or volume) in name order.
 * A non-zero return from fn stops the walk and is returned. */
int cairn_dataset_iter(cairn_store *st, int (*fn)(const char *name, cairn_type type, void *arg),
		       void *arg);
/** @} */

/** @defgroup encryption Encryption (docs/SECURITY.md)
 * A dataset created with the properties encryption=on, keyformat and
 * keylocation is an encryption root; its descendants are encrypted with
 * its keys.  A loaded key lives in the kernel keyring (no daemon).
 * @{ */

/** Where key material comes from, for load, change and create. */
typedef struct cairn_key_opts {
	/** Key material the caller read (from a terminal: keylocation=prompt).
	 * NULL: the library reads the keylocation file itself. */
	const uint8_t *secret;
	size_t secret_len;
	/** load-key -L: use this keylocation (file:///path or prompt) instead
	 * of the property, for this load only.  NULL: the property. */
	const char *keylocation;
	bool noop;        /**< load-key -n: check the key, load nothing; create:
			   * every check that needs no key material, nothing made */
	unsigned timeout; /**< seconds the kernel keeps a loaded key; 0 = until unloaded */
} cairn_key_opts;

/** cairn_dataset_create, with the key material of a new encryption root
 * (ko may be NULL when no root is made or keylocation is a file).  The new
 * root's key is loaded into the keyring just before the commit (a keyring
 * that refuses it leaves no dataset behind; a failed commit unloads it
 * again).  With ko->noop
 * nothing is created and no key read: only the checks that need no key
 * material run (a caller that prompts runs them first, so no refusal
 * follows a prompt).
 * @return as cairn_dataset_create; also CAIRN_EBADPROP (bad combination,
 * bad key material), CAIRN_ENOKEY (a child below a root whose key is not
 * loaded). */
int cairn_dataset_create_key(cairn_store *st, const char *name, cairn_type type,
			     const cairn_prop *props, size_t nprops, bool parents,
			     const cairn_key_opts *ko);

/** Loads the key of encryption root `root` into the kernel keyring.
 * A raw receive that brings a root a wrapping other than its own keeps
 * the one it had (cairn_load_key_previous opens the root with those); a
 * change-key here forgets them.
 * @return 0; -ENOENT; -EINVAL (not an encryption root); -EEXIST (already
 * loaded; nothing done); CAIRN_EBADKEY (incorrect key: nothing changes);
 * CAIRN_EBADPROP (key material of the wrong form).  ko may be NULL (the
 * keylocation property's file, no timeout). */
int cairn_load_key(cairn_store *st, const char *root, const cairn_key_opts *ko);

/** cairn_load_key with one of the wrappings a raw receive replaced (the
 * first and the 7 newest are kept) instead of the current one (load-key
 * --previous).  @return as cairn_load_key; CAIRN_EBADKEY also when no
 * earlier wrapping is kept. */
int cairn_load_key_previous(cairn_store *st, const char *root, const cairn_key_opts *ko);

/** How many earlier wrappings (a raw receive replaced them) root keeps
 * for cairn_load_key_previous, so a caller can refuse before it asks for
 * a key.  @return 0, -ENOENT, -EINVAL (not an encryption root). */
int cairn_key_previous_count(cairn_store *st, const char *root, size_t *n);

/** Removes root's key from the keyring.  @return 0, -ENOENT, -EINVAL
 * (not an encryption root), -ENOKEY (not loaded), -EBUSY (a running
 * command, of this process or another, holds the key: it stays loaded). */
int cairn_unload_key(cairn_store *st, const char *root);

/** Rewraps root's master keys under new key material (ko), optionally
 * with a new keyformat and/or keylocation (props), in ONE catalog
 * transaction: an interruption leaves the old or the new wrapping, never
 * neither.  Data is not touched.  The current key must be available
 * (loaded, or a file keylocation).  With ko->noop nothing changes and
 * neither key is used: only the root and the properties are checked (a
 * caller that prompts does this first).  ko may be NULL (the new key
 * material from the keylocation file).
 * @return 0, -ENOENT, -EINVAL (not a root), CAIRN_ENOKEY, CAIRN_EBADPROP. */
int cairn_change_key(cairn_store *st, const char *root, const cairn_prop *props, size_t nprops,
		     const cairn_key_opts *ko);

/** The encryption roots at or below `under` (NULL: all), in name order.
 * *names is malloc'd, each name too (free all).  @return 0 or an error. */
int cairn_encryption_roots(cairn_store *st, const char *under, char ***names, size_t *n);

/** The keyformat and keylocation of root (malloc'd, caller frees) and
 * whether its key is loaded.  @return 0, -ENOENT, -EINVAL (not a root). */
int cairn_key_info(cairn_store *st, const char *root, char **keyformat, char **keylocation,
		   bool *loaded);
/** @} */

#ifdef __cplusplus
}
#endif
#endif
