/* fuzz_parse.c - libFuzzer target for the command line's number and
 * duration parser (cli/parse.c, compiled in).
 *
 * The input, NUL-terminated, goes to parse_uint, parse_scaled_uint and
 * parse_duration with a few ranges.  None may crash or overflow (run
 * under UBSan by `make asan`), and whatever they accept is checked against
 * a reference computed in 128-bit arithmetic: digits only (plus K/M, or
 * the duration units), no sign or space, and a value inside the range.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/parse.c"

/* Reference value of a digit run, saturated far above 64 bits. */
static unsigned __int128 ref_digits(const char **p)
{
	unsigned __int128 v = 0;
	for (; **p >= '0' && **p <= '9'; (*p)++)
		if (v < ((unsigned __int128)1 << 100))
			v = v * 10 + (unsigned)(**p - '0');
	return v;
}

static void check_uint(const char *s, uint64_t min, uint64_t max)
{
	uint64_t v = 0;
	int r = parse_uint(s, min, max, &v);
	const char *p = s;
	unsigned __int128 ref = ref_digits(&p);
	bool syntax = p != s && !*p;
	if (r == 0 && (!syntax || ref != v || v < min || v > max))
		abort();
	if (r == -ERANGE && (!syntax || (ref >= min && ref <= max)))
		abort();
	if (r == -EINVAL && syntax)
		abort();
	if (r != 0 && r != -EINVAL && r != -ERANGE)
		abort();
}

static void check_scaled(const char *s, uint64_t min, uint64_t max)
{
	uint64_t v = 0;
	if (parse_scaled_uint(s, min, max, &v) != 0)
		return;
	const char *p = s;
	unsigned __int128 ref = ref_digits(&p);
	if (*p == 'K' || *p == 'k')
		ref <<= 10, p++;
	else if (*p == 'M' || *p == 'm')
		ref <<= 20, p++;
	if (p == s || *p || ref != v || v < min || v > max)
		abort();
}

static void check_duration(const char *s, int64_t max)
{
	int64_t v = 0;
	int r = parse_duration(s, max, &v);
	if (r != 0)
		return;
	__int128 total = 0;
	const char *p = s;
	while (*p) {
		const char *q = p;
		unsigned __int128 n = ref_digits(&p);
		if (p == q)
			abort();
		__int128 u = !strncmp(p, "min", 3) ? (p += 3, 60)
			     : *p == 's'	   ? (p++, 1)
			     : *p == 'h'	   ? (p++, 3600)
			     : *p == 'd'	   ? (p++, 86400)
			     : *p == 'w'	   ? (p++, 7 * 86400)
			     : *p == 'm'	   ? (p++, 30 * 86400)
			     : *p == 'y'	   ? (p++, 365 * 86400)
					    : 0;
		if (!u)
			abort();
		total += (__int128)n * u;
	}
	if (total != v || v < 1 || v > max)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256)
		return 0;
	char s[257];
	memcpy(s, data, size);
	s[size] = 0;
	check_uint(s, 0, 1000000);
	check_uint(s, 1, 64);
	check_uint(s, 0, UINT64_MAX);
	check_scaled(s, 0, 64 << 20);
	check_scaled(s, 0, UINT64_MAX);
	check_duration(s, PARSE_DURATION_MAX);
	check_duration(s, INT64_MAX);
	return 0;
}
