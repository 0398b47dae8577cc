/* props.c - property table and value formatting shared by list and get. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "props.h"
#include "util.h"

#define DS (CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME)
#define SNAP CAIRN_TYPE_SNAPSHOT
#define BM CAIRN_TYPE_BOOKMARK

static const prop_def_t props[] = {
	{"name", NULL, DS | SNAP | BM, -1, K_STR},
	{"type", NULL, DS | SNAP | BM, -1, K_STR},
	{"guid", NULL, DS | SNAP | BM, CAIRN_F_GUID, K_NUM},
	{"createtxg", NULL, DS | SNAP | BM, CAIRN_F_CREATETXG, K_NUM},
	{"creation", NULL, DS | SNAP | BM, CAIRN_F_CREATION, K_DATE},
	{"userrefs", NULL, SNAP, CAIRN_F_USERREFS, K_NUM},
	{"defer_destroy", NULL, SNAP, CAIRN_F_DEFER_DESTROY, K_BOOL},
	{"used", NULL, DS | SNAP, CAIRN_F_USED, K_SIZE},
	{"referenced", "refer", DS | SNAP, CAIRN_F_REFERENCED, K_SIZE},
	{"logicalreferenced", "lrefer", DS | SNAP, CAIRN_F_LOGICALREFERENCED, K_SIZE},
	{"written", NULL, DS | SNAP, CAIRN_F_WRITTEN, K_SIZE},
	{"logicalused", "lused", DS | SNAP, -1, K_SIZE},
	{"usedbysnapshots", "usedsnap", DS, -1, K_SIZE},
	{"usedbydataset", "usedds", DS, -1, K_SIZE},
	{"usedbychildren", "usedchild", DS, -1, K_SIZE},
	{"usedbyrefreservation", "usedrefreserv", DS, -1, K_SIZE},
	{"compressratio", "ratio", DS | SNAP, -1, K_RATIO},
	{"refcompressratio", "refratio", DS | SNAP, -1, K_RATIO},
	{"objsetid", NULL, DS | SNAP, CAIRN_F_OBJSETID, K_NUM},
	{"lastverified", NULL, SNAP, CAIRN_F_LASTVERIFIED, K_DATE},
	{"available", "avail", DS, -1, K_SIZE},
	{"source", NULL, DS, -1, K_STR},
	{"compression", NULL, DS, -1, K_STR},
	{"chunksize", NULL, DS, -1, K_SIZE},
	{"exclude", NULL, CAIRN_TYPE_FILESYSTEM, -1, K_STR},
	{"exclude_caches", NULL, CAIRN_TYPE_FILESYSTEM, -1, K_STR},
	{"cairnignore", NULL, CAIRN_TYPE_FILESYSTEM, -1, K_STR},
	{"inconsistent", NULL, DS, -1, K_STR},
	{"receive_resume_token", NULL, DS, -1, K_STR},
	{"origin", NULL, DS | SNAP, -1, K_STR},
	{"encryption", NULL, DS | SNAP, -1, K_STR},
	{"keyformat", NULL, DS, -1, K_STR},
	{"keylocation", NULL, DS, -1, K_STR},
	{"encryptionroot", NULL, DS | SNAP, -1, K_STR},
	{"keystatus", NULL, DS | SNAP, -1, K_STR},
	{NULL, NULL, 0, 0, 0},
};

const prop_def_t *prop_table(void)
{
	return props;
}

const prop_def_t *prop_find(const char *name)
{
	for (const prop_def_t *p = props; p->name; p++)
		if (!strcmp(p->name, name) || (p->alias && !strcmp(p->alias, name)))
			return p;
	return NULL;
}

int columns_parse(const char *list, column_t **cols, size_t *n, const char *usage)
{
	char *dup = strdup(list), *save;
	*cols = NULL;
	*n = 0;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		column_t c = {0};
		c.def = prop_find(t);
		if (!c.def && !strncmp(t, "written@", 8) && t[8]) {
			c.user = strdup(t); /* written@SNAP: computed per row */
			c.written_at = true;
		} else if (!c.def) {
			char why[256];
			if (!strchr(t, ':') || cairn_name_check(t, false, why, sizeof(why)) < 0 ||
			    strchr(t, '/')) {
				cli_usage(usage, "invalid property '%s'", t);
				free(dup);
				for (size_t i = 0; i < *n; i++)
					free((char *)(*cols)[i].user);
				free(*cols);
				*cols = NULL;
				return -1;
			}
			c.user = strdup(t);
		}
		const char *h = c.def ? c.def->name : t;
		if (c.def && c.def->alias && !strcmp(t, c.def->alias))
			h = c.def->alias;
		size_t k = 0;
		for (; h[k] && k < sizeof(c.header) - 1; k++)
			c.header[k] = (h[k] >= 'a' && h[k] <= 'z') ? h[k] - 32 : h[k];
		c.header[k] = 0;
		column_t *p = realloc(*cols, (*n + 1) * sizeof(*p));
		if (!p)
			abort();
		*cols = p;
		(*cols)[(*n)++] = c;
	}
	free(dup);
	if (!*n)
		return cli_usage(usage, "empty property list"), -1;
	return 0;
}

