/* s3tool.c - what the S3 tests need to look into a bucket, on lib/s3.c:
 *   s3tool count BUCKET PREFIX        objects under PREFIX
 *   s3tool ls BUCKET PREFIX           their keys
 *   s3tool put BUCKET KEY FILE        upload FILE as KEY
 *   s3tool get BUCKET KEY             object to stdout
 *   s3tool rm BUCKET KEY...           delete
 *   s3tool have BUCKET KEY...         how many exist (one batch of HEADs)
 * Endpoint and keys from CAIRN_S3_ENDPOINT / AWS_ACCESS_KEY_ID /
 * AWS_SECRET_ACCESS_KEY; S3TOOL_RETRY_SECONDS and S3TOOL_PARALLEL set the
 * retry budget (default 30) and the connections (default 8). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/s3.h"

static int die(s3_t *s, const char *what, int r)
{
	fprintf(stderr, "s3tool: %s: %s (%d)\n", what, s3_errmsg(s), r);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: s3tool count|ls|put|get|rm|have BUCKET ARG...\n");
		return 2;
	}
	s3_config c = {.endpoint = getenv("CAIRN_S3_ENDPOINT"),
		       .bucket = argv[2],
		       .access_key = getenv("AWS_ACCESS_KEY_ID"),
		       .secret_key = getenv("AWS_SECRET_ACCESS_KEY"),
		       .retry_seconds = getenv("S3TOOL_RETRY_SECONDS")
					    ? atoi(getenv("S3TOOL_RETRY_SECONDS")) : 30,
		       .parallel = getenv("S3TOOL_PARALLEL") ? atoi(getenv("S3TOOL_PARALLEL")) : 0};
	s3_t *s;
	if (s3_open(&c, &s) < 0) {
		fprintf(stderr, "s3tool: bad settings\n");
		return 2;
	}
	const char *cmd = argv[1];
	int r;
	if (!strcmp(cmd, "count") || !strcmp(cmd, "ls")) {
		char *tok = NULL;
		size_t total = 0;
		do {
			s3_object *o;
			size_t n;
			if ((r = s3_list_page(s, argv[3], &tok, &o, &n)) < 0)
				return die(s, "list", r);
			for (size_t i = 0; i < n && cmd[0] == 'l'; i++)
				printf("%s\n", o[i].key);
			total += n;
			s3_objects_free(o, n);
		} while (tok);
		if (cmd[0] == 'c')
			printf("%zu\n", total);
	} else if (!strcmp(cmd, "put") && argc == 5) {
		int fd = open(argv[4], O_RDONLY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0)
			return 1;
		s3_body b = {.fd = fd, .len = st.st_size};
		if ((r = s3_put_many(s, 1, &argv[3], &b, NULL)) < 0)
			return die(s, "put", r);
	} else if (!strcmp(cmd, "get")) {
		buf_t b = {0};
		if ((r = s3_get(s, argv[3], &b)) < 0)
			return die(s, "get", r);
		fwrite(b.data, 1, b.len, stdout);
	} else if (!strcmp(cmd, "have")) {
		size_t n = argc - 3, present = 0;
		bool *have = calloc(n, sizeof(*have));
		if (!have)
			return 1;
		if ((r = s3_have_many(s, n, argv + 3, have)) < 0)
			return die(s, "have", r);
		for (size_t i = 0; i < n; i++)
			present += have[i];
		printf("%zu\n", present);
		free(have);
	} else if (!strcmp(cmd, "rm")) {
		if ((r = s3_delete_many(s, argc - 3, argv + 3)) < 0)
			return die(s, "rm", r);
	} else {
		return 2;
	}
	s3_close(s);
	return 0;
}
