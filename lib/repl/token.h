/* token.h - receive_resume_token: where an interrupted receive stopped.
 *
 * "2-" then hex of: u64 toguid (the stream's last snapshot of its top
 * dataset), u64 fromguid (the top's incremental source, 0 = full), u64
 * group (the sender's createtxg of the group in flight), u64 chunks of
 * that group already received, u32 stream flags (recursive,
 * intermediates), then the first 8 bytes of the SHA-256 of those 36 bytes
 * (so a mistyped or forged token is refused before anything is looked up).
 * The sender plans the same stream again and starts at that group.
 */
#ifndef CAIRN_TOKEN_H
#define CAIRN_TOKEN_H

#include "util.h"

typedef struct resume_token {
	uint64_t toguid, fromguid, group, skip;
	uint32_t flags;
} resume_token_t;

#define TOKEN_MAX 96

void token_encode(const resume_token_t *t, char out[TOKEN_MAX]);
/* 0 or CAIRN_ECORRUPT. */
int token_decode(const char *s, resume_token_t *t);

#endif
