/* token.h - receive_resume_token: where an interrupted receive stopped.
 *
 * "3-" then hex of: u64 toguid (the stream's last snapshot of its top
 * dataset), u64 fromguid (the top's incremental source, 0 = full), u64
 * group (the sender's createtxg of the group in flight), u64 chunks of
 * that group already received, u32 stream flags (STREAM_F_PLAN:
 * recursive, intermediates, raw, and skipped - send -R -s left datasets
 * out, so send -t plans with skip_missing; versions before it never set
 * that flag, and their tokens decode as before; any other bit, even
 * STREAM_F_RESUMED, makes the token invalid), u32 gsnaps (how many
 * snapshots of that group, in stream order, hold the chunks the token
 * skips: up to the one of the last chunk received), the SHA-256 of those
 * snapshots' identities (token_group_add), then the first 8 bytes of the
 * SHA-256 of
 * the 72 bytes before (so a mistyped or forged token is refused before
 * anything is looked up).
 *
 * "2-" is the same without gsnaps and the group digest (36 bytes, then 8
 * of check): tokens saved by earlier versions.  They decode with gsnaps
 * 0, and a token with gsnaps 0 encodes so, so every token has exactly one
 * spelling.  The sender plans the same stream again and starts at that
 * group; with gsnaps it first checks that the group still begins with
 * the snapshots the receiver saw, since chunks are skipped by position.
 */
#ifndef CAIRN_TOKEN_H
#define CAIRN_TOKEN_H

#include "util.h"

typedef struct resume_token {
	uint64_t toguid, fromguid, group, skip;
	uint32_t flags;
	/* The first gsnaps snapshots of the group in flight, as the receiver
	 * saw them (0: none, or not recorded, a "2-" token), and the SHA-256 of their
	 * identities in stream order (token_group_digest). */
	uint32_t gsnaps;
	uint8_t gdigest[DIGEST_LEN];
} resume_token_t;

#define TOKEN_MAX 176

void token_encode(const resume_token_t *t, char out[TOKEN_MAX]);
/* 0 or CAIRN_ECORRUPT. */
int token_decode(const char *s, resume_token_t *t);

/* A snapshot's identity in the group digest: its guid and the guid of its
 * incremental source (0 = full), as its SNAP record carries them; these
 * decide which chunks it sends, hence the positions of the group's
 * chunks.  Appended to ids (TOKEN_GROUP_ID_LEN bytes); 0 or -ENOMEM. */
#define TOKEN_GROUP_ID_LEN 16
int token_group_add(buf_t *ids, uint64_t guid, uint64_t fromguid);
/* The SHA-256 of the identities in ids (OpenSSL, via digest_of). */
void token_group_digest(const buf_t *ids, uint8_t out[DIGEST_LEN]);

#endif
