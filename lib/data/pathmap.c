/* pathmap.c - see pathmap.h. */
#include "data/pathmap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static size_t slot_of(const pathmap_t *m, const char *path)
{
	size_t i = fnv1a64(path, strlen(path)) & (m->cap - 1);
	while (m->key[i] && strcmp(m->key[i], path))
		i = (i + 1) & (m->cap - 1);
	return i;
}

void *pathmap_get(const pathmap_t *m, const char *path)
{
	if (!m->cap)
		return NULL;
	size_t i = slot_of(m, path);
	return m->key[i] ? m->val[i] : NULL;
}

static int grow(pathmap_t *m)
{
	pathmap_t g = {.cap = m->cap ? m->cap * 2 : 1024, .n = m->n};
	g.key = calloc(g.cap, sizeof(*g.key));
	g.val = calloc(g.cap, sizeof(*g.val));
	if (!g.key || !g.val) {
		free(g.key);
		free(g.val);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->key[i])
			continue;
		size_t j = slot_of(&g, m->key[i]);
		g.key[j] = m->key[i];
		g.val[j] = m->val[i];
	}
	free(m->key);
	free(m->val);
	*m = g;
	return 0;
}

int pathmap_put(pathmap_t *m, const char *path, void *val)
{
	if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
		return -ENOMEM;
	size_t i = slot_of(m, path);
	if (!m->key[i]) {
		if (!(m->key[i] = strdup(path)))
			return -ENOMEM;
		m->n++;
	}
	m->val[i] = val;
	return 0;
}

void pathmap_free(pathmap_t *m, void (*free_val)(void *))
{
	for (size_t i = 0; i < m->cap; i++) {
		free(m->key[i]);
		if (free_val && m->val[i])
			free_val(m->val[i]);
	}
	free(m->key);
	free(m->val);
	*m = (pathmap_t){0};
}
