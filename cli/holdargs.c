/* holdargs.c - turning "TAG SNAPSHOT... [-r]" into one batch of items. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "holdargs.h"

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
			names[0] = strdup(snaps[i]);
			k = 1;
		}
		cairn_hold_item *p = realloc(out->items, (out->n + k) * sizeof(*p));
		char **q = realloc(out->owned, (out->n + k) * sizeof(*q));
		if (!p || !q)
			abort();
		out->items = p;
		out->owned = q;
		for (size_t j = 0; j < k; j++) {
			out->owned[out->n] = names[j];
			out->items[out->n++] = (cairn_hold_item){.snapshot = names[j], .tag = tag};
		}
		free(names);
	}
	return 0;
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
