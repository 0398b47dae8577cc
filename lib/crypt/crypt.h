/* crypt.h - key material of an encryption root, and the primitives cairn
 * builds on it.  Everything here is OpenSSL 3 libcrypto; nothing is
 * home-made.
 *
 * Key hierarchy (docs/SECURITY.md):
 *   user key  (passphrase, or 32 raw bytes, or 64 hex digits)
 *     -> wrapping key: scrypt(passphrase, salt, N, r, p) for a passphrase,
 *        the 32 bytes themselves for hex and raw
 *     -> unwraps the master keys, generated at random once per root:
 *          data key    AES-256-GCM key of every blob of the root
 *          id key      HMAC-SHA256 key: chunk id = HMAC(id key, plain)
 *          chunker seed  HKDF-SHA256 expands it to the FastCDC gear table
 * change-key rewraps the master keys only; data never changes.
 *
 * Wrapped key blob ("key blob"), 172 bytes, integers little-endian:
 *    0  magic "CRNK"
 *    4  u8  version (1)
 *    5  u8  keyformat (enum crypt_keyformat)
 *    6  u8  kdf: 0 = none (hex/raw), 1 = scrypt
 *    7  u8  log2 of scrypt N (0 when kdf = 0)
 *    8  u32 scrypt r, 12 u32 scrypt p (0 when kdf = 0)
 *   16  salt[16] (random; zero when kdf = 0)
 *   32  key id[16] (random at creation, kept by change-key: names the
 *       key material, e.g. in the kernel keyring)
 *   48  nonce[12]
 *   60  AES-256-GCM ciphertext of data key | id key | chunker seed (96)
 *  156  GCM tag[16]
 * The additional authenticated data is bytes 0..60, so any edit of the
 * header (format, KDF parameters, salt, key id, nonce) fails the tag just
 * as a wrong key does.
 */
#ifndef CAIRN_CRYPT_H
#define CAIRN_CRYPT_H

#include "util.h"

#define CRYPT_KEY_LEN 32
#define CRYPT_NONCE_LEN 12
#define CRYPT_TAG_LEN 16
#define CRYPT_KEYID_LEN 16
#define CRYPT_KEYBLOB_LEN 172
#define CRYPT_MASTER_LEN (3 * CRYPT_KEY_LEN)
/* Longest passphrase accepted (zfs: 512). */
#define CRYPT_PASSPHRASE_MAX 512
#define CRYPT_PASSPHRASE_MIN 8

enum crypt_keyformat {
	CRYPT_KEYFORMAT_PASSPHRASE = 1,
	CRYPT_KEYFORMAT_HEX = 2,
	CRYPT_KEYFORMAT_RAW = 3,
};

/* The unwrapped master keys of one root, plus what is derived from them.
 * Owned by whoever made it; crypt_keys_free() wipes and frees, and closes
 * usefd. */
typedef struct crypt_keys {
	uint8_t data[CRYPT_KEY_LEN];
	uint8_t id[CRYPT_KEY_LEN];
	uint8_t seed[CRYPT_KEY_LEN];
	uint8_t keyid[CRYPT_KEYID_LEN];
	uint64_t gear[256];  /* FastCDC gear table from the seed */
	void *mac;           /* EVP_MAC_CTX keyed with id, duplicated per use */
	/* -1, or the locked file marking the key in use while this copy
	 * lives (encroot_keys: unload-key refuses meanwhile) */
	int usefd;
	int32_t usekey; /* the serial of the keyring key marked (0: none) */
} crypt_keys_t;

/* scrypt parameters written into new key blobs.  N = 2^17, r = 8, p = 1
 * (128 MiB, about half a second).  CAIRN_TEST_SCRYPT_LOGN (10..20) overrides
 * log2 N for one process (tests); the value used is recorded in the blob. */
#define CRYPT_SCRYPT_LOGN 17
#define CRYPT_SCRYPT_R 8
#define CRYPT_SCRYPT_P 1

