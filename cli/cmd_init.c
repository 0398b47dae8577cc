/* cmd_init.c - cairn init: create a store. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "parse.h"

static const char *u = "init [-c AVG | --chunk-size AVG] [--chunks s3://BUCKET[/PREFIX] | --import s3://BUCKET[/PREFIX]]\n"
			"            [--endpoint URL] [--region R] [--addressing path|virtual] [--credentials-file F]";

/* The remote-chunk options: 1 if ch was one of them, 0 if not, -1 if its
 * value is bad. */
static int init_backend_opt(cairn_init_opts *o, const char **import_url, int ch, const char *arg)
{
	switch (ch) {
	case 'C': o->chunks = arg; return 1;
	case 'I': o->import = true; *import_url = arg; return 1;
	case 'E': o->endpoint = arg; return 1;
	case 'R': o->region = arg; return 1;
	case 'F': o->credentials_file = arg; return 1;
	case 'A':
		if (strcmp(arg, "path") && strcmp(arg, "virtual"))
			return -1;
		o->virtual_host = !strcmp(arg, "virtual");
		return 1;
	}
	return 0;
}

/* A user's default store ($XDG_DATA_HOME/cairn, ~/.local/share/cairn):
 * on a fresh account its parents may not exist yet; create them, mode
 * 0700 as the XDG spec asks.  An explicit -s or $CAIRN_STORE is taken as
 * given (a typo must not grow a tree).  0, else the failing directory is
 * reported and 1 returned. */
static int make_default_parents(const char *path)
{
	char buf[4096];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return 0; /* cairn_store_init reports it */
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0700) < 0 && errno != EEXIST) {
			cli_err(buf, "cannot create directory: %s", strerror(errno));
			return 1;
		}
		*p = '/';
	}
	return 0;
}

/* AVG of -c/--chunk-size: digits with an optional K or M (parse.h's
 * parser, as every numeric option), a power of two from 64K to 8M.  0,
 * or -1 when it is not. */
static int parse_chunk_size(const char *arg, uint32_t *out)
{
	uint64_t v;
	if (parse_scaled_uint(arg, 64u << 10, 8u << 20, &v) < 0 || (v & (v - 1)))
		return -1;
	*out = v;
	return 0;
}

int cmd_init(int argc, char **argv)
{
	static const struct option lo[] = {{"chunk-size", required_argument, 0, 'c'},
					   {"chunks", required_argument, 0, 'C'},
					   {"import", required_argument, 0, 'I'},
					   {"endpoint", required_argument, 0, 'E'},
					   {"region", required_argument, 0, 'R'},
					   {"addressing", required_argument, 0, 'A'},
					   {"credentials-file", required_argument, 0, 'F'},
					   {0}};
	cairn_init_opts o = {0};
	const char *import_url = NULL;
	int ch, li = -1;
	while ((ch = getopt_long(argc, argv, "c:", lo, &li)) != -1) {
		/* li tells a long option from a short one: -c or --chunk-size,
		 * whichever was typed, is the one an error names. */
		bool typed_long = li >= 0;
		li = -1;
		int b = init_backend_opt(&o, &import_url, ch, optarg);
		if (b < 0)
			return cli_usage(u, "--addressing %s: must be path or virtual", optarg);
		if (b > 0)
			continue;
		if (ch != 'c')
			return cli_usage(u, NULL);
		if (parse_chunk_size(optarg, &o.chunk_size) < 0)
			return cli_usage(u, "%s %s: must be a power of two from 64K to 8M",
					 typed_long ? "--chunk-size" : "-c", optarg);
	}
	if (optind != argc)
		return cli_usage(u, "unexpected argument '%s'", argv[optind]);
	if (o.import && o.chunks)
		return cli_usage(u, "--chunks and --import exclude each other");
	if (o.import)
		o.chunks = import_url;
	if ((o.endpoint || o.region || o.virtual_host || o.credentials_file) && !o.chunks)
		return cli_usage(u, "--endpoint, --region, --addressing and --credentials-file "
				    "need --chunks or --import");
	if (g_cli.store_default && make_default_parents(g_cli.store_path))
		return 1;
	int r = cairn_store_init(g_cli.store_path, &o);
	if (r < 0 && *cairn_store_init_errdetail()) {
		cli_err(o.chunks ? o.chunks : g_cli.store_path, "%s", cairn_store_init_errdetail());
		return 1;
	}
	if (r == -EEXIST) {
		cli_err(g_cli.store_path, "directory exists and is not empty");
		return 1;
	}
	if (r < 0) {
		cli_err(g_cli.store_path, "%s", r == CAIRN_ENOATIME
				? "the filesystem does not keep access times set with utimensat(); "
				  "garbage collection would be unsafe here"
				: cairn_strerror(r));
		return 1;
	}
	if (o.import)
		printf("imported store %s from %s\n", g_cli.store_path, o.chunks);
	else
		printf("created store %s%s%s\n", g_cli.store_path, o.chunks ? " with chunks in " : "",
		       o.chunks ? o.chunks : "");
	return 0;
}
