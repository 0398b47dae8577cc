/* encroot.c - see encroot.h. */
#include "crypt/encroot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "store/blob.h"
#include "catalog/dataset.h"
#include "crypt/keyring.h"
#include "crypt/lockholders.h"

#define ENC_NAME "aes-256-gcm"
#define FILE_PREFIX "file://"
/* A key file is a passphrase (<= 512 bytes), 64 hex digits or 32 bytes;
 * anything much longer is not one. */
#define KEYFILE_MAX 1024

/* ---- catalog rows ---- */

static int sql_exec(cairn_store *st, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(catalog_db(st->cat), sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		store_err(st, -EIO, "catalog: %s", msg ? msg : "error");
		sqlite3_free(msg);
		return -EIO;
	}
	return 0;
}

/* The store's id for keyring descriptions; 0 when it has none yet. */
static int store_id_get(cairn_store *st, uint64_t *id)
{
	sqlite3_stmt *q;
	*id = 0;
	if (sqlite3_prepare_v2(catalog_db(st->cat), "SELECT value FROM meta WHERE key='store_id'",
			       -1, &q, NULL))
		return store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
	if (sqlite3_step(q) == SQLITE_ROW)
		*id = (uint64_t)sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return 0;
}

/* In a write transaction: makes the store id and the key table exist. */
static int encryption_schema_in_txn(cairn_store *st)
{
	char sql[320];
	snprintf(sql, sizeof(sql),
		 "INSERT OR IGNORE INTO meta VALUES('store_id', %lld);"
		 "CREATE TABLE IF NOT EXISTS cryptkey(dataset INTEGER PRIMARY KEY,"
		 " keyblob BLOB NOT NULL);"
		 "CREATE TABLE IF NOT EXISTS cryptkey_prev(dataset INTEGER, seq INTEGER,"
		 " keyblob BLOB NOT NULL, PRIMARY KEY(dataset, seq));",
		 (long long)random_u64());
	return sql_exec(st, sql);
}

/* The key blob of root id: 0, -ENOENT (none), CAIRN_ECORRUPT (damaged). */
static int keyblob_get(cairn_store *st, int64_t id, uint8_t blob[CRYPT_KEYBLOB_LEN])
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat), "SELECT keyblob FROM cryptkey WHERE dataset=?",
			       -1, &q, NULL))
		return -ENOENT; /* no table: no encrypted dataset was ever made */
	sqlite3_bind_int64(q, 1, id);
	int r = -ENOENT, rc = sqlite3_step(q);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = -EIO; /* not "no key": a busy or failing catalog */
	if (rc == SQLITE_ROW) {
		const void *b = sqlite3_column_blob(q, 0);
		int n = sqlite3_column_bytes(q, 0);
		r = b && n == CRYPT_KEYBLOB_LEN && crypt_keyblob_check(b, n, NULL, NULL) == 0
			? 0
			: CAIRN_ECORRUPT;
		if (r == 0)
			memcpy(blob, b, CRYPT_KEYBLOB_LEN);
	}
	sqlite3_finalize(q);
	return r;
}

/* Runs sql (one statement) with ?1 = root id and ?2 = a key blob. */
static int exec_blob(cairn_store *st, const char *sql, int64_t id, const uint8_t *blob)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat), sql, -1, &q, NULL))
		return store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_blob(q, 2, blob, CRYPT_KEYBLOB_LEN, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
}

static int keyblob_put_in_txn(cairn_store *st, int64_t id, const uint8_t *blob)
{
	return exec_blob(st, "INSERT OR REPLACE INTO cryptkey VALUES(?1, ?2)", id, blob);
}

/* Runs sql (one statement) with id bound to its first parameter. */
static int exec_for_root(cairn_store *st, const char *sql, int64_t id)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat), sql, -1, &q, NULL))
		return 0; /* no table (no root ever made, or an older store): nothing to do */
	sqlite3_bind_int64(q, 1, id);
	int rc = sqlite3_step(q);
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
}

static int forget_earlier_in_txn(cairn_store *st, int64_t id)
{
	return exec_for_root(st, "DELETE FROM cryptkey_prev WHERE dataset=?", id);
}

int encroot_forget_in_txn(cairn_store *st, int64_t id)
{
	int r = exec_for_root(st, "DELETE FROM cryptkey WHERE dataset=?", id);
	return r < 0 ? r : forget_earlier_in_txn(st, id);
}

/* Earlier wrappings a root keeps (a raw receive replaced them): the
 * first, which the store had before any stream replaced it, and the
 * EARLIER_KEEP - 1 newest, so no run of streams can push out the one the
 * owner knows. */
#define EARLIER_KEEP 8
#define EARLIER_NEWEST_SQL "7" /* EARLIER_KEEP - 1, for SQL */

/* A raw receive replaces root id's wrapping with one nobody here can
 * open: the one it had is kept, so a forged or damaged wrapping in a
 * stream never locks the owner out. */
static int keep_earlier_in_txn(cairn_store *st, int64_t id, const uint8_t *blob)
{
	int r = exec_blob(st,
			  "INSERT INTO cryptkey_prev SELECT ?1, coalesce(max(seq), 0) + 1, ?2"
			  " FROM cryptkey_prev WHERE dataset=?1",
			  id, blob);
	if (r < 0)
		return r;
	return exec_for_root(st,
			     "DELETE FROM cryptkey_prev WHERE dataset=?1"
			     " AND seq > (SELECT min(seq) FROM cryptkey_prev WHERE dataset=?1)"
			     " AND seq <= (SELECT max(seq) FROM cryptkey_prev WHERE dataset=?1) - "
			     EARLIER_NEWEST_SQL,
			     id);
}

/* The earlier wrappings of root id, newest first (at most EARLIER_KEEP);
 * with blobs NULL, only their number. */
static int earlier_get(cairn_store *st, int64_t id, uint8_t blobs[][CRYPT_KEYBLOB_LEN], size_t *n)
{
	*n = 0;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT keyblob FROM cryptkey_prev WHERE dataset=? ORDER BY seq DESC",
			       -1, &q, NULL))
		return 0; /* an older store: none */
	sqlite3_bind_int64(q, 1, id);
	while (*n < EARLIER_KEEP && sqlite3_step(q) == SQLITE_ROW) {
		const void *b = sqlite3_column_blob(q, 0);
		if (!b || sqlite3_column_bytes(q, 0) != CRYPT_KEYBLOB_LEN ||
		    crypt_keyblob_check(b, CRYPT_KEYBLOB_LEN, NULL, NULL) < 0)
			continue;
		if (blobs)
			memcpy(blobs[*n], b, CRYPT_KEYBLOB_LEN);
		(*n)++;
	}
	sqlite3_finalize(q);
	return 0;
}

/* ---- roots ---- */

static bool is_on(const char *v)
{
	return v && strcmp(v, "off") != 0;
}

