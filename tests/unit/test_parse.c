/* test_parse.c - the CLI's shared number and duration parser (cli/parse.c,
 * compiled in): what it accepts, and that it refuses signs, spaces, junk
 * and every overflow with -EINVAL (not a number) or -ERANGE (out of range). */
#include <errno.h>
#include <stdio.h>

#include "../../cli/parse.c"
#include "unit.h"

static void test_uint(void)
{
	uint64_t v = 7;
	CHECK_EQ(parse_uint("0", 0, 10, &v), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(parse_uint("1000000", 0, 1000000, &v), 0);
	CHECK_EQ(v, 1000000);
	CHECK_EQ(parse_uint("18446744073709551615", 0, UINT64_MAX, &v), 0);
	CHECK(v == UINT64_MAX);
	CHECK_EQ(parse_uint("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
	CHECK_EQ(parse_uint("99999999999999999999", 0, 1000000, &v), -ERANGE);
	CHECK_EQ(parse_uint("1000001", 0, 1000000, &v), -ERANGE);
	CHECK_EQ(parse_uint("0", 1, 64, &v), -ERANGE);
	const char *bad[] = {"", " 5", "5 ", "+5", "-5", "5x", "0x10", "1e3", "１"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(parse_uint(bad[i], 0, UINT64_MAX, &v), -EINVAL);
}

static void test_scaled(void)
{
	uint64_t v;
	CHECK_EQ(parse_scaled_uint("64K", 0, UINT64_MAX, &v), 0);
	CHECK_EQ(v, 65536);
	CHECK_EQ(parse_scaled_uint("16m", 0, UINT64_MAX, &v), 0);
	CHECK_EQ(v, 16 << 20);
	CHECK_EQ(parse_scaled_uint("17592186044416M", 0, UINT64_MAX, &v), -ERANGE);
	CHECK_EQ(parse_scaled_uint("65M", 0, 64 << 20, &v), -ERANGE);
	CHECK_EQ(parse_scaled_uint("K", 0, UINT64_MAX, &v), -EINVAL);
	CHECK_EQ(parse_scaled_uint("1G", 0, UINT64_MAX, &v), -EINVAL);
	CHECK_EQ(parse_scaled_uint("1KK", 0, UINT64_MAX, &v), -EINVAL);
}

static void test_duration(void)
{
	int64_t v;
	CHECK_EQ(parse_duration("30d", PARSE_DURATION_MAX, &v), 0);
	CHECK_EQ(v, 30 * 86400);
	CHECK_EQ(parse_duration("1y6m2w1d12h30min10s", PARSE_DURATION_MAX, &v), 0);
	CHECK_EQ(v, 365 * 86400 + 180 * 86400 + 15 * 86400 + 12 * 3600 + 1800 + 10);
	CHECK_EQ(parse_duration("1000y", PARSE_DURATION_MAX, &v), 0);
	CHECK_EQ(parse_duration("1000y1s", PARSE_DURATION_MAX, &v), -ERANGE);
	CHECK_EQ(parse_duration("1000000000000y", PARSE_DURATION_MAX, &v), -ERANGE);
	CHECK_EQ(parse_duration("1000000000000y", INT64_MAX, &v), -ERANGE);
	CHECK_EQ(parse_duration("9223372036854775807s9223372036854775807s3s", INT64_MAX, &v),
		 -ERANGE);
	CHECK_EQ(parse_duration("9223372036854775808s", INT64_MAX, &v), -ERANGE);
	CHECK_EQ(parse_duration("0s", PARSE_DURATION_MAX, &v), -EINVAL);
	CHECK_EQ(parse_duration("0d0h", PARSE_DURATION_MAX, &v), -EINVAL);
	const char *bad[] = {"", "30", "d", "30x", "30 d", " 30d", "-30d", "+30d", "30d ", "1mi",
			     "1y-1d", "99999999999999999999999x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse_duration(bad[i], PARSE_DURATION_MAX, &v);
		if (r != -EINVAL)
			fprintf(stderr, "duration '%s': %d\n", bad[i], r);
		CHECK_EQ(r, -EINVAL);
	}
}

int main(void)
{
	test_uint();
	test_scaled();
	test_duration();
	UNIT_DONE();
}