int types_parse(const char *s, int *mask, const char **bad)
{
	static const struct {
		const char *name;
		int mask;
	} names[] = {
		{"filesystem", CAIRN_TYPE_FILESYSTEM}, {"fs", CAIRN_TYPE_FILESYSTEM},
		{"volume", CAIRN_TYPE_VOLUME},         {"vol", CAIRN_TYPE_VOLUME},
		{"snapshot", CAIRN_TYPE_SNAPSHOT},     {"snap", CAIRN_TYPE_SNAPSHOT},
		{"bookmark", CAIRN_TYPE_BOOKMARK},
		{"all", CAIRN_TYPE_FILESYSTEM | CAIRN_TYPE_VOLUME | CAIRN_TYPE_SNAPSHOT |
				CAIRN_TYPE_BOOKMARK},
	};
	static char badtok[64];
	*mask = 0;
	*bad = NULL;
	const char *p = s;
	while (*p) {
		size_t n = strcspn(p, ",");
		size_t k = 0;
		while (k < sizeof(names) / sizeof(names[0]) &&
		       (strlen(names[k].name) != n || strncmp(names[k].name, p, n)))
			k++;
		if (k == sizeof(names) / sizeof(names[0])) {
			snprintf(badtok, sizeof(badtok), "%.*s", (int)n, p);
			*bad = badtok;
			return -1;
		}
		*mask |= names[k].mask;
		p += n + (p[n] == ',');
	}
	if (!*mask) {
		*bad = s;
		return -1;
	}
	return 0;
}

const char *type_name(int type)
{
	switch (type) {
	case CAIRN_TYPE_FILESYSTEM: return "filesystem";
	case CAIRN_TYPE_VOLUME: return "volume";
	case CAIRN_TYPE_SNAPSHOT: return "snapshot";
	case CAIRN_TYPE_BOOKMARK: return "bookmark";
	}
	return "-";
}

static void fmt_date(char *out, size_t len, int64_t t)
{
	time_t tt = t;
	struct tm tm;
	localtime_r(&tt, &tm);
	strftime(out, len, "%a %b %e %H:%M %Y", &tm);
}

static int string_value(const rowref_t *r, const column_t *c, char *out, size_t len)
{
	const char *name = r->b->name[r->i];
	int type = r->b->type[r->i];
	char *v = NULL;
	int e;
	if (c->user && type == CAIRN_TYPE_SNAPSHOT)
		e = cairn_snapshot_user_get(r->st, name, c->user, &v, NULL);
	else if (type == CAIRN_TYPE_SNAPSHOT && (c->def->types & SNAP)) {
		/* encryption, encryptionroot, keystatus: zfs shows them for a
		 * snapshot too, as its dataset's (whether it can be restored). */
		char *ds = strndup(name, strcspn(name, "@"));
		e = ds ? cairn_dataset_get(r->st, ds, c->def->name, &v, NULL) : -ENOMEM;
		free(ds);
	} else if (c->user || (type & DS))
		e = cairn_dataset_get(r->st, name, c->user ? c->user : c->def->name, &v, NULL);
	else {
		snprintf(out, len, "-");
		return 0;
	}
	if (e < 0)
		return e;
	snprintf(out, len, "%s", v);
	free(v);
	return 0;
}

