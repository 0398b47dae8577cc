/* token.c - see token.h. */
#include "repl/token.h"

#include "repl/stream.h"

#include <stdio.h>

#define BODY_V2 36		     /* toguid, fromguid, group, skip, flags */
#define BODY_V3 (BODY_V2 + 4 + DIGEST_LEN) /* + gsnaps, group digest */
#define CHECK 8
#define RAW_MAX (BODY_V3 + CHECK)

/* The raw bytes of t; their length (body and check) is returned.  A
 * token without a group digest keeps the "2-" layout. */
static size_t pack(const resume_token_t *t, uint8_t out[RAW_MAX])
{
	put_u64(out, t->toguid);
	put_u64(out + 8, t->fromguid);
	put_u64(out + 16, t->group);
	put_u64(out + 24, t->skip);
	put_u32(out + 32, t->flags);
	size_t body = BODY_V2;
	if (t->gsnaps) {
		put_u32(out + BODY_V2, t->gsnaps);
		memcpy(out + BODY_V2 + 4, t->gdigest, DIGEST_LEN);
		body = BODY_V3;
	}
	digest_t d;
	digest_of(out, body, &d);
	memcpy(out + body, d.b, CHECK);
	return body + CHECK;
}

void token_encode(const resume_token_t *t, char out[TOKEN_MAX])
{
	uint8_t raw[RAW_MAX];
	size_t len = pack(t, raw);
	int n = snprintf(out, TOKEN_MAX, "%s", t->gsnaps ? "3-" : "2-");
	for (size_t i = 0; i < len; i++)
		n += snprintf(out + n, TOKEN_MAX - n, "%02x", raw[i]);
}

static int unhex(const char *s, uint8_t *raw, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned v;
		char hex[3] = {s[2 * i], s[2 * i + 1], 0};
		/* (strchr finds the NUL: test for it first) */
		if (!hex[0] || !hex[1] || !strchr("0123456789abcdef", hex[0]) ||
		    !strchr("0123456789abcdef", hex[1]) || sscanf(hex, "%2x", &v) != 1)
			return CAIRN_ECORRUPT;
		raw[i] = v;
	}
	return 0;
}

int token_decode(const char *s, resume_token_t *t)
{
	size_t len = !strncmp(s, "2-", 2) ? BODY_V2 + CHECK
		     : !strncmp(s, "3-", 2) ? BODY_V3 + CHECK
					    : 0;
	uint8_t raw[RAW_MAX];
	if (!len || strlen(s) != 2 + 2 * len || unhex(s + 2, raw, len) < 0)
		return CAIRN_ECORRUPT;
	memset(t, 0, sizeof(*t));
	t->toguid = get_u64(raw);
	t->fromguid = get_u64(raw + 8);
	t->group = get_u64(raw + 16);
	t->skip = get_u64(raw + 24);
	t->flags = get_u32(raw + 32);
	/* only the flags that plan a stream: recv never saves another */
	if (t->flags & ~STREAM_F_PLAN)
		return CAIRN_ECORRUPT;
	if (len == BODY_V3 + CHECK) {
		t->gsnaps = get_u32(raw + BODY_V2);
		memcpy(t->gdigest, raw + BODY_V2 + 4, DIGEST_LEN);
		/* gsnaps 0 is spelt "2-": one spelling per token */
		if (!t->gsnaps)
			return CAIRN_ECORRUPT;
	}
	uint8_t check[RAW_MAX];
	return pack(t, check) != len || memcmp(check, raw, len) ? CAIRN_ECORRUPT : 0;
}

int token_group_add(buf_t *ids, uint64_t guid, uint64_t fromguid)
{
	int r = buf_put_u64(ids, guid);
	return r < 0 ? r : buf_put_u64(ids, fromguid);
}

void token_group_digest(const buf_t *ids, uint8_t out[DIGEST_LEN])
{
	digest_t d;
	digest_of(ids->len ? ids->data : (const uint8_t *)"", ids->len, &d);
	memcpy(out, d.b, DIGEST_LEN);
}
