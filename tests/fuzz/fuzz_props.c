/* fuzz_props.c - libFuzzer target for property values (cairn set/create -o,
 * and the properties a received stream carries).
 *
 * The input is "name=value" (split at the first '='; no '=' means the value
 * is empty), set on dataset "fz" of a scratch store.  Checked:
 *   - a refusal leaves the property as it was and says why (errdetail);
 *   - an accepted value reads back in its normal form, and setting that
 *     form again is accepted and changes nothing (normalising is stable);
 *   - compression reads back as "off" or "zstd-N", 1 <= N <= 19;
 *   - chunksize reads back as the number the input spells (digits, then
 *     an optional K or M, computed here without overflow), a power of two
 *     from 64K to 8M: a huge count must not wrap round to a valid size;
 *   - source and user properties read back exactly as given.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "scratch_store.h"

static char *get(cairn_store *st, const char *prop)
{
	char *v = NULL, *src = NULL;
	if (cairn_dataset_get(st, "fz", prop, &v, &src) != 0)
		v = NULL;
	free(src);
	return v;
}

static int set(cairn_store *st, const char *prop, const char *value)
{
	cairn_prop p = {prop, value};
	return cairn_dataset_set(st, "fz", &p, 1);
}

static int same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The size "123", "64K", "8m" spells, or 0 if it is not one or overflows. */
static unsigned long long spelled_size(const char *v)
{
	unsigned long long n = 0;
	const char *p = v;
	if (!isdigit((unsigned char)*p))
		return 0;
	for (; isdigit((unsigned char)*p); p++) {
		if (n > (~0ull - 9) / 10)
			return 0;
		n = n * 10 + (*p - '0');
	}
	int shift = 0;
	if (*p == 'K' || *p == 'k')
		shift = 10, p++;
	else if (*p == 'M' || *p == 'm')
		shift = 20, p++;
	if (*p || n > (~0ull >> shift))
		return 0;
	return n << shift;
}

static void check_form(const char *prop, const char *given, const char *v)
{
	if (!strcmp(prop, "compression")) {
		if (strcmp(v, "off")) {
			char *end;
			if (strncmp(v, "zstd-", 5))
				abort();
			long n = strtol(v + 5, &end, 10);
			if (*end || n < 1 || n > 19)
				abort();
		}
	} else if (!strcmp(prop, "chunksize")) {
		unsigned long long want = spelled_size(given);
		char buf[32];
		snprintf(buf, sizeof(buf), "%llu", want);
		if (!want || strcmp(v, buf) || want < (64u << 10) || want > (8u << 20) ||
		    (want & (want - 1)))
			abort();
	} else if (strcmp(v, given)) {
		abort(); /* source and user properties are kept as given */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cairn_store *st = scratch_store();
	char *in = malloc(size + 1);
	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = 0;
	char *eq = strchr(in, '=');
	const char *prop = in, *value = "";
	if (eq) {
		*eq = 0;
		value = eq + 1;
	}
	char *before = get(st, prop);
	int r = set(st, prop, value);
	/* Read before the next call on st, which clears it. */
	bool why = *cairn_store_errdetail(st);
	char *after = get(st, prop);
	if (r != 0) {
		if (!same(before, after) || !why)
			abort();
	} else {
		if (!after)
			abort();
		check_form(prop, value, after);
		char *norm = strdup(after);
		if (set(st, prop, norm) != 0)
			abort();
		char *again = get(st, prop);
		if (!same(again, after))
			abort();
		free(again);
		free(norm);
		/* Back to the inherited value, so inputs do not depend on each
		 * other; user properties are removed. */
		cairn_dataset_inherit(st, "fz", prop, false);
	}
	free(before);
	free(after);
	free(in);
	return 0;
}
