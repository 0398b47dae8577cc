/* cmd_config.c - cairn config: show and change store settings. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "props.h"

static const char *u = "config [-H] [-p] [-j|--json [--json-int]] [KEY[=VALUE]]...";

typedef struct copts {
	bool scripted, exact, json, json_int;
} copts_t;

/* A setting's value as shown: sizes in bytes the way list shows sizes
 * (exact with -p), everything else as the number it is. */
static void value_str(const cairn_config_info *ci, int64_t v, bool exact, char *out, size_t len)
{
	if (!strcmp(ci->unit, "bytes"))
		cli_size(out, len, (uint64_t)v, exact);
	else
		snprintf(out, len, "%lld", (long long)v);
}

static void json_num(const char *key, int64_t v, bool as_int)
{
	printf(as_int ? ",\"%s\":%lld" : ",\"%s\":\"%lld\"", key, (long long)v);
}

static void show_json(const cairn_config_info *ci, int64_t v, bool env, const copts_t *o)
{
	json_object_sep();
	json_str(stdout, ci->key);
	printf(":{\"name\":");
	json_str(stdout, ci->key);
	json_num("value", v, o->json_int);
	printf(",\"source\":\"%s\"", env ? "env" : "store");
	json_num("min", ci->min, o->json_int);
	json_num("max", ci->max, o->json_int);
	json_num("default", ci->def, o->json_int);
	printf(",\"unit\":");
	json_str(stdout, ci->unit);
	printf(",\"description\":");
	json_str(stdout, ci->description);
	putchar('}');
}

static int show(cairn_store *st, const cairn_config_info *ci, const copts_t *o)
{
	int64_t v;
	bool env;
	int r = cairn_config_get(st, ci->key, &v, &env);
	if (r < 0)
		return cli_fail(st, ci->key, r);
	if (o->json) {
		show_json(ci, v, env, o);
		return 0;
	}
	char val[32], lo[32], hi[32];
	value_str(ci, v, o->exact, val, sizeof(val));
	value_str(ci, ci->min, o->exact, lo, sizeof(lo));
	value_str(ci, ci->max, o->exact, hi, sizeof(hi));
	if (o->scripted)
		printf("%s\t%s\t%s\t%s..%s\t%s\n", ci->key, val, env ? "env" : "store", lo, hi,
		       ci->unit);
	else
		printf("%-20s %-12s %-8s %s..%s %s\n", ci->key, val, env ? "env" : "store", lo, hi,
		       ci->unit);
	return 0;
}

static const cairn_config_info *find(const char *key)
{
	const cairn_config_info *ci = cairn_config_table();
	while (ci->key && strcmp(ci->key, key))
		ci++;
	return ci->key ? ci : NULL;
}

/* KEY=VALUE stores a setting, KEY shows one; an unknown key is refused. */
static int one(cairn_store *st, char *arg, const copts_t *o)
{
	char *eq = strchr(arg, '=');
	if (eq) {
		*eq = 0;
		int r = cairn_config_set(st, arg, eq + 1);
		return r < 0 ? cli_fail(st, arg, r) : 0;
	}
	const cairn_config_info *ci = find(arg);
	if (!ci) {
		cli_err(arg, "unknown setting");
		return 1;
	}
	return show(st, ci, o);
}

/* Whether the command shows settings (and so prints a header): it does
 * unless every argument is KEY=VALUE. */
static bool shows_any(int argc, char **argv)
{
	if (optind == argc)
		return true;
	for (int i = optind; i < argc; i++)
		if (!strchr(argv[i], '='))
			return true;
	return false;
}

int cmd_config(int argc, char **argv)
{
	copts_t o = {0};
	int ch;
	while ((ch = getopt_long(argc, argv, "+Hpjh", json_listing_opts, NULL)) != -1) {
		switch (ch) {
		case 'H': o.scripted = true; break;
		case 'p': o.exact = true; break;
		case 'j': o.json = true; break;
		case 'I': o.json_int = true; break;
		case 'h': printf("usage: cairn %s\n", u); return 0;
		default: return cli_usage(u, NULL);
		}
	}
	if (o.json_int && !o.json)
		return cli_usage(u, "--json-int needs -j");
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	int rc = 0;
	if (o.json)
		json_begin_section("config", "settings");
	else if (!o.scripted && shows_any(argc, argv))
		printf("%-20s %-12s %-8s %s\n", "KEY", "VALUE", "SOURCE", "RANGE UNIT");
	if (optind == argc)
		for (const cairn_config_info *ci = cairn_config_table(); ci->key && !rc; ci++)
			rc = show(st, ci, &o);
	for (int i = optind; i < argc && !rc; i++)
		rc = one(st, argv[i], &o);
	if (o.json)
		json_end();
	cairn_store_close(st);
	return rc;
}