int encroot_find(cairn_store *st, const ds_row_t *ds, ds_row_t *root)
{
	int64_t id = ds->id;
	while (id) {
		ds_row_t cur = {0};
		int r = catalog_ds_by_id(st->cat, id, &cur);
		if (r < 0)
			return store_err(st, r, "%s: %s", ds->name, catalog_errmsg(st->cat));
		char *v = NULL;
		r = catalog_prop_get(st->cat, id, "encryption", &v);
		bool on = r == 0 && is_on(v);
		free(v);
		if (r < 0 && r != -ENOENT) {
			ds_row_clear(&cur);
			return store_err(st, r, "%s: %s", ds->name, catalog_errmsg(st->cat));
		}
		if (on) {
			*root = cur;
			return 1;
		}
		id = cur.parent;
		ds_row_clear(&cur);
	}
	return 0;
}

_Static_assert(sizeof(((encroot_loaded_t *)0)->desc) == KEYRING_DESC_MAX, "encroot_loaded_t");

static int root_desc(cairn_store *st, const ds_row_t *root, char desc[KEYRING_DESC_MAX])
{
	uint64_t sid;
	int r = store_id_get(st, &sid);
	if (r == 0)
		keyring_describe(sid, (uint64_t)root->id, desc); /* not guid: keyring.h */
	return r;
}

/* Reads a key file named by a file:// keylocation. */
static int keyfile_read(cairn_store *st, const char *root, const char *loc, uint8_t *buf,
			size_t *len)
{
	const char *path = loc + strlen(FILE_PREFIX);
	/* Not blocking on the open (a FIFO nobody writes) and only a file. */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return store_err(st, -errno, "%s: keylocation %s: %s", root, loc, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) < 0)
		return store_err(st, -errno, "%s: keylocation %s: %s", root, loc, strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return store_err(st, CAIRN_EBADPROP, "%s: keylocation %s: not a regular file", root,
				 loc);
	ssize_t n = read_full(fd, buf, KEYFILE_MAX + 1);
	if (n < 0)
		return store_err(st, (int)n, "%s: keylocation %s: %s", root, loc, strerror(-n));
	if (n > KEYFILE_MAX)
		return store_err(st, CAIRN_EBADPROP, "%s: keylocation %s: file too long for a key",
				 root, loc);
	*len = n;
	return 0;
}

/* Turns raw user key material into the secret for fmt. */
static int secret_from(cairn_store *st, const char *root, int fmt, const uint8_t *in, size_t len,
		       uint8_t *out, size_t *olen)
{
	const char *why = "";
	int r = crypt_secret_parse(fmt, in, len, out, olen, &why);
	return r < 0 ? store_err(st, r, "%s: %s", root, why) : 0;
}

/* Unwraps one key blob with the user's key material (in its format);
 * src names where the material came from, for a material of the wrong
 * form ("ROOT" or "ROOT: keylocation file:///...").  */
static int unwrap_blob(cairn_store *st, const ds_row_t *root, const char *src,
		       const uint8_t *blob, const uint8_t *given, size_t glen, crypt_keys_t **out)
{
	int fmt = 0;
	crypt_keyblob_check(blob, CRYPT_KEYBLOB_LEN, &fmt, NULL);
	uint8_t secret[CRYPT_PASSPHRASE_MAX];
	size_t slen = 0;
	int r = secret_from(st, src, fmt, given, glen, secret, &slen);
	if (r == 0) {
		r = crypt_unwrap(blob, CRYPT_KEYBLOB_LEN, secret, slen, out);
		if (r < 0 && r != CAIRN_EBADKEY)
			store_err(st, r, "%s: unwrapping the key: %s", root->name,
				  cairn_strerror(r));
	}
	OPENSSL_cleanse(secret, sizeof(secret));
	return r;
}

/* The wrappings a raw receive replaced, newest first; the first the key
 * material opens wins.  CAIRN_EBADKEY when none does (or none is kept). */
static int unwrap_earlier(cairn_store *st, const ds_row_t *root, const char *src,
			  const uint8_t *given, size_t glen, crypt_keys_t **out)
{
	uint8_t(*blobs)[CRYPT_KEYBLOB_LEN] = malloc(EARLIER_KEEP * CRYPT_KEYBLOB_LEN);
	if (!blobs)
		return -ENOMEM;
	size_t n = 0;
	int r = earlier_get(st, root->id, blobs, &n);
	if (r == 0)
		r = n ? CAIRN_EBADKEY
		      : store_err(st, CAIRN_EBADKEY,
				  "%s: no earlier wrapping kept (only a raw receive that replaced "
				  "the wrapping keeps one)",
				  root->name);
	/* An earlier wrapping may be of another format (the key given is
	 * not of its form): that one does not open either. */
	for (size_t i = 0; i < n && (r == CAIRN_EBADKEY || r == CAIRN_EBADPROP); i++)
		r = unwrap_blob(st, root, src, blobs[i], given, glen, out);
	if (n && (r == CAIRN_EBADKEY || r == CAIRN_EBADPROP))
		r = store_err(st, CAIRN_EBADKEY, "%s: incorrect key for all %zu earlier wrappings",
			      root->name, n);
	free(blobs);
	return r;
}

/* Unwraps root's key blob (or with earlier, the wrappings a raw receive
 * replaced) with key material read from loc (a file:// URL) or given. */
static int unwrap_root(cairn_store *st, const ds_row_t *root, const char *loc,
		       const uint8_t *given, size_t glen, bool earlier, crypt_keys_t **out)
{
	uint8_t blob[CRYPT_KEYBLOB_LEN];
	int r = keyblob_get(st, root->id, blob);
	if (r < 0)
		return store_err(st, r == -ENOENT ? CAIRN_ECORRUPT : r,
				 "%s: wrapped key missing or damaged in the catalog", root->name);
	uint8_t raw[KEYFILE_MAX + 1];
	size_t rlen = 0;
	char src[512 + 4200]; /* a dataset name, and a file:// URL of up to PATH_MAX */
	snprintf(src, sizeof(src), "%s", root->name);
	if (!given) {
		if (!loc || strncmp(loc, FILE_PREFIX, strlen(FILE_PREFIX)))
			return store_err(st, -EINVAL, "%s: no key given and keylocation is %s",
					 root->name, loc ? loc : "none");
		r = keyfile_read(st, root->name, loc, raw, &rlen);
		given = raw;
		glen = rlen;
		snprintf(src, sizeof(src), "%s: keylocation %s", root->name, loc);
	}
	if (r == 0 && earlier)
		r = unwrap_earlier(st, root, src, given, glen, out);
	else if (r == 0)
		r = unwrap_blob(st, root, src, blob, given, glen, out);
	size_t n = 0;
	if (!earlier && r == CAIRN_EBADKEY && earlier_get(st, root->id, NULL, &n) == 0)
		store_err(st, r, "%s: incorrect key%s%s%s", root->name,
			  n ? " (a raw receive replaced its wrapping and kept the earlier ones: "
			      "'cairn load-key --previous "
			    : "",
			  n ? root->name : "", n ? "' tries them)" : "");
	OPENSSL_cleanse(raw, sizeof(raw));
	return r;
}