/* The figures cairn_space_get derives (usedby*, logicalused, ratios). */
static int space_value(const rowref_t *r, const char *prop, uint64_t *v)
{
	cairn_space sp;
	int e = cairn_space_get(r->st, r->b->name[r->i], &sp);
	if (e < 0)
		return e;
	if (!strcmp(prop, "logicalused"))
		*v = sp.logicalused;
	else if (!strcmp(prop, "usedbysnapshots"))
		*v = sp.usedbysnapshots;
	else if (!strcmp(prop, "usedbydataset"))
		*v = sp.usedbydataset;
	else if (!strcmp(prop, "usedbychildren"))
		*v = sp.usedbychildren;
	else if (!strcmp(prop, "usedbyrefreservation"))
		*v = 0; /* cairn has no reservations */
	else if (!strcmp(prop, "compressratio"))
		/* zfs: of the used space for a dataset, of referenced for a snapshot */
		*v = r->b->type[r->i] == CAIRN_TYPE_SNAPSHOT
			     ? (sp.referenced ? sp.logicalreferenced * 100 / sp.referenced : 100)
			     : (sp.used ? sp.logicalused * 100 / sp.used : 100);
	else /* refcompressratio */
		*v = sp.referenced ? sp.logicalreferenced * 100 / sp.referenced : 100;
	return 0;
}

static bool is_space_prop(const char *p)
{
	return !strcmp(p, "logicalused") || !strncmp(p, "usedby", 6) ||
	       !strcmp(p, "compressratio") || !strcmp(p, "refcompressratio");
}

int column_value(const rowref_t *r, const column_t *c, bool exact, char *out, size_t len,
		 uint64_t *num, bool *has_num)
{
	int type = r->b->type[r->i];
	*has_num = false;
	if (c->written_at) {
		if (!(type & (DS | SNAP))) {
			snprintf(out, len, "-");
			return 0;
		}
		uint64_t v;
		int e = cairn_written_since(r->st, r->b->name[r->i], c->user + 8, &v);
		if (e < 0)
			return e;
		*num = v;
		*has_num = true;
		cli_size(out, len, v, exact);
		return 0;
	}
	if (c->user)
		return string_value(r, c, out, len);
	const prop_def_t *d = c->def;
	if (!(d->types & type)) {
		snprintf(out, len, "-");
		return 0;
	}
	if (!strcmp(d->name, "name")) {
		snprintf(out, len, "%s", r->b->name[r->i]);
		return 0;
	}
	if (!strcmp(d->name, "origin")) {
		snprintf(out, len, "-"); /* cairn has no clones */
		return 0;
	}
	if (!strcmp(d->name, "type")) {
		snprintf(out, len, "%s", type_name(type));
		return 0;
	}
	uint64_t v;
	if (d->field >= 0) {
		v = r->b->field[d->field][r->i];
	} else if (!strcmp(d->name, "available")) {
		v = r->available;
	} else if (is_space_prop(d->name)) {
		int e = space_value(r, d->name, &v);
		if (e < 0)
			return e;
	} else if (!strcmp(d->name, "chunksize")) {
		int e = string_value(r, c, out, len);
		if (e < 0)
			return e;
		v = strtoull(out, NULL, 10);
	} else {
		return string_value(r, c, out, len);
	}
	*num = v;
	*has_num = true;
	switch (d->kind) {
	case K_SIZE:
		cli_size(out, len, v, exact);
		break;
	case K_DATE:
		if (!v && !strcmp(d->name, "lastverified"))
			snprintf(out, len, "-");
		else if (exact)
			snprintf(out, len, "%llu", (unsigned long long)v);
		else
			fmt_date(out, len, v);
		break;
	case K_BOOL:
		snprintf(out, len, "%s", v ? "on" : "off");
		break;
	case K_RATIO: /* hundredths; zfs prints 1.50x, and 1.50 with -p */
		snprintf(out, len, "%llu.%02llu%s", (unsigned long long)(v / 100),
			 (unsigned long long)(v % 100), exact ? "" : "x");
		break;
	default:
		snprintf(out, len, "%llu", (unsigned long long)v);
	}
	return 0;
}

int column_source(const rowref_t *r, const column_t *c, char *out, size_t len)
{
	int type = r->b->type[r->i];
	bool inheritable = c->user || (c->def && (!strcmp(c->def->name, "source") ||
						  !strcmp(c->def->name, "compression") ||
						  !strcmp(c->def->name, "chunksize") ||
						  !strcmp(c->def->name, "exclude") ||
						  !strcmp(c->def->name, "exclude_caches") ||
						  !strcmp(c->def->name, "cairnignore") ||
						  !strcmp(c->def->name, "encryption") ||
						  !strcmp(c->def->name, "keyformat") ||
						  !strcmp(c->def->name, "keylocation")));
	if (c->written_at)
		inheritable = false;
	if (!inheritable || !(type & DS)) {
		if (c->user && !c->written_at && type == CAIRN_TYPE_SNAPSHOT) {
			char *v = NULL, *src = NULL;
			int e = cairn_snapshot_user_get(r->st, r->b->name[r->i], c->user, &v, &src);
			if (e < 0)
				return e;
			snprintf(out, len, "%s", src);
			free(v);
			free(src);
		} else {
			snprintf(out, len, "-");
		}
		return 0;
	}
	char *v = NULL, *src = NULL;
	int e = cairn_dataset_get(r->st, r->b->name[r->i], c->user ? c->user : c->def->name, &v,
				  &src);
	if (e < 0)
		return e;
	snprintf(out, len, "%s", src);
	free(v);
	free(src);
	return 0;
}

