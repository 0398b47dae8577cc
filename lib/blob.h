/* blob.h - the on-disk format of one chunk file.
 *
 *   0  magic "CRNB"
 *   4  u8  format version (1)
 *   5  u8  flags: bit 0 = payload is zstd-compressed; other bits must be 0
 *   6  u16 reserved, 0
 *   8  u32 plain length   (<= CHUNK_MAX_PLAIN)
 *  12  u32 payload length (== file length - BLOB_HEADER_LEN)
 *  16  u64 XXH3-64 of the payload
 *  24  payload
 * All integers little-endian.  The payload is compressed only when that
 * makes it smaller.  The checksum lets verify find a damaged file without
 * decompressing; the SHA-256 of the plain bytes (the file's name) is the
 * real identity and is always checked on read.
 */
#ifndef CAIRN_BLOB_H
#define CAIRN_BLOB_H

#include "util.h"

#define BLOB_HEADER_LEN 24
#define BLOB_FLAG_ZSTD 0x01

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

#endif