/* ---- keys in use ----
 *
 * zfs refuses unload-key while a dataset uses the key.  cairn has no
 * daemon that could tell, so each command that holds a root's key marks
 * it in use: a read lock (open file description) on a byte of
 * keyusers.lock for as long as it keeps the key (crypt_keys_free closes
 * it; the kernel drops it when the process dies).  unload-key takes the
 * write lock on that byte, which it cannot get while any command holds a
 * read lock.  The byte is the root's and the key's: a key is loaded per
 * user (or session, keyring.h), and unload-key removes the one the caller
 * finds, so only the commands that use that very key may make it busy,
 * not another user's, which have a key of their own.  Each root has a
 * range of 2^31 bytes, one per key serial (a positive 32-bit number; 0:
 * no loaded key, a key file's); destroy, which takes the root from every
 * user, locks the whole range.  The key's serial, not its keyring's: a
 * key one command finds through a keyring another links (a session
 * keyring linking the user keyring, CAIRN_KEYRING=session) is the same
 * key to unload-key.  A command takes the read lock on the serial it
 * found and only then reads the key by that serial, so it either holds
 * the key when unload-key looks, or finds it gone.
 * One file with a range per root, not a file per root: a key set (verify,
 * gc) holds every root's key at once, and marks them all through one
 * descriptor (encroot_keyset_load); a file each cost a descriptor per
 * root, outside every fd budget, and verify of a store of many roots ran
 * out of them (t1381). */
#define KEYUSERS_FILE "keyusers.lock"

/* This process's umask: 0, or -errno when it cannot be told.  Read from
 * /proc/self/status (Linux 4.7 on): umask() can only read it by setting
 * it, and a thread creating a file meanwhile would get the wrong mode. */
static int umask_get(mode_t *mask)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return -errno;
	char line[256];
	unsigned m = 0;
	int r = -ENOENT;
	while (r < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "Umask: %o", &m) == 1)
			r = 0;
	fclose(f);
	*mask = (mode_t)m;
	return r;
}

/* Earlier builds made the lock file 0600: then only its owner's commands
 * could mark keys, and the commands of a user who may only read the store
 * went unseen by unload-key and destroy until someone ran chmod 644.  A
 * command that opened it for writing and finds exactly that mode widens
 * it to what creating it now would give, 0644 less this process's umask,
 * only ever adding read bits (a mode someone chose, 0640 say, stays).
 * Best effort: fchmod fails for a writer who is not the owner (nor root),
 * and the owner's next command does it; with an unknown umask, nothing.
 * Only a file with no other name: whoever may write the store's directory
 * can make keyusers.lock a hard link to some other 0600 file (O_NOFOLLOW
 * stops symlinks only), which root's command would make readable to all
 * (t1385). */
static void key_use_widen(int fd)
{
	struct stat sb;
	mode_t mask = 0;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1 ||
	    (sb.st_mode & 07777) != 0600 || umask_get(&mask) < 0)
		return;
	mode_t want = 0600 | (0044 & ~mask);
	if (want != 0600)
		(void)fchmod(fd, want);
}

/* The lock file: an fd, or -errno (no file this user may open: nothing is
 * marked, and nothing refused).  Readable by all whom the store's
 * directory lets in (it is empty): a user who may only read the store
 * marks the keys of its commands and checks them at unload-key too. */
