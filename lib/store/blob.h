/* blob.h - the on-disk format of one chunk file.
 *
 *   0  magic "CRNB"
 *   4  u8  format version (1, or 2 for an encrypted blob)
 *   5  u8  flags: bit 0 = payload is zstd-compressed; bit 1 = encrypted
 *          (version 2 only); other bits must be 0
 *   6  u16 reserved, 0
 *   8  u32 plain length   (<= CHUNK_MAX_PLAIN)
 *  12  u32 payload length (== file length - BLOB_HEADER_LEN)
 *  16  u64 XXH3-64 of the payload
 *  24  payload
 * All integers little-endian.  The payload is compressed only when that
 * makes it smaller.  The checksum lets verify find a damaged file without
 * decompressing; the SHA-256 of the plain bytes (the file's name) is the
 * real identity and is always checked on read.
 *
 * Version 2, encrypted (flag bit 1), for datasets under an encryption root:
 * the payload is nonce[12] | AES-256-GCM(data key, compressed-or-plain
 * bytes) | tag[16]; the additional authenticated data is header bytes
 * 0..16 (everything but the checksum).  The checksum of version 2 is
 * XXH3-64 of the payload seeded with XXH3-64 of header bytes 0..16, so
 * it vouches for the lengths too.  The
 * compression rule is the same, applied before encryption.  The file's
 * name is then HMAC-SHA256(id key, plain) instead of SHA-256(plain).
 * Without the key, blob_check still validates the structure and the
 * checksum of the ciphertext.  Plain blobs keep version 1.
 */
#ifndef CAIRN_BLOB_H
#define CAIRN_BLOB_H

#include "crypt/crypt.h"
#include "util.h"

#define BLOB_HEADER_LEN 24
#define BLOB_FLAG_ZSTD 0x01
#define BLOB_FLAG_ENCRYPTED 0x02
/* Bytes an encrypted payload adds: nonce and tag. */
#define BLOB_CRYPT_OVERHEAD (CRYPT_NONCE_LEN + CRYPT_TAG_LEN)

/* Encodes plain[0..len) into out (replacing its contents) at zstd level
 * `level` (0 = store uncompressed; 1..19).  Returns 0, -EINVAL (len >
 * CHUNK_MAX_PLAIN), -ENOMEM. */
int blob_encode(const void *plain, size_t len, int level, buf_t *out);

/* Checks the header and payload checksum of blob[0..len) without
 * decompressing.  Returns 0 or CAIRN_ECORRUPT.  *plain_len gets the
 * declared plain length when not NULL. */
int blob_check(const void *blob, size_t len, uint32_t *plain_len);

/* Decodes blob[0..len) into out (replacing its contents).  Checks the
 * header, the checksum and the decompressed length; if expect is not NULL
 * also checks SHA-256(plain) == *expect.  Never allocates more than the
 * declared plain length, and rejects declared lengths over CHUNK_MAX_PLAIN
 * before allocating.  Returns 0, CAIRN_ECORRUPT, -ENOMEM. */
int blob_decode(const void *blob, size_t len, const digest_t *expect, buf_t *out);

/* Encrypting blob_encode: version 2, flag encrypted, under k's data key
 * with a fresh random nonce.  Returns 0, -EINVAL, -ENOMEM, -EIO. */
int blob_encode_sealed(const crypt_keys_t *k, const void *plain, size_t len, int level,
		       buf_t *out);

/* blob_decode with a key.  k NULL: as blob_decode, and an encrypted blob
 * gives CAIRN_ENOKEY.  k set: the blob must be encrypted (a plain blob is
 * CAIRN_ECORRUPT: every chunk of an encryption root is), its GCM tag must
 * verify and expect (when not NULL) is checked against HMAC(id key, plain).
 * A failing tag is CAIRN_ECORRUPT. */
int blob_decode_key(const crypt_keys_t *k, const void *blob, size_t len, const digest_t *expect,
		    buf_t *out);
/* blob_decode_key that also says whether k's GCM tag authenticated the
 * blob (*authentic), even when the checks after it (decompression, the
 * id) fail: a blob only authenticates under its own root's key, so a
 * failure after that is damage, whatever other keys are missing. */
int blob_decode_key_auth(const crypt_keys_t *k, const void *blob, size_t len,
			 const digest_t *expect, buf_t *out, bool *authentic);

/* True when blob[0..len) has a header that says encrypted (no other
 * check). */
bool blob_is_encrypted(const void *blob, size_t len);

#endif
