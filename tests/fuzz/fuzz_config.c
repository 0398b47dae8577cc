/* fuzz_config.c - libFuzzer target for store settings (cairn config
 * KEY=VALUE lines).
 *
 * The input is "key=value" (split at the first '='), set with
 * cairn_config_set on a scratch store.  Checked:
 *   - a refusal leaves the setting as it was and says why (errdetail);
 *   - an accepted value reads back as the number the input spells (digits,
 *     then an optional K/M/G, optional "i", optional "B"; computed here
 *     without overflow), inside the table's range, a power of two for
 *     chunk_size;
 * Each accepted setting is put back to its default afterwards, so the
 * inputs do not depend on each other.
 */
#include <ctype.h>
#include <string.h>

#include "scratch_store.h"

static const cairn_config_info *info(const char *key)
{
	for (const cairn_config_info *c = cairn_config_table(); c->key; c++)
		if (!strcmp(c->key, key))
			return c;
	return NULL;
}

/* The number v spells, or -1. */
static long long spelled(const char *v)
{
	unsigned long long n = 0;
	const char *p = v;
	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		if (n > (unsigned long long)(INT64_MAX - 9) / 10)
			return -1;
		n = n * 10 + (*p - '0');
	}
	int shift = 0;
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	}
	if (shift && *p == 'i')
		p++;
	if (shift && (*p == 'B' || *p == 'b'))
		p++;
	if (*p || n > (unsigned long long)(INT64_MAX >> shift))
		return -1;
	return (long long)(n << shift);
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
	const char *key = in, *value = "";
	if (eq) {
		*eq = 0;
		value = eq + 1;
	}
	const cairn_config_info *ci = info(key);
	int64_t before = 0, after = 0;
	bool env = false;
	int gb = cairn_config_get(st, key, &before, &env);
	int r = cairn_config_set(st, key, value);
	/* Read before the next call on st, which clears it. */
	bool why = *cairn_store_errdetail(st);
	int ga = cairn_config_get(st, key, &after, &env);
	if ((gb == 0) != (ci != NULL) || (ga == 0) != (ci != NULL))
		abort(); /* exactly the table's keys exist */
	if (r != 0) {
		if (before != after || !why)
			abort();
	} else {
		long long want = spelled(value);
		if (!ci || want < 0 || after != want || after < ci->min || after > ci->max)
			abort();
		if (!strcmp(key, "chunk_size") && (after & (after - 1)))
			abort();
		char def[32];
		snprintf(def, sizeof(def), "%lld", (long long)ci->def);
		if (cairn_config_set(st, key, def) != 0)
			abort();
	}
	free(in);
	return 0;
}