static int key_use_open(cairn_store *st, bool writing)
{
	int fd = openat(st->dirfd, KEYUSERS_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0)
		key_use_widen(fd);
	/* A read lock needs only read access. */
	if (fd < 0 && !writing)
		fd = openat(st->dirfd, KEYUSERS_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

#define KEY_USE_RANGE_BITS 31

/* Fills fl (type) with root id's byte for key serial key (>= 0), or with
 * key < 0 its whole range: 0, or -EOVERFLOW for a row id too large for a
 * range of its own (past 2^32: nothing is locked, as for a store this
 * user cannot open the file of). */
static int key_use_range(int64_t id, int32_t key, short type, struct flock *fl)
{
	if (id <= 0 || (uint64_t)id >= (UINT64_C(1) << (63 - KEY_USE_RANGE_BITS)))
		return -EOVERFLOW;
	off_t start = (off_t)id << KEY_USE_RANGE_BITS;
	*fl = (struct flock){.l_type = type, .l_whence = SEEK_SET,
			     .l_start = key < 0 ? start : start + key,
			     .l_len = key < 0 ? (off_t)1 << KEY_USE_RANGE_BITS : 1};
	return 0;
}

/* A file system without OFD locks (F_OFD_* fail with EINVAL there: some
 * FUSE and network file systems, kernels before 3.15) gets flock() on the
 * whole file instead: read lock LOCK_SH, write lock LOCK_EX.  Coarser, as
 * safe: every command there takes the same fallback, so a destroy or
 * unload-key still finds any command holding a key, only also those of
 * other roots and keys (it refuses as busy until they end).  Without it
 * no destroy of an encryption root could ever take its lock there. */
static int key_use_flock(int fd, short type)
{
	if (flock(fd, (type == F_RDLCK ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0)
		return 0;
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/* Locks (type) that range (key_use_range) in the lock file fd: 0, -EAGAIN
 * (held elsewhere) or -errno.  Never waits: a wait is key_use_lock_until's,
 * bounded. */
static int key_use_lock(int fd, int64_t id, int32_t key, short type)
{
	struct flock fl;
	int r = key_use_range(id, key, type, &fl);
	if (r < 0)
		return r;
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	/* (The range is valid: EINVAL is the file system's.) */
	if (errno == EINVAL)
		return key_use_flock(fd, type);
	return errno == EACCES || errno == EAGAIN ? -EAGAIN : -errno;
}

/* key_use_lock, tried again while the range is held elsewhere until
 * until (mono_ns; once at least): 0, -EAGAIN (still held then) or -errno.
 * Polled, not F_OFD_SETLKW: a blocking wait has no timeout, and whoever
 * may write the store's directory may hold the write lock for ever
 * (t1760). */
static int key_use_lock_until(int fd, int64_t id, int32_t key, short type, int64_t until)
{
	int64_t nap_us = 1000;
	for (;;) {
		int r = key_use_lock(fd, id, key, type);
		int64_t left_us = (until - mono_ns()) / 1000;
		if (r != -EAGAIN || left_us <= 0)
			return r;
		usleep((useconds_t)(nap_us < left_us ? nap_us : left_us));
		if (nap_us < 100000)
			nap_us *= 2;
	}
}

/* unload-key's look at root id's byte for key serial key: 0, or -EAGAIN
 * while a command holds the key.  Through a read-only fd (a user who
 * may not write the store) it cannot take the write lock, so it asks
 * whether one could be taken (F_OFD_GETLK): without the lock, a command
 * that starts between that look and the unload may still get the key. */
static int key_use_check(int fd, int64_t id, int32_t key)
{
	int acc = fcntl(fd, F_GETFL);
	if (acc >= 0 && (acc & O_ACCMODE) == O_RDWR)
		return key_use_lock(fd, id, key, F_WRLCK);
	struct flock fl;
	int r = key_use_range(id, key, F_WRLCK, &fl);
	if (r < 0)
		return r;
	if (fcntl(fd, F_OFD_GETLK, &fl) == 0)
		return fl.l_type == F_UNLCK ? 0 : -EAGAIN;
	/* No OFD locks: flock() needs no write access for LOCK_EX, so the
	 * fallback takes the lock itself (held until the fd is closed, after
	 * the unload). */
	return errno == EINVAL ? key_use_flock(fd, F_WRLCK) : -errno;
}

/* Whether the lock file fd is where key_use_lock falls back to flock()
 * (no OFD locks: key_use_flock). */
static bool key_use_flocked(int fd)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	return fcntl(fd, F_OFD_GETLK, &fl) < 0 && errno == EINVAL;
}

/* For a refusal: who holds the lock on root id's byte for key serial key
 * (key < 0: its range) in the lock file fd, into buf.  OFD locks name no
 * process (l_pid is -1), and anyone who may read the store may take one,
 * so the message tells where to look: the holders this user may see
 * (lock_holders), or else how root finds them.  Where the marks are
 * flock()s of the whole file, their holders (the OFD ones there are
 * none of: t1762). */
static void key_use_holders(cairn_store *st, int fd, int64_t id, int32_t key, char *buf,
			    size_t len)
{
	struct flock fl;
	struct stat sb;
	char who[512], where[64]; /* 4 holders, each comm up to 60 bytes escaped */
	buf[0] = 0;
	if (key_use_range(id, key, F_WRLCK, &fl) < 0 || fstat(fd, &sb) < 0)
		return;
	long long first = (long long)fl.l_start, last = first + (long long)fl.l_len - 1;
	bool whole = key_use_flocked(fd);
	if (whole)
		snprintf(where, sizeof(where), "whole file, flock");
	else
		snprintf(where, sizeof(where), "bytes %lld-%lld", first, last);
	if (whole ? flock_holders(sb.st_dev, sb.st_ino, who, sizeof(who))
		  : lock_holders(sb.st_dev, sb.st_ino, fl.l_start, fl.l_len, who, sizeof(who)))
		snprintf(buf, len, "the lock on %s/%s (%s) is held by %s", st->path, KEYUSERS_FILE,
			 where, who);
	else
		snprintf(buf, len,
			 "the lock on %s/%s (%s) is held by no process this user may see; as root, "
			 "grep -l ':%llu ' /proc/[0-9]*/fdinfo/* finds the holders",
			 st->path, KEYUSERS_FILE, where, (unsigned long long)sb.st_ino);
}

/* How long a command waits for key locks: key_lock_wait_seconds, in all. */
typedef struct key_wait {
	int64_t secs;  /* the setting, for the message */
	int64_t until; /* mono_ns */
} key_wait_t;

/* A wait of key_lock_wait_seconds from now. */
static key_wait_t key_wait_start(cairn_store *st)
{
	key_wait_t w = {.secs = store_setting(st, "key_lock_wait_seconds")};
	w.until = mono_ns() + w.secs * 1000000000;
	return w;
}

/* Marks root's key of serial key (0: a key file's) in use: *fd holding the
 * read lock, or -1 (best effort: no file this user may open, or no lock
 * it can take there).  Waits while an unload-key or a destroy holds the
 * write lock, but not past the wait w (key_lock_wait_seconds): a holder
 * that never lets go (anyone who may write the store can take it) must
 * not make every command on the root hang.  Then -EBUSY, naming the
 * holder. */
static int key_use_begin(cairn_store *st, const ds_row_t *root, int32_t key,
			 const key_wait_t *w, int *fd)
{
	*fd = key_use_open(st, false);
	if (*fd < 0) {
		*fd = -1;
		return 0;
	}
	int64_t secs = w->secs;
	int r = key_use_lock_until(*fd, root->id, key, F_RDLCK, w->until);
	if (r == -EAGAIN) {
		char who[1024];
		key_use_holders(st, *fd, root->id, key, who, sizeof(who));
		r = store_err(st, -EBUSY,
			      "%s: key is busy: an unload-key or destroy of the encryption "
			      "root holds it (waited %lld s, key_lock_wait_seconds); %s",
			      root->name, (long long)secs, who);
	}
	if (r < 0) {
		close(*fd);
		*fd = -1;
	}
	return r == -EBUSY ? r : 0;
}

void encroot_keys_unmark(crypt_keys_t *k)
{
	if (k && k->usefd >= 0) {
		close(k->usefd);
		k->usefd = -1;
	}
}

/* The name an earlier build gave root's key: "cairn:<store id>:<root
 * guid>" (before keys were named by row id).  0, or -errno; -EEXIST when
 * that is now the name of a live root's key (a guid, which a received
 * stream chooses, equal to a row id): that key is not this root's. */
static int legacy_desc(cairn_store *st, const ds_row_t *root, char desc[KEYRING_DESC_MAX])
{
	uint64_t sid;
	int r = store_id_get(st, &sid);
	if (r == 0 && root->guid <= INT64_MAX) {
		ds_row_t other = {0};
		if (catalog_ds_by_id(st->cat, (int64_t)root->guid, &other) == 0)
			r = -EEXIST;
		ds_row_clear(&other);
	}
	if (r == 0)
		keyring_describe(sid, root->guid, desc);
	return r;
}

int encroot_key_unload(cairn_store *st, const ds_row_t *root, const char *desc)
{
	/* A key an earlier build loaded is under the root's guid, where no
	 * verb of this build finds it: unload-key is the one way left to
	 * take those master keys out of the keyring, so it removes that key
	 * too (and counts it as loaded).  A guid shared by raw copies of the
	 * root shares the same master keys, so removing it is right for
	 * either copy. */
	char old[KEYRING_DESC_MAX];
	bool has_old = legacy_desc(st, root, old) == 0 && strcmp(old, desc) &&
		       keyring_present(old);
	int32_t key = keyring_key_serial(desc);
	bool has_new = key > 0;
	if (!has_new && !has_old)
		return -ENOKEY;
	/* Read-only too: a user who may not write the store still unloads
	 * only keys no command of theirs holds.  That very key: the one
	 * whose byte is looked at is the one invalidated. */
	int r = 0, fd = key_use_open(st, false);
	if (fd >= 0 && has_new && key_use_check(fd, root->id, key) == -EAGAIN) {
		char who[1024];
		key_use_holders(st, fd, root->id, key, who, sizeof(who));
		r = store_err(st, -EBUSY,
			      "%s: key is busy: a running command uses it (a backup, restore, "
			      "diff, verify or plain send); unload it when that has ended; %s",
			      root->name, who);
	} else {
		if (has_new)
			r = keyring_unload_serial(key);
		int e = has_old ? keyring_unload(old) : 0;
		if (r == 0 && e < 0 && e != -ENOKEY)
			r = e;
	}
	if (fd >= 0)
		close(fd); /* after the unload: a command waiting then finds no key */
	return r;
}

int encroot_key_claim(cairn_store *st, const ds_row_t *root, int *fd)
{
	/* Without the claim a destroy cannot tell whether a running command
	 * uses the key (a reader's mark is there to be seen whatever this
	 * user may do), so it must not go on: zfs refuses rather than destroy
	 * a dataset that may be busy. */
	if (*fd < 0) {
		int f = key_use_open(st, true);
		if (f < 0)
			return store_err(st, f,
					 "%s: cannot claim the encryption root's key for the "
					 "destroy: %s/%s: %s (a running command may be using it; "
					 "destroy as the file's owner, or have the owner make it "
					 "writable by this user's group)",
					 root->name, st->path, KEYUSERS_FILE, strerror(-f));
		*fd = f;
	}
	int r = key_use_lock(*fd, root->id, -1, F_WRLCK);
	/* A row id past 2^32 has no range: no command could mark it either. */
	if (r == -EOVERFLOW)
		return 0;
	if (r < 0 && r != -EAGAIN)
		return store_err(st, r,
				 "%s: cannot claim the encryption root's key for the destroy: "
				 "locking %s/%s: %s",
				 root->name, st->path, KEYUSERS_FILE, strerror(-r));
	if (r == -EAGAIN) {
		char who[1024];
		key_use_holders(st, *fd, root->id, -1, who, sizeof(who));
		r = store_err(st, -EBUSY,
			      "%s: dataset is busy: a running command uses its key (a backup, "
			      "restore, diff, verify or plain send); destroy it when that has "
			      "ended; %s",
			      root->name, who);
	}
	return r;
}

/* encroot_keys, waiting for the key's lock within w. */
static int keys_within(cairn_store *st, const ds_row_t *ds, const key_wait_t *w,
		       crypt_keys_t **out)
{
	*out = NULL;
	ds_row_t root = {0};
	int r = encroot_find(st, ds, &root);
	if (r <= 0)
		return r;
	char desc[KEYRING_DESC_MAX];
	r = root_desc(st, &root, desc);
	/* The mark first, on the key found now; then that key is read by its
	 * serial: an unload-key that got its byte first invalidated it, and
	 * the read finds it gone (ENOKEY). */
	int32_t key = r == 0 ? keyring_key_serial(desc) : 0;
	int usefd = -1;
	int busy = key_use_begin(st, &root, key > 0 ? key : 0, w, &usefd);
	if (busy < 0) {
		ds_row_clear(&root);
		return busy;
	}
	if (r == 0)
		r = key > 0 ? keyring_find_serial(key, out) : key;
	if (r == -ENOKEY) {
		/* Not loaded: a file keylocation loads it for this command. */
		char *loc = NULL;
		catalog_prop_get(st->cat, root.id, "keylocation", &loc);
		if (loc && !strncmp(loc, FILE_PREFIX, strlen(FILE_PREFIX)))
			r = unwrap_root(st, &root, loc, NULL, 0, false, out);
		else
			r = store_err(st, CAIRN_ENOKEY,
				      "%s: encryption key not loaded (encryption root %s; run "
				      "'cairn load-key %s')",
				      ds->name, root.name, root.name);
		free(loc);
	} else if (r < 0) {
		store_err(st, r, "%s: kernel keyring: %s", root.name, cairn_strerror(r));
	}
	uint8_t blob[CRYPT_KEYBLOB_LEN], kid[CRYPT_KEYID_LEN];
	/* A key left in the keyring by an earlier root of the same row id (a
	 * destroyed root whose id a new one got) must not be used for this one. */
	if (r == 0 && keyblob_get(st, root.id, blob) == 0 &&
	    crypt_keyblob_check(blob, sizeof(blob), NULL, kid) == 0 &&
	    memcmp(kid, (*out)->keyid, CRYPT_KEYID_LEN)) {
		crypt_keys_free(*out);
		*out = NULL;
		r = store_err(st, CAIRN_ENOKEY,
			      "%s: the loaded key belongs to other key material (run 'cairn "
			      "unload-key %s' and load it again)",
			      root.name, root.name);
	}
	if (r == 0) {
		(*out)->usefd = usefd;
		(*out)->usekey = key > 0 ? key : 0;
	} else if (usefd >= 0)
		close(usefd);
	ds_row_clear(&root);
	return r;
}

int encroot_keys(cairn_store *st, const ds_row_t *ds, crypt_keys_t **out)
{
	key_wait_t w = key_wait_start(st);
	return keys_within(st, ds, &w, out);
}

int encroot_keys_by_name(cairn_store *st, const char *name, crypt_keys_t **out)
{
	ds_row_t ds = {0};
	*out = NULL;
	int r = dataset_lookup(st, name, &ds);
	if (r == 0)
		r = encroot_keys(st, &ds, out);
	ds_row_clear(&ds);
	return r;
}

/* ---- properties ---- */

static bool is_enc_prop(const char *p)
{
	return !strcmp(p, "encryption") || !strcmp(p, "keyformat") || !strcmp(p, "keylocation");
}

int encroot_prop_normalize(cairn_store *st, const char *prop, const char *value, char **norm)
{
	if (!is_enc_prop(prop))
		return 0;
	if (!strcmp(prop, "encryption")) {
		if (!strcmp(value, "on") || !strcmp(value, ENC_NAME))
			*norm = strdup(ENC_NAME);
		else if (!strcmp(value, "off"))
			*norm = strdup("off");
		else
			return store_err(st, CAIRN_EBADPROP,
					 "encryption=%s: expected on, off or " ENC_NAME, value);
	} else if (!strcmp(prop, "keyformat")) {
		if (crypt_keyformat_parse(value) < 0)
			return store_err(st, CAIRN_EBADPROP,
					 "keyformat=%s: expected passphrase, hex or raw", value);
		*norm = strdup(value);
	} else {
		bool file = !strncmp(value, FILE_PREFIX "/", strlen(FILE_PREFIX) + 1);
		if (strcmp(value, "prompt") && !file)
			return store_err(st, CAIRN_EBADPROP,
					 "keylocation=%s: expected prompt or file:///absolute/path",
					 value);
		*norm = strdup(value);
	}
	return *norm ? 1 : -ENOMEM;
}

static int set_str(char **v, const char *s)
{
	*v = strdup(s);
	return *v ? 1 : -ENOMEM;
}

int encroot_key_loaded(cairn_store *st, const ds_row_t *root)
{
	char desc[KEYRING_DESC_MAX];
	int r = root_desc(st, root, desc);
	if (r < 0)
		return r;
	crypt_keys_t *k = NULL;
	if (keyring_find(desc, &k) < 0)
		return 0;
	/* A key under the root's description may be for other key material
	 * (an earlier root of the same row id, or a wrapping replaced since it
	 * was loaded): it cannot open the data, so it does not count.  The
	 * key id in the keyring payload names the master keys it holds. */
	uint8_t blob[CRYPT_KEYBLOB_LEN], kid[CRYPT_KEYID_LEN];
	bool same = keyblob_get(st, root->id, blob) == 0 &&
		    crypt_keyblob_check(blob, sizeof(blob), NULL, kid) == 0 &&
		    !memcmp(kid, k->keyid, CRYPT_KEYID_LEN);
	crypt_keys_free(k);
	return same;
}

static int keystatus(cairn_store *st, const ds_row_t *root, char **value)
{
	int r = encroot_key_loaded(st, root);
	if (r < 0)
		return r;
	return set_str(value, r ? "available" : "unavailable");
}

int encroot_prop(cairn_store *st, const ds_row_t *ds, const char *prop, char **value,
		 char **source)
{
	bool computed = !strcmp(prop, "encryptionroot") || !strcmp(prop, "keystatus");
	if (!computed && !is_enc_prop(prop))
		return 0;
	ds_row_t root = {0};
	int r = encroot_find(st, ds, &root);
	if (r < 0)
		return r;
	bool enc = r == 1;
	if (source)
		*source = NULL;
	if (computed) {
		if (source && !(*source = strdup("-")))
			r = -ENOMEM;
		else if (!enc)
			r = set_str(value, "-");
		else if (!strcmp(prop, "encryptionroot"))
			r = set_str(value, root.name);
		else
			r = keystatus(st, &root, value);
		ds_row_clear(&root);
		return r;
	}
	/* encryption, keyformat, keylocation: the root's local value, shown
	 * as inherited below it; "off"/"none" on plain datasets. */
	char *v = NULL;
	if (enc && catalog_prop_get(st->cat, root.id, prop, &v) == 0) {
		*value = v;
		if (source) {
			if (root.id == ds->id)
				*source = strdup("local");
			else if (asprintf(source, "inherited from %s", root.name) < 0)
				*source = NULL;
		}
	} else {
		*value = strdup(!strcmp(prop, "encryption") ? "off" : "none");
		if (source)
			*source = strdup("default");
	}
	ds_row_clear(&root);
	return *value && (!source || *source) ? 1 : -ENOMEM;
}

int encroot_set_check(cairn_store *st, const ds_row_t *ds, const char *prop)
{
	if (!strcmp(prop, "encryption") || !strcmp(prop, "keyformat"))
		return store_err(st, CAIRN_EBADPROP,
				 "%s: %s can only be set at creation (keyformat: use change-key)",
				 ds->name, prop);
	if (strcmp(prop, "keylocation"))
		return 0;
	char *v = NULL;
	int r = catalog_prop_get(st->cat, ds->id, "encryption", &v);
	bool root = r == 0 && is_on(v);
	free(v);
	return root ? 0
		    : store_err(st, CAIRN_EBADPROP,
				"%s: keylocation can only be set on an encryption root", ds->name);
}

/* ---- create ---- */

static const char *prop_in(const cairn_prop *props, size_t n, const char *name)
{
	const char *v = NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(props[i].name, name))
			v = props[i].value;
	return v;
}

static __thread bool receiving;

void encroot_receiving(bool on)
{
	receiving = on;
}

bool encroot_prop_is_key(const char *prop)
{
	return is_enc_prop(prop);
}

/* A child of an encrypted dataset: zfs wants the root's key loaded. */
static int check_child(cairn_store *st, const char *name, int64_t parent, const char *enc,
		       const char *fmt, const char *loc)
{
	if (!parent)
		goto plain;
	ds_row_t p = {0};
	int r = catalog_ds_by_id(st->cat, parent, &p);
	if (r < 0)
		return store_err(st, r, "%s: %s", name, catalog_errmsg(st->cat));
	crypt_keys_t *k = NULL;
	ds_row_t root = {0};
	r = encroot_find(st, &p, &root);
	if (r == 1) {
		if (enc && !is_on(enc))
			r = store_err(st, CAIRN_EBADPROP,
				      "%s: cannot create an unencrypted dataset below encryption "
				      "root %s",
				      name, root.name);
		else if (enc)
			r = store_err(st, CAIRN_EBADPROP,
				      "%s: already encrypted through encryption root %s (cairn has "
				      "one encryption root per subtree)",
				      name, root.name);
		else if (fmt || loc)
			r = store_err(st, CAIRN_EBADPROP,
				      "%s: keyformat and keylocation belong to encryption root %s",
				      name, root.name);
		else if (!receiving)
			r = encroot_keys(st, &p, &k);
	}
	crypt_keys_free(k);
	ds_row_clear(&root);
	ds_row_clear(&p);
	if (r != 0)
		return r < 0 ? r : 1;
plain:
	if (!enc && (fmt || loc))
		return store_err(st, CAIRN_EBADPROP,
				 "%s: keyformat and keylocation need -o encryption=on", name);
	return 0;
}

int encroot_create_in_txn(cairn_store *st, int64_t id, const char *name, int64_t parent,
			  const cairn_prop *props, size_t nprops, const uint8_t *secret,
			  size_t slen, bool check, crypt_keys_t **loaded)
{
	*loaded = NULL;
	const char *enc = prop_in(props, nprops, "encryption");
	const char *fmt = prop_in(props, nprops, "keyformat");
	const char *loc = prop_in(props, nprops, "keylocation");
	int r = check_child(st, name, parent, enc, fmt, loc);
	if (r != 0 || !enc || !is_on(enc))
		return r < 0 ? r : 0;
	if (!fmt)
		return store_err(st, CAIRN_EBADPROP,
				 "%s: keyformat must be given for a new encryption root", name);
	if (!loc) {
		loc = "prompt";
		r = catalog_prop_set(st->cat, id, "keylocation", loc);
		if (r < 0)
			return store_err(st, r, "%s: %s", name, catalog_errmsg(st->cat));
	}
	int f = crypt_keyformat_parse(fmt);
	if (check)
		return 0; /* what remains needs the key material */
	uint8_t raw[KEYFILE_MAX + 1], sec[CRYPT_PASSPHRASE_MAX], blob[CRYPT_KEYBLOB_LEN];
	size_t rlen = 0, seclen = 0;
	if (!secret) {
		if (strncmp(loc, FILE_PREFIX, strlen(FILE_PREFIX)))
			return store_err(st, -EINVAL, "%s: keylocation=prompt needs a key given",
					 name);
		r = keyfile_read(st, name, loc, raw, &rlen);
		secret = raw;
		slen = rlen;
	}
	crypt_keys_t *k = NULL;
	if (r == 0)
		r = secret_from(st, name, f, secret, slen, sec, &seclen);
	if (r == 0 && (r = crypt_keys_generate(&k)) < 0)
		store_err(st, r, "%s: generating keys: %s", name, cairn_strerror(r));
	if (r == 0 && (r = crypt_wrap(k, f, sec, seclen, blob)) < 0)
		store_err(st, r, "%s: wrapping the key: %s", name, cairn_strerror(r));
	if (r == 0)
		r = encryption_schema_in_txn(st);
	if (r == 0)
		r = keyblob_put_in_txn(st, id, blob);
	OPENSSL_cleanse(raw, sizeof(raw));
	OPENSSL_cleanse(sec, sizeof(sec));
	if (r < 0)
		crypt_keys_free(k);
	else
		*loaded = k;
	return r;
}

int encroot_desc(cairn_store *st, const ds_row_t *root, char desc[64])
{
	return root_desc(st, root, desc);
}

int encroot_legacy_desc(cairn_store *st, const ds_row_t *root, char desc[64])
{
	return legacy_desc(st, root, desc);
}

int encroot_unwrap(cairn_store *st, const ds_row_t *root, const char *loc, const uint8_t *secret,
		   size_t slen, bool earlier, crypt_keys_t **out)
{
	return unwrap_root(st, root, loc, secret, slen, earlier, out);
}

int encroot_earlier_count(cairn_store *st, const ds_row_t *root, size_t *n)
{
	return earlier_get(st, root->id, NULL, n);
}

int encroot_is_root(cairn_store *st, const ds_row_t *ds)
{
	char *v = NULL;
	int r = catalog_prop_get(st->cat, ds->id, "encryption", &v);
	bool root = r == 0 && is_on(v);
	free(v);
	if (r < 0 && r != -ENOENT)
		return store_err(st, r, "%s: %s", ds->name, catalog_errmsg(st->cat));
	return root;
}

int encroot_rewrap_in_txn(cairn_store *st, const ds_row_t *root, const crypt_keys_t *k, int fmt,
			  const char *loc, const uint8_t *secret, size_t slen)
{
	uint8_t raw[KEYFILE_MAX + 1], sec[CRYPT_PASSPHRASE_MAX], blob[CRYPT_KEYBLOB_LEN];
	size_t rlen = 0, seclen = 0;
	int r = 0;
	if (!secret) {
		if (strncmp(loc, FILE_PREFIX, strlen(FILE_PREFIX)))
			return store_err(st, -EINVAL, "%s: keylocation=prompt needs a key given",
					 root->name);
		r = keyfile_read(st, root->name, loc, raw, &rlen);
		secret = raw;
		slen = rlen;
	}
	if (r == 0)
		r = secret_from(st, root->name, fmt, secret, slen, sec, &seclen);
	if (r == 0 && (r = crypt_wrap(k, fmt, sec, seclen, blob)) < 0)
		store_err(st, r, "%s: wrapping the key: %s", root->name, cairn_strerror(r));
	if (r == 0)
		r = keyblob_put_in_txn(st, root->id, blob);
	/* The owner chose the one key that opens the root from now on. */
	if (r == 0)
		r = forget_earlier_in_txn(st, root->id);
	if (r == 0 && (r = catalog_prop_set(st->cat, root->id, "keyformat",
					    crypt_keyformat_name(fmt))) < 0)
		store_err(st, r, "%s: %s", root->name, catalog_errmsg(st->cat));
	if (r == 0 && (r = catalog_prop_set(st->cat, root->id, "keylocation", loc)) < 0)
		store_err(st, r, "%s: %s", root->name, catalog_errmsg(st->cat));
	OPENSSL_cleanse(raw, sizeof(raw));
	OPENSSL_cleanse(sec, sizeof(sec));
	return r;
}

int encroot_keyring_add(cairn_store *st, const char *name, const crypt_keys_t *k,
			unsigned timeout_s, encroot_loaded_t *loaded)
{
	ds_row_t root = {0};
	int r = dataset_lookup(st, name, &root);
	char desc[KEYRING_DESC_MAX];
	if (r == 0)
		r = root_desc(st, &root, desc);
	if (r == 0 && (r = keyring_load(desc, k, timeout_s)) < 0)
		store_err(st, r, "%s: kernel keyring: %s", name, strerror(-r));
	if (r == 0 && loaded)
		memcpy(loaded->desc, desc, sizeof(desc));
	ds_row_clear(&root);
	return r;
}

void encroot_keyring_undo(const encroot_loaded_t *loaded)
{
	keyring_unload(loaded->desc);
}

/* ---- verify ---- */

int encroot_keyset_load(cairn_store *st, encroot_keyset_t *ks)
{
	memset(ks, 0, sizeof(*ks));
	ks->complete = true;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat),
			       "SELECT dataset FROM dprop WHERE name='encryption' AND value!='off'",
			       -1, &q, NULL))
		return store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
	int r = 0;
	/* One wait for the whole set: a root each, and a holder of the whole
	 * lock file kept a verify of N roots waiting N times the setting.
	 * Past it, each root left is tried once (t1763). */
	key_wait_t w = key_wait_start(st);
	while (r == 0 && sqlite3_step(q) == SQLITE_ROW) {
		ds_row_t root = {0};
		crypt_keys_t *k = NULL;
		r = catalog_ds_by_id(st->cat, sqlite3_column_int64(q, 0), &root);
		int e = r == 0 ? keys_within(st, &root, &w, &k) : 0;
		/* The set's one descriptor takes over the key's mark (its
		 * read lock first, so the key is never unmarked between). */
		if (r == 0 && e == 0 && k->usefd >= 0) {
			if (!ks->marking) {
				ks->usefd = key_use_open(st, false);
				ks->marking = ks->usefd >= 0;
			}
			if (ks->marking &&
			    key_use_lock(ks->usefd, root.id, k->usekey, F_RDLCK) == 0)
				encroot_keys_unmark(k);
		}
		ds_row_clear(&root);
		/* A loaded key kept busy is not a missing one: checked without
		 * it, a blob with a forged checksum would pass, and whoever
		 * may forge one may also hold the lock (t1764).  The set
		 * fails, naming the holder (errdetail), as a command does. */
		if (r == 0 && e == -EBUSY) {
			r = e;
			break;
		}
		if (r < 0 || e < 0) {
			/* A root without its key is checked without it. */
			ks->complete = false;
			st->errdetail[0] = 0;
			r = 0;
			continue;
		}
		crypt_keys_t **v = realloc(ks->k, (ks->n + 1) * sizeof(*v));
		if (!v) {
			crypt_keys_free(k);
			r = -ENOMEM;
			break;
		}
		ks->k = v;
		ks->k[ks->n++] = k;
	}
	sqlite3_finalize(q);
	if (r < 0)
		encroot_keyset_free(ks);
	return r;
}