/* Parses "passphrase", "hex", "raw".  Returns the enum value or
 * CAIRN_EBADPROP. */
int crypt_keyformat_parse(const char *s);
const char *crypt_keyformat_name(int fmt);

/* Checks user key material read for keyformat fmt and turns it into the
 * secret the KDF (or the wrap directly) takes: a passphrase of 8..512
 * bytes (one trailing newline dropped), 64 hex digits (trailing newline
 * dropped) or exactly 32 bytes.  out must hold CRYPT_PASSPHRASE_MAX bytes.
 * Returns 0 or CAIRN_EBADPROP (why says what is wrong). */
int crypt_secret_parse(int fmt, const uint8_t *in, size_t len, uint8_t *out, size_t *outlen,
		       const char **why);

/* Fresh random master keys (RAND_bytes) and a fresh key id.  *out is
 * malloc'd; free with crypt_keys_free.  Returns 0, -ENOMEM, -EIO. */
int crypt_keys_generate(crypt_keys_t **out);
/* Builds keys from the 96 master bytes + key id (derives gear, mac). */
int crypt_keys_from_master(const uint8_t master[CRYPT_MASTER_LEN],
			   const uint8_t keyid[CRYPT_KEYID_LEN], crypt_keys_t **out);
/* master bytes followed by key id (CRYPT_MASTER_LEN + CRYPT_KEYID_LEN),
 * the form kept in the kernel keyring. */
void crypt_keys_export(const crypt_keys_t *k, uint8_t out[CRYPT_MASTER_LEN + CRYPT_KEYID_LEN]);
void crypt_keys_free(crypt_keys_t *k);

/* Wraps k's master keys under the user secret (already parsed) with a
 * fresh salt and nonce: out[CRYPT_KEYBLOB_LEN].  Returns 0, -EIO, -ENOMEM. */
int crypt_wrap(const crypt_keys_t *k, int fmt, const uint8_t *secret, size_t slen,
	       uint8_t out[CRYPT_KEYBLOB_LEN]);
/* Unwraps a key blob.  Returns 0 (*out malloc'd), CAIRN_EBADKEY (wrong
 * secret or a blob edited after wrapping: GCM cannot tell them apart),
 * CAIRN_ECORRUPT (not a key blob: bad magic, version, lengths, KDF
 * parameters out of range), -ENOMEM, -EIO. */
int crypt_unwrap(const uint8_t *blob, size_t len, const uint8_t *secret, size_t slen,
		 crypt_keys_t **out);
/* Structure of a key blob without a key: 0 or CAIRN_ECORRUPT; *fmt and
 * keyid (may be NULL) filled on success. */
int crypt_keyblob_check(const uint8_t *blob, size_t len, int *fmt,
			uint8_t keyid[CRYPT_KEYID_LEN]);

/* Keyed chunk id: HMAC-SHA256(id key, data).  Thread safe. */
int crypt_chunk_id(const crypt_keys_t *k, const void *data, size_t len, digest_t *out);

/* AES-256-GCM with the data key.  seal: fresh random nonce written to
 * nonce, ciphertext to ct (may equal plain), tag to tag.  open: returns 0
 * or CAIRN_ECORRUPT when the tag does not verify (ct may equal plain).
 * Both -EIO on a library failure.  Thread safe. */
int crypt_seal(const crypt_keys_t *k, const uint8_t *aad, size_t aadlen, const uint8_t *plain,
	       size_t len, uint8_t *ct, uint8_t nonce[CRYPT_NONCE_LEN],
	       uint8_t tag[CRYPT_TAG_LEN]);
int crypt_open(const crypt_keys_t *k, const uint8_t *aad, size_t aadlen, const uint8_t *ct,
	       size_t len, const uint8_t nonce[CRYPT_NONCE_LEN], const uint8_t tag[CRYPT_TAG_LEN],
	       uint8_t *plain);

/* Fresh random nonce (what crypt_seal uses). */
int crypt_nonce(uint8_t nonce[CRYPT_NONCE_LEN]);

#endif
