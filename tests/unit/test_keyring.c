/* test_keyring.c - loaded keys in the kernel keyring: load, find, replace,
 * unload, expiry, and descriptions that keep stores and roots apart.  Runs
 * in a fresh anonymous session keyring, so nothing reaches the user's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <keyutils.h>

#include "crypt/keyring.h"
#include "unit.h"

static bool same(const crypt_keys_t *a, const crypt_keys_t *b)
{
	return !memcmp(a->data, b->data, CRYPT_KEY_LEN) && !memcmp(a->id, b->id, CRYPT_KEY_LEN) &&
	       !memcmp(a->seed, b->seed, CRYPT_KEY_LEN) &&
	       !memcmp(a->keyid, b->keyid, CRYPT_KEYID_LEN) &&
	       !memcmp(a->gear, b->gear, sizeof(a->gear));
}

int main(void)
{
	setenv("CAIRN_KEYRING", "session", 1);
	if (keyctl_join_session_keyring(NULL) < 0) {
		fprintf(stderr, "cannot join a session keyring: %s\n", strerror(errno));
		return 1;
	}
	char d1[KEYRING_DESC_MAX], d2[KEYRING_DESC_MAX], d3[KEYRING_DESC_MAX];
	keyring_describe(0x1122334455667788ull, 42, d1);
	keyring_describe(0x1122334455667788ull, 43, d2);
	keyring_describe(0x1122334455667789ull, 42, d3);
	CHECK(!strcmp(d1, "cairn:1122334455667788:000000000000002a"));
	CHECK(strcmp(d1, d2) && strcmp(d1, d3));

	crypt_keys_t *a, *b, *got = NULL;
	CHECK_EQ(crypt_keys_generate(&a), 0);
	CHECK_EQ(crypt_keys_generate(&b), 0);
	CHECK_EQ(keyring_find(d1, &got), -ENOKEY);
	CHECK(!keyring_present(d1));
	CHECK_EQ(keyring_load(d1, a, 0), 0);
	CHECK(keyring_present(d1));
	CHECK(!keyring_present(d2) && !keyring_present(d3));
	CHECK_EQ(keyring_find(d1, &got), 0);
	CHECK(got && same(a, got));
	crypt_keys_free(got);
	/* Loading again replaces: one key, the new payload. */
	CHECK_EQ(keyring_load(d1, b, 0), 0);
	CHECK_EQ(keyring_find(d1, &got), 0);
	CHECK(got && same(b, got));
	crypt_keys_free(got);
	CHECK_EQ(keyring_unload(d1), 0);
	CHECK_EQ(keyring_unload(d1), -ENOKEY);
	CHECK_EQ(keyring_find(d1, &got), -ENOKEY);
	/* A timeout: the kernel forgets the key. */
	CHECK_EQ(keyring_load(d2, a, 1), 0);
	CHECK(keyring_present(d2));
	sleep(2);
	CHECK(!keyring_present(d2));
	CHECK_EQ(keyring_find(d2, &got), -ENOKEY);
	/* A key of that description with a payload of the wrong size. */
	CHECK(add_key("user", d3, "short", 5, KEY_SPEC_SESSION_KEYRING) > 0);
	CHECK_EQ(keyring_find(d3, &got), CAIRN_ECORRUPT);
	crypt_keys_free(a);
	crypt_keys_free(b);
	UNIT_DONE();
}