void encroot_keyset_free(encroot_keyset_t *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		crypt_keys_free(ks->k[i]);
	free(ks->k);
	if (ks->marking)
		close(ks->usefd); /* the keys are no longer in use here */
	memset(ks, 0, sizeof(*ks));
}

static int verify_chunk_once(chunkstore_t *cs, const encroot_keyset_t *ks, const digest_t *d,
			     buf_t *out)
{
	int r = chunkstore_get_raw(cs, d, out);
	if (r < 0)
		return r;
	if (!blob_is_encrypted(out->data, out->len)) {
		buf_t raw = *out;
		*out = (buf_t){0};
		r = blob_decode(raw.data, raw.len, d, out);
		buf_free(&raw);
		return r;
	}
	r = blob_check(out->data, out->len, NULL);
	if (r < 0)
		return r;
	/* The key whose tag authenticates the blob is its root's: its verdict
	 * (the id, the payload) is final.  Only a blob that no loaded key
	 * opens may belong to a root whose key is not loaded. */
	buf_t plain = {0};
	bool authentic = false;
	for (size_t i = 0; i < ks->n && !authentic; i++)
		r = blob_decode_key_auth(ks->k[i], out->data, out->len, d, &plain, &authentic);
	OPENSSL_cleanse(plain.data, plain.cap);
	buf_free(&plain);
	if (authentic)
		return r;
	return ks->complete ? CAIRN_ECORRUPT : 0;
}

