/* keyring.h - loaded encryption keys in the kernel key retention service.
 *
 * cairn has no daemon, so a loaded key lives where the kernel keeps such
 * secrets (as for fscrypt and ecryptfs): a key of type "user" in the
 * caller's user keyring, or, with CAIRN_KEYRING=session in the
 * environment, in the session keyring (tests run under `keyctl session -`
 * so their keys vanish with them).  Every later command finds it there;
 * unload removes it.  The description names the store and the encryption
 * root, "cairn:<store id>:<root id>" (16 hex digits each; the root's
 * catalog row id, which a rename keeps), so keys of two stores or two
 * roots never collide.  Not the root's guid: two roots of one store can
 * share it (a raw -R stream keeps the sender's guids, so a copy received
 * into the sending store, or received twice, has the original's), and
 * their keys must load and unload one by one.  The payload is the unwrapped
 * master keys and key id (crypt_keys_export).
 */
#ifndef CAIRN_KEYRING_H
#define CAIRN_KEYRING_H

#include <stddef.h>
#include <stdint.h>

#include "crypt/crypt.h"

#define KEYRING_DESC_MAX 64

/* The serial of the key under desc, as keyring_find finds it (also
 * through a keyring linked from the caller's): a positive number, or
 * -ENOKEY, -errno.  Two processes use the same key when it is equal. */
int32_t keyring_key_serial(const char *desc);

/* keyring_find, keyring_unload of the key of that serial (and no other
 * the description names by now): -ENOKEY once it is invalidated. */
int keyring_find_serial(int32_t serial, crypt_keys_t **out);
int keyring_unload_serial(int32_t serial);

/* Writes the description of a root's key into out[KEYRING_DESC_MAX]. */
void keyring_describe(uint64_t store_id, uint64_t root_id, char out[KEYRING_DESC_MAX]);

/* Adds (or replaces) the key under desc; timeout_s > 0 makes the kernel
 * forget it after that many seconds.  Returns 0 or a negative errno; on
 * an error the keyring is as it was (a new key is removed again, a
 * replaced one gets its old payload back). */
int keyring_load(const char *desc, const crypt_keys_t *k, unsigned timeout_s);

/* Finds the key under desc.  Returns 0 (*out malloc'd, crypt_keys_free),
 * -ENOKEY when no such key is loaded (also when it expired or was
 * revoked), CAIRN_ECORRUPT for a payload of the wrong size, or another
 * negative errno. */
int keyring_find(const char *desc, crypt_keys_t **out);

/* True when a key is loaded under desc. */
int keyring_present(const char *desc);

/* Removes the key under desc.  Returns 0, -ENOKEY (not loaded), or a
 * negative errno. */
int keyring_unload(const char *desc);

#endif
