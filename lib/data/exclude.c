/* exclude.c - see exclude.h.  Names are globbed with fnmatch(3) one path
 * component at a time; "**" components are handled here. */
#include "data/exclude.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn.h"

#define MAX_PATTERN 4096
#define MAX_IGNORE_FILE (1u << 20)
#define MAX_DEPTH 2048
#define CACHEDIR_SIG "Signature: 8a477f597d28d172789f06886806bc55"

typedef struct pattern {
	char **seg; /* components; a floating pattern has exactly one */
	size_t nseg;
	bool neg, dironly, anchored;
} pattern_t;

typedef struct patlist {
	pattern_t *p;
	size_t n, cap;
} patlist_t;

typedef struct frame {
	char *dir;     /* the directory's path from the root */
	size_t dirlen;
	patlist_t pats; /* from its .cairnignore */
	bool cache;    /* holds a valid CACHEDIR.TAG */
} frame_t;

struct excl {
	patlist_t prop; /* the exclude property, relative to the root */
	bool caches, ignore_files;
	frame_t *f;
	size_t nf, capf;
};

bool exclude_is_prop(const char *name)
{
	return !strcmp(name, "exclude") || !strcmp(name, "exclude_caches") ||
	       !strcmp(name, "cairnignore");
}

static int bad(char *why, size_t len, const char *pat, const char *reason)
{
	snprintf(why, len, "pattern '%s': %s", pat, reason);
	return CAIRN_EBADPROP;
}

/* Syntax of one component: every '[' closed, no lone trailing '\'. */
static const char *segment_error(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\') {
			if (++i == n)
				return "ends with a lone backslash";
		} else if (s[i] == '[') {
			size_t j = i + 1;
			if (j < n && (s[j] == '!' || s[j] == '^'))
				j++;
			if (j < n && s[j] == ']')
				j++; /* a ']' first in a class is literal */
			while (j < n && s[j] != ']')
				j++;
			if (j >= n)
				return "unterminated [ class (write \\[ for a literal bracket)";
			i = j;
		}
	}
	return NULL;
}

static void pattern_free(pattern_t *p)
{
	for (size_t i = 0; i < p->nseg; i++)
		free(p->seg[i]);
	free(p->seg);
}

static void patlist_free(patlist_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		pattern_free(&l->p[i]);
	free(l->p);
	memset(l, 0, sizeof(*l));
}

/* Parses pat (NUL-terminated, already trimmed) into *out. */
static int pattern_parse(const char *pat, pattern_t *out, char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	size_t n = strlen(pat);
	if (n == 0)
		return bad(why, whylen, pat, "empty pattern");
	if (n > MAX_PATTERN)
		return bad(why, whylen, "...", "longer than 4096 bytes");
	const char *s = pat;
	if (*s == '!') {
		out->neg = true;
		s++;
		n--;
	}
	/* A trailing '/' (not escaped) means directories only. */
	while (n && s[n - 1] == '/' && !(n >= 2 && s[n - 2] == '\\')) {
		out->dironly = true;
		n--;
	}
	out->anchored = memchr(s, '/', n) != NULL;
	while (n && *s == '/')
		s++, n--;
	if (n == 0)
		return bad(why, whylen, pat, "matches nothing (no name in it)");
	size_t cap = 1;
	for (size_t i = 0; i < n; i++)
		cap += s[i] == '/';
	out->seg = calloc(cap, sizeof(char *));
	if (!out->seg)
		return -ENOMEM;
	for (const char *p = s, *end = s + n; p <= end;) {
		const char *slash = memchr(p, '/', end - p);
		const char *ce = slash ? slash : end;
		if (ce == p) {
			pattern_free(out);
			return bad(why, whylen, pat, "empty path component (//)");
		}
		const char *err = segment_error(p, ce - p);
		if (err) {
			pattern_free(out);
			return bad(why, whylen, pat, err);
		}
		if (!(out->seg[out->nseg++] = strndup(p, ce - p))) {
			pattern_free(out);
			return -ENOMEM;
		}
		if (!slash)
			break;
		p = slash + 1;
	}
	return 0;
}

static int patlist_add(patlist_t *l, const char *pat, char *why, size_t whylen)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		pattern_t *p = realloc(l->p, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->p = p;
		l->cap = cap;
	}
	int r = pattern_parse(pat, &l->p[l->n], why, whylen);
	if (r == 0)
		l->n++;
	return r;
}