int encroot_verify_chunk(chunkstore_t *cs, const encroot_keyset_t *ks, const digest_t *d,
			 buf_t *out)
{
	int r = verify_chunk_once(cs, ks, d, out);
	/* A body from a bucket may have been damaged on its way: one more
	 * read before the chunk is called damaged. */
	if (r == CAIRN_ECORRUPT && chunkstore_backend(cs)) {
		buf_free(out);
		r = verify_chunk_once(cs, ks, d, out);
	}
	return r;
}

int encroot_keys_for_snapshot(cairn_store *st, int64_t snap_id, crypt_keys_t **out)
{
	*out = NULL;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat), "SELECT dataset FROM snapshot WHERE id=?", -1,
			       &q, NULL))
		return store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat));
	sqlite3_bind_int64(q, 1, snap_id);
	int64_t ds = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
	sqlite3_finalize(q);
	if (!ds)
		return -ENOENT;
	ds_row_t row = {0};
	int r = catalog_ds_by_id(st->cat, ds, &row);
	if (r == 0)
		r = encroot_keys(st, &row, out);
	ds_row_clear(&row);
	return r;
}

int encroot_rename_check(cairn_store *st, const ds_row_t *ds, int64_t new_parent, const char *to)
{
	int r = encroot_is_root(st, ds);
	if (r != 0)
		return r < 0 ? r : 0;
	ds_row_t old = {0}, now = {0}, parent = {0};
	int a = encroot_find(st, ds, &old);
	int b = 0;
	if (a >= 0 && new_parent) {
		b = catalog_ds_by_id(st->cat, new_parent, &parent);
		if (b == 0)
			b = encroot_find(st, &parent, &now);
	}
	if (a < 0 || b < 0)
		r = a < 0 ? a : b;
	else if (a != b || (a == 1 && old.id != now.id))
		r = store_err(st, -EINVAL,
			      "%s: cannot move %s from encryption root %s to %s (its data is "
			      "sealed with its root's keys)",
			      to, ds->name, a ? old.name : "none (unencrypted)",
			      b ? now.name : "none (unencrypted)");
	ds_row_clear(&old);
	ds_row_clear(&now);
	ds_row_clear(&parent);
	return r;
}

