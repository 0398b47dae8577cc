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

void keyring_describe(uint64_t store_id, uint64_t root_guid, char out[KEYRING_DESC_MAX])
{
	snprintf(out, KEYRING_DESC_MAX, "cairn:%016llx:%016llx", (unsigned long long)store_id,
		 (unsigned long long)root_guid);
}

int keyring_load(const char *desc, const crypt_keys_t *k, unsigned timeout_s)
{
	uint8_t payload[PAYLOAD_LEN];
	crypt_keys_export(k, payload);
	/* add_key replaces the payload of an existing key of that description
	 * in the same keyring, so loading twice leaves one key. */
	key_serial_t id = add_key("user", desc, payload, sizeof(payload), ring());
	int err = id < 0 ? -errno : 0;
	OPENSSL_cleanse(payload, sizeof(payload));
	if (err)
		return err;
	if (keyctl_set_timeout(id, timeout_s) < 0)
		return -errno;
	return 0;
}

static key_serial_t search(const char *desc)
{
	long id = keyctl_search(ring(), "user", desc, 0);
	if (id < 0)
		return errno == EKEYEXPIRED || errno == EKEYREVOKED ? -ENOKEY : -errno;
	return (key_serial_t)id;
}

int keyring_find(const char *desc, crypt_keys_t **out)
{
	*out = NULL;
	key_serial_t id = search(desc);
	if (id < 0)
		return id;
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
	/* Invalidate, not unlink: the key is gone from every keyring that
	 * linked it, at once. */
	return keyctl_invalidate(id) < 0 ? -errno : 0;
}
