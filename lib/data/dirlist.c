/* dirlist.c - one directory's entry names, sorted bytewise.
 *
 * The walks list ~one directory per seven objects, so the fixed cost per
 * directory counts: the names are read with getdents64 straight from the
 * walk's own descriptor (no dup, fdopendir or closedir: three system calls
 * fewer per directory) into one arena (no allocation per name). */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/dirlist.h"

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static bool dot_or_dotdot(const char *s)
{
	return s[0] == '.' && (!s[1] || (s[1] == '.' && !s[2]));
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends one name to the arena; names[] holds arena offsets until the
 * listing is complete (the arena may still move). */
static int add_name(dirlist_t *l, const char *name)
{
	size_t len = strlen(name) + 1, off = l->arena.len;
	if (array_reserve(&l->names, &l->cap, l->n + 1, sizeof(*l->names)) < 0 ||
	    buf_append(&l->arena, name, len) < 0)
		return -ENOMEM;
	l->names[l->n++] = (char *)(uintptr_t)off;
	l->has_ignore_file |= !strcmp(name, ".cairnignore");
	l->has_cachedir_tag |= !strcmp(name, "CACHEDIR.TAG");
	return 0;
}

int dirlist_read(dirlist_t *l, int dfd)
{
	return dirlist_read_max(l, dfd, SIZE_MAX);
}

int dirlist_read_max(dirlist_t *l, int dfd, size_t max)
{
	l->n = 0;
	l->arena.len = 0;
	l->has_ignore_file = l->has_cachedir_tag = false;
	char buf[32768] __attribute__((aligned(8)));
	for (;;) {
		ssize_t got = getdents64(dfd, buf, sizeof(buf));
		if (got < 0) {
			int e = -errno;
			l->n = 0;
			return e;
		}
		if (got == 0)
			break;
		for (ssize_t off = 0; off < got;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			off += d->d_reclen;
			if (dot_or_dotdot(d->d_name))
				continue;
			if (l->n == max) {
				l->n = 0;
				return -EFBIG;
			}
			if (add_name(l, d->d_name) < 0) {
				l->n = 0;
				return -ENOMEM;
			}
		}
	}
	for (size_t i = 0; i < l->n; i++)
		l->names[i] = (char *)l->arena.data + (uintptr_t)l->names[i];
	if (l->n > 1)
		qsort(l->names, l->n, sizeof(*l->names), name_cmp);
	return 0;
}

void dirlist_free(dirlist_t *l)
{
	free(l->names);
	buf_free(&l->arena);
	memset(l, 0, sizeof(*l));
}

int dirlist_open(int dfd, const char *name)
{
	int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat(dfd, name, flags | O_NOATIME);
	if (fd < 0 && errno == EPERM) /* O_NOATIME: not the owner, not root */
		fd = openat(dfd, name, flags);
	return fd;
}