/* ---- raw send and receive ---- */

int encroot_wrapped_get(cairn_store *st, const ds_row_t *ds, encroot_wrapped_t *w)
{
	memset(w, 0, sizeof(*w));
	ds_row_t root = {0};
	int r = encroot_find(st, ds, &root);
	if (r <= 0)
		return r;
	r = keyblob_get(st, root.id, w->blob);
	if (r < 0)
		r = store_err(st, CAIRN_ECORRUPT, "%s: wrapped key missing or damaged in the catalog",
			      root.name);
	if (r == 0 && (catalog_prop_get(st->cat, root.id, "keyformat", &w->keyformat) < 0 ||
		       catalog_prop_get(st->cat, root.id, "keylocation", &w->keylocation) < 0))
		r = store_err(st, CAIRN_ECORRUPT, "%s: keyformat or keylocation missing",
			      root.name);
	if (r == 0) {
		w->root = root.name;
		root.name = NULL;
	}
	ds_row_clear(&root);
	if (r < 0) {
		encroot_wrapped_clear(w);
		return r;
	}
	return 1;
}

void encroot_wrapped_clear(encroot_wrapped_t *w)
{
	free(w->root);
	free(w->keyformat);
	free(w->keylocation);
	memset(w, 0, sizeof(*w));
}

