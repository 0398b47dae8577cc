/* names.c - dataset, snapshot and bookmark name rules (as ZFS has them). */
#include <errno.h>
#include <stdio.h>

#include "util.h"

#define NAME_MAX_LEN 255
/* zfs's zfs_max_dataset_nesting default: a dataset name has at most this
 * many components (deeper trees could not be replicated to zfs). */
#define NAME_MAX_NESTING 50

static bool name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == ':' || c == '-';
}

static int why_set(char *why, size_t len, const char *fmt, const char *a, int c)
{
	if (why)
		snprintf(why, len, fmt, a, c);
	return CAIRN_EBADNAME;
}

/* Checks one component [s, s+len). */
static int component_check(const char *s, size_t len, const char *what, char *why, size_t wl)
{
	if (len == 0)
		return why_set(why, wl, "empty %s component%.0d", what, 0);
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
		return why_set(why, wl, "'.' and '..' are not valid %s names%.0d", what, 0);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];
		if (!name_char_ok(c)) {
			if (why && c >= 0x20 && c < 0x7f)
				snprintf(why, wl, "invalid character '%c' in %s name", c, what);
			else if (why)
				snprintf(why, wl, "invalid character 0x%02x in %s name", c, what);
			return CAIRN_EBADNAME;
		}
	}
	return 0;
}

int cairn_name_check(const char *name, bool with_snap, char *why, size_t whylen)
{
	if (!name)
		return -EINVAL;
	size_t len = strlen(name);
	if (len > NAME_MAX_LEN) {
		if (why)
			snprintf(why, whylen, "name is %zu bytes long (at most %d)", len,
				 NAME_MAX_LEN);
		return CAIRN_EBADNAME;
	}
	const char *sep = NULL;
	for (const char *p = name; *p; p++)
		if (*p == '@' || *p == '#') {
			if (sep || !with_snap)
				return why_set(why, whylen, "invalid character '%s' in name%.0d",
					       (char[]){*p, 0}, 0);
			sep = p;
		}
	const char *end = sep ? sep : name + len;
	int depth = 0;
	for (const char *p = name; p < end; p++)
		depth += *p == '/';
	if (depth >= NAME_MAX_NESTING)
		return why_set(why, whylen, "maximum name nesting depth exceeded (at most %s%d components)",
			       "", NAME_MAX_NESTING);
	const char *s = name;
	for (;;) {
		const char *slash = memchr(s, '/', end - s);
		const char *ce = slash ? slash : end;
		int r = component_check(s, ce - s, "dataset", why, whylen);
		if (r < 0)
			return r;
		if (!slash)
			break;
		s = slash + 1;
	}
	/* As zfs requires of pool names: a leading letter or digit.  Besides,
	 * a name like "-rf" or "-o" would read as an option on a command line
	 * (ours, ssh's, a script's). */
	unsigned char c0 = name[0];
	if (c0 && c0 != '@' && c0 != '#' && c0 != '/' && !((c0 >= 'a' && c0 <= 'z') ||
	    (c0 >= 'A' && c0 <= 'Z') || (c0 >= '0' && c0 <= '9')))
		return why_set(why, whylen, "name must begin with a letter or digit%.0s%.0d", "", 0);
	if (sep) {
		const char *what = *sep == '@' ? "snapshot" : "bookmark";
		if (strchr(sep + 1, '/'))
			return why_set(why, whylen, "invalid character '/' in %s name%.0d", what, 0);
		return component_check(sep + 1, name + len - sep - 1, what, why, whylen);
	}
	return 0;
}

/* Length of the well-formed UTF-8 sequence at p, or 0 (RFC 3629 table). */
static size_t utf8_seq(const unsigned char *p)
{
	unsigned char c = p[0];
	if (c < 0x80)
		return 1;
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0; /* no overlong forms */
		else if (c == 0xed)
			hi = 0x9f; /* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f; /* nothing above U+10FFFF */
	} else {
		return 0;
	}
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

bool utf8_valid(const char *s, size_t *bad_at)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t n = utf8_seq(p);
		if (!n) {
			if (bad_at)
				*bad_at = (size_t)(p - (const unsigned char *)s);
			return false;
		}
		p += n;
	}
	return true;
}
