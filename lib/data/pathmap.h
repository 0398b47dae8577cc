/* pathmap.h - a hash map from path strings to pointers.
 *
 * Restore keeps two of these: which writer lane a multiply linked file went
 * to, and the first names of inodes a partial restore left out.  Open
 * addressing with linear probing, grown at half full; keys are copied and
 * owned by the map; values are the caller's (pathmap_free can free them).
 * Not thread-safe: one thread owns a map. */
#ifndef CAIRN_PATHMAP_H
#define CAIRN_PATHMAP_H

#include <stddef.h>

typedef struct pathmap {
	char **key;
	void **val;
	size_t cap, n;
} pathmap_t;

/* The value stored for path, or NULL. */
void *pathmap_get(const pathmap_t *m, const char *path);

/* Stores val (not NULL) for path, replacing any value it had (the old one
 * is not freed).  0 or -ENOMEM (the map is then as it was). */
int pathmap_put(pathmap_t *m, const char *path, void *val);

/* Frees the keys and the map's arrays, and each value with free_val when
 * it is not NULL.  The map is empty afterwards. */
void pathmap_free(pathmap_t *m, void (*free_val)(void *));

#endif