int encroot_recv_root_in_txn(cairn_store *st, int64_t id, const char *name,
			     const encroot_wrapped_t *w)
{
	int fmt = 0;
	if (crypt_keyblob_check(w->blob, CRYPT_KEYBLOB_LEN, &fmt, NULL) < 0 ||
	    crypt_keyformat_parse(w->keyformat) != fmt)
		return store_err(st, CAIRN_ECORRUPT, "%s: received wrapped key is malformed", name);
	uint8_t had[CRYPT_KEYBLOB_LEN];
	bool existed = keyblob_get(st, id, had) == 0;
	int r = encryption_schema_in_txn(st);
	if (r == 0 && existed && memcmp(had, w->blob, CRYPT_KEYBLOB_LEN))
		r = keep_earlier_in_txn(st, id, had);
	if (r == 0)
		r = keyblob_put_in_txn(st, id, w->blob);
	if (r == 0 && (r = catalog_prop_set(st->cat, id, "encryption", ENC_NAME)) == 0)
		r = catalog_prop_set(st->cat, id, "keyformat", w->keyformat);
	/* keylocation names a place on this host: the sender's means nothing
	 * here (and a hostile one could point at a FIFO), so a new root asks
	 * (prompt), as in zfs, and an existing one keeps the owner's. */
	if (r == 0 && !existed)
		r = catalog_prop_set(st->cat, id, "keylocation", "prompt");
	if (r < 0 && r != -EIO)
		store_err(st, r, "%s: %s", name, catalog_errmsg(st->cat));
	return r;
}

/* Whether the stream's wrapped key (want) holds the master keys of ds's
 * encryption root.  Only a real difference is -EINVAL, which the receive
 * takes for a refusal no resume can lift (and drops its partial state
 * for): a root key it cannot read, or a damaged one in the stream, is an
 * error of its own, and the state stays for a retry. */
static int key_material_check(cairn_store *st, const ds_row_t *ds, const ds_row_t *root,
			      const encroot_wrapped_t *want)
{
	uint8_t blob[CRYPT_KEYBLOB_LEN], have[CRYPT_KEYID_LEN], got[CRYPT_KEYID_LEN];
	int r = keyblob_get(st, root->id, blob);
	if (r == 0)
		r = crypt_keyblob_check(blob, sizeof(blob), NULL, have);
	if (r < 0)
		return store_err(st, r == -EIO ? r : CAIRN_ECORRUPT,
				 "%s: the key of encryption root %s cannot be read (%s)", ds->name,
				 root->name, r == -EIO ? "catalog error" : "missing or damaged");
	if (crypt_keyblob_check(want->blob, CRYPT_KEYBLOB_LEN, NULL, got) < 0)
		return store_err(st, CAIRN_ECORRUPT, "%s: the stream's wrapped key is damaged",
				 ds->name);
	if (memcmp(have, got, CRYPT_KEYID_LEN))
		return store_err(st, -EINVAL,
				 "%s: encrypted with other key material (encryption root %s) than "
				 "the stream's",
				 ds->name, root->name);
	return 0;
}

int encroot_recv_check(cairn_store *st, const ds_row_t *ds, const encroot_wrapped_t *want)
{
	ds_row_t root = {0};
	int r = encroot_find(st, ds, &root);
	if (r < 0)
		return r;
	if (!want && r == 1)
		r = store_err(st, -EINVAL,
			      "%s: cannot receive unencrypted data below encryption root %s",
			      ds->name, root.name);
	else if (want && r == 0)
		r = store_err(st, -EINVAL,
			      "%s: exists unencrypted; an encrypted (raw) stream cannot go into it",
			      ds->name);
	else if (want)
		r = key_material_check(st, ds, &root, want);
	else
		r = 0;
	ds_row_clear(&root);
	return r;
}
