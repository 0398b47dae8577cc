/* encroot.h - encryption roots in the catalog, and finding their keys.
 *
 * A dataset is an encryption root when it has the local property
 * encryption=aes-256-gcm; every descendant below it (down to the next
 * root, of which there is none in cairn: a child cannot have its own)
 * is encrypted with the root's master keys.  The root also carries the
 * local properties keyformat and keylocation, and one row in the table
 *   cryptkey(dataset INTEGER PRIMARY KEY, keyblob BLOB NOT NULL)
 * holding its wrapped key blob (crypt.h).  The table and the store id
 * (meta key 'store_id', naming the store in keyring descriptions) are
 * created by the first encrypted create, so plain stores never change.
 */
#ifndef CAIRN_ENCROOT_H
#define CAIRN_ENCROOT_H

#include "crypt/crypt.h"
#include "store/store.h"

/* The encryption root of ds: 1 and *root filled (caller clears) when ds
 * is encrypted, 0 when not, or a negative error. */
int encroot_find(cairn_store *st, const ds_row_t *ds, ds_row_t *root);

/* The keys ds is encrypted with.  *out is NULL for a plain dataset;
 * otherwise malloc'd (crypt_keys_free), and the root's key counts as in
 * use until then (unload-key refuses).  The key comes from the kernel
 * keyring, or, when not loaded there and the root's keylocation is a
 * file, from that file for this call only.  CAIRN_ENOKEY when neither:
 * errdetail names the encryption root. */
int encroot_keys(cairn_store *st, const ds_row_t *ds, crypt_keys_t **out);

/* While the keys encroot_keys returned live, the root's key counts as in
 * use (encroot_key_unload refuses).  This lets go of that mark early, for
 * a holder that checks the keyring itself before each use (the mount). */
void encroot_keys_unmark(crypt_keys_t *k);

/* unload-key of root (desc: encroot_desc): -ENOKEY when not loaded,
 * -EBUSY while a command holds the key (encroot_keys; errdetail says so,
 * and which process holds the lock when this user may see it), else
 * keyring_unload's answer. */
int encroot_key_unload(cairn_store *st, const ds_row_t *root, const char *desc);

/* destroy of root: the key must not be in use (zfs: "dataset is busy").
 * Locks root's whole range of the store's lock file through *fd, opened
 * by the first call (*fd < 0): that lock keeps every command from taking
 * root's key until the caller closes *fd (after the key left the
 * keyring).  One descriptor holds the claims of all the roots a destroy
 * removes (one each ran out of descriptors with many roots, t1377).  0,
 * -EBUSY while a command holds the key (errdetail: "dataset is busy",
 * and who holds the lock, as for encroot_key_unload), or another -errno
 * (errdetail names the lock file and why) when the lock file cannot be
 * opened for writing or locked: then nothing is claimed, and the destroy
 * must not go on. */
int encroot_key_claim(cairn_store *st, const ds_row_t *root, int *fd);

/* Same as encroot_keys, given the dataset's name. */
int encroot_keys_by_name(cairn_store *st, const char *name, crypt_keys_t **out);

/* Inside the write transaction of cairn_dataset_create: checks the
 * encryption properties of the new dataset id against its parent and,
 * for a new root, generates master keys, wraps them under the secret
 * (or the keylocation file when secret is NULL) and stores the key blob.
 * *loaded gets the new keys (caller loads them into the keyring after
 * the commit, then frees them); NULL when no root was made.  With check,
 * only the checks that need no key material: nothing is read or made. */
int encroot_create_in_txn(cairn_store *st, int64_t id, const char *name, int64_t parent,
			  const cairn_prop *props, size_t nprops, const uint8_t *secret,
			  size_t slen, bool check, crypt_keys_t **loaded);

/* What encroot_keyring_add loaded, so a failed commit can take it back. */
typedef struct encroot_loaded {
	char desc[64]; /* KEYRING_DESC_MAX */
} encroot_loaded_t;

/* Loads new keys of root `name` into the keyring (create, inside its
 * transaction); loaded (may be NULL) remembers which key that was. */
int encroot_keyring_add(cairn_store *st, const char *name, const crypt_keys_t *k,
			unsigned timeout_s, encroot_loaded_t *loaded);
/* Unloads that key again (best effort: the create did not commit). */
void encroot_keyring_undo(const encroot_loaded_t *loaded);

/* Validates keyformat/keylocation/encryption values for
 * dataset_prop_normalize; 1 when prop is one of them (then *norm is set
 * or an error returned), 0 when not ours. */
int encroot_prop_normalize(cairn_store *st, const char *prop, const char *value, char **norm);

/* The read-only properties encryptionroot and keystatus, and the
 * defaults of encryption, keyformat, keylocation.  1 when prop was ours
 * and *value set, 0 when not ours, <0 error. */
int encroot_prop(cairn_store *st, const ds_row_t *ds, const char *prop, char **value,
		 char **source);

/* Deletes a destroyed dataset's key blob (inside the write transaction). */
int encroot_forget_in_txn(cairn_store *st, int64_t id);

