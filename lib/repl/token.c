/* token.c - see token.h. */
#include "repl/token.h"

#include <stdio.h>

#define TOKEN_BODY 36

static void pack(const resume_token_t *t, uint8_t out[TOKEN_BODY + 8])
{
	put_u64(out, t->toguid);
	put_u64(out + 8, t->fromguid);
	put_u64(out + 16, t->group);
	put_u64(out + 24, t->skip);
	put_u32(out + 32, t->flags);
	digest_t d;
	digest_of(out, TOKEN_BODY, &d);
	memcpy(out + TOKEN_BODY, d.b, 8);
}

void token_encode(const resume_token_t *t, char out[TOKEN_MAX])
{
	uint8_t raw[TOKEN_BODY + 8];
	pack(t, raw);
	int n = snprintf(out, TOKEN_MAX, "2-");
	for (size_t i = 0; i < sizeof(raw); i++)
		n += snprintf(out + n, TOKEN_MAX - n, "%02x", raw[i]);
}

int token_decode(const char *s, resume_token_t *t)
{
	uint8_t raw[TOKEN_BODY + 8];
	if (strncmp(s, "2-", 2) || strlen(s) != 2 + 2 * sizeof(raw))
		return CAIRN_ECORRUPT;
	for (size_t i = 0; i < sizeof(raw); i++) {
		unsigned v;
		char hex[3] = {s[2 + 2 * i], s[3 + 2 * i], 0};
		if (sscanf(hex, "%2x", &v) != 1 || !strchr("0123456789abcdef", hex[0]) ||
		    !strchr("0123456789abcdef", hex[1]))
			return CAIRN_ECORRUPT;
		raw[i] = v;
	}
	t->toguid = get_u64(raw);
	t->fromguid = get_u64(raw + 8);
	t->group = get_u64(raw + 16);
	t->skip = get_u64(raw + 24);
	t->flags = get_u32(raw + 32);
	uint8_t check[TOKEN_BODY + 8];
	pack(t, check);
	return memcmp(check, raw, sizeof(raw)) ? CAIRN_ECORRUPT : 0;
}
