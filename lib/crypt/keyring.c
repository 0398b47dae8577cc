/* keyring.c - see keyring.h.  libkeyutils only. */
#include "crypt/keyring.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <keyutils.h>
#include <openssl/crypto.h>

#include "cairn.h"

#define PAYLOAD_LEN (CRYPT_MASTER_LEN + CRYPT_KEYID_LEN)

static key_serial_t ring(void)
{
	const char *e = getenv("CAIRN_KEYRING");
	return e && !strcmp(e, "session") ? KEY_SPEC_SESSION_KEYRING : KEY_SPEC_USER_KEYRING;
}

void keyring_describe(uint64_t store_id, uint64_t root_id, char out[KEYRING_DESC_MAX])
{
	snprintf(out, KEYRING_DESC_MAX, "cairn:%016llx:%016llx", (unsigned long long)store_id,
		 (unsigned long long)root_id);
}

static key_serial_t search(const char *desc);

int keyring_load(const char *desc, const crypt_keys_t *k, unsigned timeout_s)
{
	/* A key already under desc is replaced in place by add_key; its
	 * payload is kept here so a failure after add_key can put it back. */
	void *old = NULL;
	long oldlen = -1;
	key_serial_t had = search(desc);
	if (had >= 0)
		oldlen = keyctl_read_alloc(had, &old);
	uint8_t payload[PAYLOAD_LEN];
	crypt_keys_export(k, payload);
	/* add_key replaces the payload of an existing key of that description
	 * in the same keyring, so loading twice leaves one key. */
	key_serial_t id = add_key("user", desc, payload, sizeof(payload), ring());
	int err = id < 0 ? -errno : 0;
	OPENSSL_cleanse(payload, sizeof(payload));
	if (!err && keyctl_set_timeout(id, timeout_s) < 0) {
		err = -errno;
		/* The error must leave the keyring as it was: a key reported
		 * as not loaded must not stay loaded (without the timeout the
		 * caller asked for, too).  A key that was there gets its old
		 * payload back; a new one goes. */
		if (id == had && oldlen >= 0)
			keyctl_update(id, old, oldlen);
		else if (keyctl_invalidate(id) < 0)
			keyctl_unlink(id, ring());
	}
	if (old) {
		OPENSSL_cleanse(old, oldlen > 0 ? (size_t)oldlen : 0);
		free(old);
	}
	return err;
}

static key_serial_t search(const char *desc)
{
	long id = keyctl_search(ring(), "user", desc, 0);
	if (id < 0)
		return errno == EKEYEXPIRED || errno == EKEYREVOKED ? -ENOKEY : -errno;
	return (key_serial_t)id;
}

int32_t keyring_key_serial(const char *desc)
{
	return search(desc);
}

int keyring_find(const char *desc, crypt_keys_t **out)
{
	*out = NULL;
	key_serial_t id = search(desc);
	if (id < 0)
		return id;
	return keyring_find_serial(id, out);
}

int keyring_find_serial(int32_t id, crypt_keys_t **out)
{
	*out = NULL;
	void *p = NULL;
	long n = keyctl_read_alloc(id, &p);
	if (n < 0)
		return errno == EKEYEXPIRED || errno == EKEYREVOKED ? -ENOKEY : -errno;
	int r = n == PAYLOAD_LEN ? crypt_keys_from_master(p, (uint8_t *)p + CRYPT_MASTER_LEN, out)
				 : CAIRN_ECORRUPT;
	OPENSSL_cleanse(p, n);
	free(p);
	return r;
}

int keyring_present(const char *desc)
{
	return search(desc) >= 0;
}

int keyring_unload(const char *desc)
{
	key_serial_t id = search(desc);
	if (id < 0)
		return id;
	return keyring_unload_serial(id);
}

int keyring_unload_serial(int32_t id)
{
	/* Invalidate, not unlink: the key is gone from every keyring that
	 * linked it, at once. */
	if (keyctl_invalidate(id) == 0)
		return 0;
	return errno == EKEYEXPIRED || errno == EKEYREVOKED ? -ENOKEY : -errno;
}
