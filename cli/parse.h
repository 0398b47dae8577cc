/* parse.h - the command line's one parser for numbers and durations.
 *
 * Every numeric option goes through here so that all of them refuse the
 * same things: an empty string, signs, leading or trailing spaces, junk
 * after the number, and values that overflow or leave their range.  No
 * strtol() quirks (whitespace skipping, "+5", wrapping) reach a verb.
 */
#ifndef CAIRN_CLI_PARSE_H
#define CAIRN_CLI_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Largest --keep-within and similar duration: 1000 years, in seconds. */
#define PARSE_DURATION_MAX (1000LL * 365 * 86400)

/* Decimal digits only, min <= value <= max.  0, -EINVAL (not a number),
 * or -ERANGE (a number outside min..max, overflow included). */
int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Like parse_uint, with an optional binary suffix K or M (x1024,
 * x1048576), range-checked after scaling. */
int parse_scaled_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* A duration: one or more <digits><unit> terms, units s, min, h, d, w,
 * m (30 days) and y (365 days), e.g. "30d", "1y6m", "2w1d12h".  The sum
 * must be 1..max seconds.  0, -EINVAL (bad syntax, or zero) or -ERANGE. */
int parse_duration(const char *s, int64_t max, int64_t *secs);

#endif