/* Refuses `set` of properties only change-key may change, and of
 * keylocation anywhere but on an encryption root. */
int encroot_set_check(cairn_store *st, const ds_row_t *ds, const char *prop);

/* The keys of every encryption root that has one available (keyring or
 * file keylocation), for verify. complete: every root's key is there. */
typedef struct encroot_keyset {
	crypt_keys_t **k;
	size_t n;
	bool complete;
	/* marking: usefd marks the set's keys in use, one fd for all (a
	 * zeroed set, never loaded, has none: usefd 0 is not ours) */
	bool marking;
	int usefd;
} encroot_keyset_t;
int encroot_keyset_load(cairn_store *st, encroot_keyset_t *ks);
void encroot_keyset_free(encroot_keyset_t *ks);

/* Reads and checks chunk d for verify.  A plain blob: chunkstore_get.  An
 * encrypted one: header and ciphertext checksum always (no key needed);
 * then the GCM tag and keyed id under the key of a root in ks that opens
 * it.  When no key opens it: CAIRN_ECORRUPT if ks is complete (someone
 * forged a blob with a valid checksum), else 0 (checked without key).
 * On a bucket store a chunk found damaged is read once more first.
 * Returns 0, -ENOENT, CAIRN_ECORRUPT, -EIO. */
int encroot_verify_chunk(chunkstore_t *cs, const encroot_keyset_t *ks, const digest_t *d,
			 buf_t *out);

/* The keys of the dataset snapshot snap_id belongs to (NULL: plain). */
int encroot_keys_for_snapshot(cairn_store *st, int64_t snap_id, crypt_keys_t **out);

/* A rename may not move a dataset to another encryption root (its
 * chunks are sealed with its root's keys): -EINVAL naming both, else 0.
 * An encryption root itself may move anywhere. */
int encroot_rename_check(cairn_store *st, const ds_row_t *ds, int64_t new_parent, const char *to);

/* Raw send: what a stream carries so the receiver can hold the dataset
 * encrypted: the root's wrapped key blob and its keyformat/keylocation.
 * Returns 1 and fills them for an encrypted ds (root, malloc'd strings),
 * 0 for a plain one, or a negative error. */
typedef struct encroot_wrapped {
	char *root;
	char *keyformat;
	char *keylocation;
	uint8_t blob[CRYPT_KEYBLOB_LEN];
} encroot_wrapped_t;
int encroot_wrapped_get(cairn_store *st, const ds_row_t *ds, encroot_wrapped_t *w);
void encroot_wrapped_clear(encroot_wrapped_t *w);

/* Raw receive, inside its write transaction: makes dataset id an
 * encryption root holding the received wrapped key (checked for
 * structure; it stays unavailable until load-key).  An existing root's
 * different wrapping is kept as an earlier one, and its keylocation
 * stays; a new root's keylocation is prompt. */
int encroot_recv_root_in_txn(cairn_store *st, int64_t id, const char *name,
			     const encroot_wrapped_t *w);

/* Raw receive: checks that ds is encrypted with the key material of want
 * (same key id), or is plain when want is NULL.  -EINVAL naming the
 * dataset and roots otherwise. */
int encroot_recv_check(cairn_store *st, const ds_row_t *ds, const encroot_wrapped_t *want);

/* While receiving, creating a dataset below an encryption root does not
 * need that root's key (nothing is written with it).  Per thread. */
void encroot_receiving(bool on);

/* True for encryption, keyformat and keylocation: properties a stream
 * carries only through its CRYPTKEY records. */
bool encroot_prop_is_key(const char *prop);

/* Internals shared with keys.c. */
int encroot_desc(cairn_store *st, const ds_row_t *root, char desc[64]);

/* The name an earlier build gave root's key (by its guid), where no verb
 * of this build looks: 0, or -errno / -EEXIST (no such name of its own).
 * unload-key and destroy remove a key found there too. */
int encroot_legacy_desc(cairn_store *st, const ds_row_t *root, char desc[64]);
/* earlier: try the wrappings a raw receive replaced instead of the
 * current one (load-key --previous). */
int encroot_unwrap(cairn_store *st, const ds_row_t *root, const char *loc, const uint8_t *secret,
		   size_t slen, bool earlier, crypt_keys_t **out);
int encroot_rewrap_in_txn(cairn_store *st, const ds_row_t *root, const crypt_keys_t *k, int fmt,
			  const char *loc, const uint8_t *secret, size_t slen);
/* How many earlier wrappings root keeps (load-key --previous tries them). */
int encroot_earlier_count(cairn_store *st, const ds_row_t *root, size_t *n);
/* 1 when the keyring holds root's key for its current key material (a
 * key of another key id under its description is stale: 0), 0 when not,
 * or a negative error. */
int encroot_key_loaded(cairn_store *st, const ds_row_t *root);
/* 1 when ds itself is an encryption root. */
int encroot_is_root(cairn_store *st, const ds_row_t *ds);

#endif