/* Splits a property value at unescaped commas; each piece is trimmed of
 * surrounding spaces.  The escape of a comma is removed; other escapes are
 * left for fnmatch. */
static int list_parse(const char *list, patlist_t *l, char *why, size_t whylen)
{
	size_t n = strlen(list);
	char *buf = malloc(n + 1);
	if (!buf)
		return -ENOMEM;
	int r = 0;
	size_t i = 0;
	while (r == 0 && i <= n) {
		size_t k = 0;
		while (i < n && list[i] == ' ')
			i++;
		for (; i < n && list[i] != ','; i++) {
			if (list[i] == '\\' && i + 1 < n) {
				if (list[i + 1] != ',')
					buf[k++] = '\\';
				buf[k++] = list[++i];
			} else {
				buf[k++] = list[i];
			}
		}
		while (k && buf[k - 1] == ' ' && !(k >= 2 && buf[k - 2] == '\\'))
			k--;
		buf[k] = 0;
		i++; /* past the comma (or the end) */
		if (k == 0 && n == 0)
			break; /* "" is the empty list */
		r = patlist_add(l, buf, why, whylen);
	}
	free(buf);
	return r;
}

int exclude_pattern_check(const char *pat, char *why, size_t whylen)
{
	pattern_t p;
	int r = pattern_parse(pat, &p, why, whylen);
	if (r == 0)
		pattern_free(&p);
	return r;
}

int exclude_list_check(const char *list, char *why, size_t whylen)
{
	patlist_t l = {0};
	int r = list_parse(list, &l, why, whylen);
	patlist_free(&l);
	return r;
}

int exclude_new(const char *list, bool caches, bool ignore_files, excl_t **out, char *why,
		size_t whylen)
{
	excl_t *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->caches = caches;
	x->ignore_files = ignore_files;
	int r = list ? list_parse(list, &x->prop, why, whylen) : 0;
	if (r < 0) {
		exclude_free(x);
		return r;
	}
	*out = x;
	return 0;
}

void exclude_free(excl_t *x)
{
	if (!x)
		return;
	while (x->nf)
		exclude_leave(x);
	free(x->f);
	patlist_free(&x->prop);
	free(x);
}

