/* token.h - receive_resume_token: where an interrupted receive stopped.
 *
 * "1-" then hex of: u64 toguid, u64 fromguid (0 = full), u64 chunks
 * already received, u32 stream flags, then the first 8 bytes of the
 * SHA-256 of those 28 bytes (so a mistyped or forged token is refused
 * before anything is looked up).
 */
#ifndef CAIRN_TOKEN_H
#define CAIRN_TOKEN_H

#include "util.h"

typedef struct resume_token {
	uint64_t toguid, fromguid, skip;
	uint32_t flags;
} resume_token_t;

#define TOKEN_MAX 80

void token_encode(const resume_token_t *t, char out[TOKEN_MAX]);
/* 0 or CAIRN_ECORRUPT. */
int token_decode(const char *s, resume_token_t *t);

#endif
