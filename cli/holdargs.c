/* holdargs.c - turning "TAG SNAPSHOT... [-r]" into one batch of items. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "holdargs.h"
#include "util.h"

/* Room for `more` items in both arrays (doubling: a recursive batch can
 * hold tens of thousands of items). */
static int reserve(holdargs_t *out, size_t more)
{
	if (array_reserve(&out->items, &out->cap, out->n + more, sizeof(*out->items)) < 0)
		return -ENOMEM;
	return array_reserve(&out->owned, &out->owned_cap, out->n + more, sizeof(*out->owned));
}

int holdargs_build(cairn_store *st, const char *tag, char **snaps, int n, bool recursive,
		   holdargs_t *out)
{
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < n; i++) {
		char **names = NULL;
		size_t k = 0;
		/* A name that does not expand stays as one item: the batch then
		 * names it among every other failing item. */
		if (!recursive || cairn_snapshot_expand(st, snaps[i], &names, &k) < 0) {
			free(names);
			names = malloc(sizeof(char *));
			if (names && !(names[0] = strdup(snaps[i]))) {
				free(names);
				names = NULL;
			}
			k = 1;
		}
		if (!names || reserve(out, k) < 0) {
			for (size_t j = 0; names && j < k; j++)
				free(names[j]);
			free(names);
			return -ENOMEM;
		}
		for (size_t j = 0; j < k; j++) {
			out->owned[out->n] = names[j];
			out->items[out->n++] = (cairn_hold_item){.snapshot = names[j], .tag = tag};
		}
		free(names);
	}
	return 0;
}

int holdargs_append(holdargs_t *dst, holdargs_t *src)
{
	int r = reserve(dst, src->n);
	for (size_t i = 0; r == 0 && i < src->n; i++) {
		dst->items[dst->n] = src->items[i];
		dst->owned[dst->n++] = src->owned[i];
	}
	if (r == 0)
		src->n = 0;
	holdargs_free(src);
	return r;
}

int holdargs_report(const holdargs_t *h, const char *what)
{
	int bad = 0;
	for (size_t i = 0; i < h->n; i++)
		if (h->items[i].err) {
			cli_err(NULL, "%s", h->items[i].why);
			bad++;
		}
	if (bad)
		cli_err(NULL, "nothing was changed (%d of %zu items failed)", bad, h->n);
	return bad;
}

void holdargs_free(holdargs_t *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->owned[i]);
	free(h->owned);
	free(h->items);
}
