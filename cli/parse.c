/* parse.c - see parse.h. */
#include "parse.h"

#include <errno.h>
#include <string.h>

/* Reads the leading digits of *p into *v, advancing *p.  -EINVAL when
 * there are none, -ERANGE when they do not fit in 64 bits. */
static int digits(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t n = 0;
	bool overflow = false;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++)
		if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, *s - '0', &n))
			overflow = true; /* keep going: "junk after" still wins */
	*p = s;
	*v = n;
	return overflow ? -ERANGE : 0;
}

int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int r = digits(&s, &v);
	if (r == -EINVAL || *s)
		return -EINVAL;
	if (r < 0 || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_scaled_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int r = digits(&s, &v);
	if (r == -EINVAL)
		return -EINVAL;
	unsigned shift = 0;
	if (*s == 'K' || *s == 'k')
		shift = 10, s++;
	else if (*s == 'M' || *s == 'm')
		shift = 20, s++;
	if (*s)
		return -EINVAL;
	if (r < 0 || v > (UINT64_MAX >> shift))
		return -ERANGE;
	v <<= shift;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* The unit at *p in seconds, advancing *p; 0 when there is none. */
static int64_t unit(const char **p)
{
	static const struct {
		const char *name;
		int64_t secs;
	} units[] = {{"min", 60},      {"s", 1},          {"h", 3600},        {"d", 86400},
		     {"w", 7 * 86400}, {"m", 30 * 86400}, {"y", 365 * 86400}};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].name);
		if (!strncmp(*p, units[i].name, n)) {
			*p += n;
			return units[i].secs;
		}
	}
	return 0;
}

int parse_duration(const char *s, int64_t max, int64_t *secs)
{
	if (!*s)
		return -EINVAL;
	int64_t total = 0;
	bool range = false;
	while (*s) {
		uint64_t n;
		int r = digits(&s, &n);
		if (r == -EINVAL)
			return -EINVAL;
		int64_t u = unit(&s);
		if (!u)
			return -EINVAL;
		int64_t term;
		if (r < 0 || n > (uint64_t)INT64_MAX || __builtin_mul_overflow((int64_t)n, u, &term) ||
		    __builtin_add_overflow(total, term, &total))
			range = true; /* keep checking the syntax of the rest */
	}
	if (range || total > max)
		return -ERANGE;
	if (total < 1)
		return -EINVAL; /* "0d": no window at all */
	*secs = total;
	return 0;
}