static bool has_cachedir_tag(int dfd)
{
	int fd = openat(dfd, "CACHEDIR.TAG", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	char sig[sizeof(CACHEDIR_SIG) - 1];
	struct stat st;
	bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		  read(fd, sig, sizeof(sig)) == (ssize_t)sizeof(sig) &&
		  !memcmp(sig, CACHEDIR_SIG, sizeof(sig));
	close(fd);
	return ok;
}

/* Reads dfd's .cairnignore into l; bad lines are skipped and the first
 * one reported. */
static int read_ignore_file(int dfd, patlist_t *l, unsigned *bad_line, char *why, size_t whylen)
{
	int fd = openat(dfd, ".cairnignore", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_IGNORE_FILE) {
		close(fd);
		return 0;
	}
	char *text = malloc(st.st_size + 1);
	if (!text) {
		close(fd);
		return -ENOMEM;
	}
	ssize_t n = read(fd, text, st.st_size);
	close(fd);
	text[n > 0 ? n : 0] = 0;
	int r = 0;
	unsigned lineno = 0;
	for (char *line = text, *next; r == 0 && line && *line; line = next) {
		lineno++;
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		size_t k = strlen(line);
		if (k && line[k - 1] == '\r')
			line[--k] = 0;
		while (k && line[k - 1] == ' ' && !(k >= 2 && line[k - 2] == '\\'))
			line[--k] = 0;
		if (k == 0 || line[0] == '#')
			continue;
		char lwhy[512];
		r = patlist_add(l, line, lwhy, sizeof(lwhy));
		if (r == CAIRN_EBADPROP) {
			if (!*bad_line) {
				*bad_line = lineno;
				snprintf(why, whylen, "%s", lwhy);
			}
			r = 0;
		}
	}
	free(text);
	return r;
}

int exclude_enter(excl_t *x, int dfd, const char *dirpath, const dirlist_t *listed,
		  unsigned *bad_line, char *why, size_t whylen)
{
	*bad_line = 0;
	if (x->nf == x->capf) {
		size_t cap = x->capf ? x->capf * 2 : 16;
		frame_t *f = realloc(x->f, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		x->f = f;
		x->capf = cap;
	}
	frame_t *f = &x->f[x->nf];
	memset(f, 0, sizeof(*f));
	f->dir = strdup(dirpath);
	if (!f->dir)
		return -ENOMEM;
	f->dirlen = strlen(dirpath);
	f->cache = x->caches && (!listed || listed->has_cachedir_tag) && has_cachedir_tag(dfd);
	int r = x->ignore_files && (!listed || listed->has_ignore_file)
			? read_ignore_file(dfd, &f->pats, bad_line, why, whylen)
			: 0;
	if (r < 0) {
		patlist_free(&f->pats);
		free(f->dir);
		return r;
	}
	x->nf++;
	return 0;
}

void exclude_leave(excl_t *x)
{
	if (!x->nf)
		return;
	frame_t *f = &x->f[--x->nf];
	patlist_free(&f->pats);
	free(f->dir);
}

static bool match_segs(char *const *pat, size_t np, char *const *seg, size_t ns)
{
	if (np == 0)
		return ns == 0;
	if (!strcmp(pat[0], "**")) {
		if (np == 1)
			return ns >= 1; /* a trailing double star: everything inside, not the dir */
		for (size_t k = 0; k <= ns; k++)
			if (match_segs(pat + 1, np - 1, seg + k, ns - k))
				return true;
		return false;
	}
	return ns > 0 && fnmatch(pat[0], seg[0], 0) == 0 &&
	       match_segs(pat + 1, np - 1, seg + 1, ns - 1);
}

/* Splits rel (modified) into components. */
static size_t split(char *rel, char **seg)
{
	size_t n = 0;
	for (char *p = rel; n < MAX_DEPTH;) {
		seg[n++] = p;
		char *slash = strchr(p, '/');
		if (!slash)
			break;
		*slash = 0;
		p = slash + 1;
	}
	return n;
}

/* Applies the patterns of l (relative to base path rel) to an entry; *state
 * becomes the verdict of the last pattern that matches. */
static void apply(const patlist_t *l, const char *rel, const char *name, bool isdir, int *state)
{
	char *seg[MAX_DEPTH];
	char *copy = NULL;
	size_t nseg = 0;
	for (size_t i = 0; i < l->n; i++) {
		const pattern_t *p = &l->p[i];
		if (p->dironly && !isdir)
			continue;
		bool m;
		if (!p->anchored) {
			m = fnmatch(p->seg[0], name, 0) == 0;
		} else {
			if (!copy) {
				copy = strdup(rel);
				if (!copy)
					return; /* out of memory: keep the file */
				nseg = split(copy, seg);
			}
			m = match_segs(p->seg, p->nseg, seg, nseg);
		}
		if (m)
			*state = p->neg ? 0 : 1;
	}
	free(copy);
}

bool exclude_any(const excl_t *x)
{
	if (!x)
		return false;
	if (x->prop.n || (x->nf && x->f[x->nf - 1].cache))
		return true;
	for (size_t i = 0; i < x->nf; i++)
		if (x->f[i].pats.n)
			return true;
	return false;
}

bool exclude_match(const excl_t *x, const char *path, const char *name, bool isdir)
{
	if (x->nf && x->f[x->nf - 1].cache && strcmp(name, "CACHEDIR.TAG"))
		return true;
	int state = 0;
	for (size_t i = 0; i < x->nf; i++) {
		const frame_t *f = &x->f[i];
		if (!f->pats.n)
			continue;
		const char *rel = path + f->dirlen + (f->dirlen ? 1 : 0);
		apply(&f->pats, rel, name, isdir, &state);
	}
	apply(&x->prop, path, name, isdir, &state);
	return state == 1;
}

/* ---- from a dataset's properties ---- */

#include "catalog/dataset.h"

int exclude_open(cairn_store *st, const ds_row_t *ds, excl_t **out)
{
	char *list = NULL, *caches = NULL, *files = NULL;
	int r = dataset_prop(st, ds, "exclude", &list, NULL);
	if (r == 0)
		r = dataset_prop(st, ds, "exclude_caches", &caches, NULL);
	if (r == 0)
		r = dataset_prop(st, ds, "cairnignore", &files, NULL);
	if (r == 0) {
		char why[512];
		r = exclude_new(list, !strcmp(caches, "on"), strcmp(files, "off") != 0, out, why,
				sizeof(why));
		if (r == CAIRN_EBADPROP)
			store_err(st, r, "%s: exclude: %s", ds->name, why);
	}
	free(list);
	free(caches);
	free(files);
	return r;
}
