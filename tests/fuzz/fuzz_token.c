/* fuzz_token.c - libFuzzer target for the receive resume token decoder.
 *
 * A resume token comes from the user (recv -t, send -t): untrusted text.
 * The input, NUL-terminated, goes to token_decode.  Whatever it accepts
 * must encode back to exactly the same text (the format has one spelling:
 * lowercase hex, fixed length).  Then the first 36 input bytes are taken as
 * a token body in the token's own order (toguid, fromguid, group, skip,
 * flags: every field, so a field the codec drops shows), the next 4 and
 * 32 (when there) as its group count and digest ("3-" tokens; a count of
 * 0 makes a "2-" one), encoded (so the checksum is right), and must
 * decode to the same fields; one flipped hex digit in that encoding must
 * be refused.  Flags outside STREAM_F_PLAN make a token invalid: such a
 * body must be refused whole.
 */
#include <stdlib.h>
#include <string.h>

#include "repl/stream.h"
#include "repl/token.h"

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	resume_token_t t;
	if (token_decode(s, &t) == 0) {
		char again[TOKEN_MAX];
		token_encode(&t, again);
		if (strcmp(again, s) != 0)
			abort();
	}
	free(s);

	uint8_t body[36] = {0};
	memcpy(body, data, size < sizeof(body) ? size : sizeof(body));
	resume_token_t in = {.toguid = le64(body), .fromguid = le64(body + 8),
			     .group = le64(body + 16), .skip = le64(body + 24),
			     .flags = (uint32_t)body[32] | (uint32_t)body[33] << 8 |
				      (uint32_t)body[34] << 16 | (uint32_t)body[35] << 24};
	/* a token with flags outside STREAM_F_PLAN is refused; encoded
	 * tokens keep the rest */
	bool bad_flags = in.flags & ~STREAM_F_PLAN;
	uint8_t group[4 + sizeof(in.gdigest)] = {0};
	if (size > sizeof(body))
		memcpy(group, data + sizeof(body), MIN(size - sizeof(body), sizeof(group)));
	in.gsnaps = (uint32_t)group[0] | (uint32_t)group[1] << 8 | (uint32_t)group[2] << 16 |
		    (uint32_t)group[3] << 24;
	if (in.gsnaps) /* without a count, no digest is kept ("2-") */
		memcpy(in.gdigest, group + 4, sizeof(in.gdigest));
	char enc[TOKEN_MAX];
	token_encode(&in, enc);
	resume_token_t out;
	if (bad_flags) {
		if (token_decode(enc, &out) == 0)
			abort();
		return 0;
	}
	if (token_decode(enc, &out) != 0 || out.toguid != in.toguid ||
	    out.fromguid != in.fromguid || out.group != in.group || out.skip != in.skip ||
	    out.flags != in.flags ||
	    out.gsnaps != in.gsnaps || memcmp(out.gdigest, in.gdigest, sizeof(in.gdigest)))
		abort();
	size_t n = strlen(enc);
	size_t pos = 2 + (size ? data[size - 1] : 0) % (n - 2);
	enc[pos] = enc[pos] == '0' ? '1' : '0';
	if (token_decode(enc, &out) == 0)
		abort();
	return 0;
}
