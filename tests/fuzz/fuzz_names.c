/* fuzz_names.c - libFuzzer target for cairn_name_check.
 *
 * The input, NUL-terminated, is checked with and without with_snap.  The
 * checker must never crash, and whatever it accepts must really be a name:
 * only [A-Za-z0-9_.:-/@#] ('@' and '#' only with with_snap, at most one of
 * them), at most 255 bytes, no empty, "." or ".." component.  Accepting
 * without with_snap must imply accepting with it.  A rejection must come
 * with a non-empty reason.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cairn.h"

static bool char_ok(unsigned char c, bool with_snap)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == ':' || c == '-' || c == '/' ||
	       (with_snap && (c == '@' || c == '#'));
}

/* Components of s split at '/', '@' and '#'. */
static bool components_ok(const char *s)
{
	const char *p = s;
	for (;;) {
		size_t n = strcspn(p, "/@#");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!p[n])
			return true;
		p += n + 1;
	}
}

static void check_accepted(const char *name, size_t len, bool with_snap)
{
	/* A leading letter or digit: "-rf" must never pass for a name. */
	unsigned char c0 = name[0];
	if (!((c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z') || (c0 >= '0' && c0 <= '9')))
		abort();
	if (len > 255)
		abort();
	int seps = 0;
	const char *sep = NULL;
	for (size_t i = 0; i < len; i++) {
		if (!char_ok((unsigned char)name[i], with_snap))
			abort();
		if (name[i] == '@' || name[i] == '#') {
			seps++;
			sep = name + i;
		}
	}
	if (seps > 1)
		abort();
	if (sep && strchr(sep, '/'))
		abort(); /* no '/' in the snapshot or bookmark part */
	if (!components_ok(name))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1);
	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = 0;
	size_t len = strlen(name); /* the checker sees up to the first NUL */
	int r[2];
	for (int ws = 0; ws < 2; ws++) {
		char why[128];
		why[0] = 0;
		r[ws] = cairn_name_check(name, ws, why, sizeof(why));
		if (r[ws] == 0)
			check_accepted(name, len, ws);
		else if (r[ws] != CAIRN_EBADNAME || !why[0] || !memchr(why, 0, sizeof(why)))
			abort();
		/* the reason buffer changes nothing; tiny buffers are safe */
		char tiny[3] = {'x', 'x', 'x'};
		if (cairn_name_check(name, ws, NULL, 0) != r[ws] ||
		    cairn_name_check(name, ws, tiny, 2) != r[ws])
			abort();
		if (r[ws] != 0 && (tiny[1] != 0 && tiny[0] != 0))
			abort(); /* truncated reason still NUL-terminated */
		if (tiny[2] != 'x')
			abort(); /* wrote past whylen */
	}
	if (r[0] == 0 && r[1] != 0)
		abort(); /* a dataset name is also valid where snapshots are allowed */
	free(name);
	return 0;
}