int column_received(const rowref_t *r, const column_t *c, char *out, size_t len)
{
	const char *prop = c->user ? c->user : c->def->name;
	bool settable = (c->user && !c->written_at) ||
			(c->def && (!strcmp(prop, "source") || !strcmp(prop, "compression") ||
				    !strcmp(prop, "chunksize") || !strcmp(prop, "exclude") ||
				    !strcmp(prop, "exclude_caches") || !strcmp(prop, "cairnignore")));
	if (!settable || !(r->b->type[r->i] & DS)) {
		snprintf(out, len, "-");
		return 0;
	}
	char *v = NULL;
	int e = cairn_prop_get_received(r->st, r->b->name[r->i], prop, &v);
	if (e < 0)
		return e;
	snprintf(out, len, "%s", v);
	free(v);
	return 0;
}

/* JSON is UTF-8: set refuses values that are not, but a value stored by
 * an older version may still be; its bad bytes print as U+FFFD so the
 * document stays valid JSON. */
void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p);
		} else if (*p < 0x20) {
			fprintf(f, "\\u%04x", *p);
		} else if (*p < 0x80) {
			fputc(*p, f);
		} else {
			char one[5] = {0};
			size_t n = 0;
			while (n < 4 && p[n] && (n == 0 || (p[n] & 0xc0) == 0x80)) {
				one[n] = p[n];
				n++;
			}
			/* The longest valid sequence starting here, else one bad byte. */
			while (n > 1 && !utf8_valid(one, NULL))
				one[--n] = 0;
			if (n == 1 && !utf8_valid(one, NULL)) {
				fputs("\\ufffd", f);
			} else {
				fwrite(p, 1, n, f);
				p += n - 1;
			}
		}
	}
	fputc('"', f);
}

const struct option json_listing_opts[] = {{"json", no_argument, 0, 'j'},
					    {"json-int", no_argument, 0, 'I'},
					    {"help", no_argument, 0, 'h'},
					    {0}};

void json_begin(const char *verb)
{
	json_begin_section(verb, "datasets");
}

/* The document's head up to the section's opening bracket. */
static void json_head(const char *verb, const char *section, char open)
{
	printf("{\"output_version\":{\"command\":\"%s %s\",\"vers_major\":0,"
	       "\"vers_minor\":1},\"%s\":%c",
	       g_cli.zfs ? "zfs" : "cairn", verb, section, open);
}

void json_begin_section(const char *verb, const char *section)
{
	if (g_cli.json_open)
		return;
	json_head(verb, section, '{');
	g_cli.json_open = true;
	g_cli.json_objects = false;
}

void json_begin_array(const char *verb, const char *section)
{
	json_head(verb, section, '[');
}

void json_object_sep(void)
{
	if (g_cli.json_objects)
		fputc(',', stdout);
	g_cli.json_objects = true;
}

void json_end(void)
{
	if (g_cli.json_multi)
		return;
	fputs("}}\n", stdout);
	g_cli.json_open = false;
}

void json_source(FILE *f, const char *src)
{
	const char *type = "NONE", *data = "-";
	if (!strcmp(src, "local"))
		type = "LOCAL";
	else if (!strcmp(src, "default"))
		type = "DEFAULT";
	else if (!strcmp(src, "received"))
		type = "RECEIVED";
	else if (!strncmp(src, "inherited from ", 15))
		type = "INHERITED", data = src + 15;
	fprintf(f, ",\"source\":{\"type\":\"%s\",\"data\":", type);
	json_str(f, data);
	fputc('}', f);
}

bool json_numeric(const column_t *c)
{
	return c->def && (c->def->kind == K_NUM || c->def->kind == K_SIZE ||
			  c->def->kind == K_DATE);
}
