/* test_s3.c - the S3 client against a live endpoint (make check-s3 runs it
 * with scripts/ceph-dev.sh's environment): bucket, put many, have many,
 * get, list pages, delete many, request counts, error paths; and the
 * chunk cache's accounting (local, no request). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcntl.h>

#include "store/chunkcache.h"
#include "store/s3.h"
static s3_t *cur;

static int fails;
#define CHECK(c)                                                             \
	do {                                                                 \
		if (!(c)) {                                                  \
			fprintf(stderr, "FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, #c, s3_errmsg(cur)); \
			fails++;                                             \
		}                                                            \
	} while (0)

static s3_t *open_client(const char *bucket, const char *secret, bool vhost, const char *endpoint)
{
	s3_config c = {.endpoint = endpoint ? endpoint : getenv("CAIRN_S3_ENDPOINT"),
		       .bucket = bucket,
		       .access_key = getenv("AWS_ACCESS_KEY_ID"),
		       .secret_key = secret ? secret : getenv("AWS_SECRET_ACCESS_KEY"),
		       .virtual_host = vhost,
		       .retry_seconds = 3};
	s3_t *s = NULL;
	int r = s3_open(&c, &s);
	CHECK(r == 0);
	return s;
}

/* The chunk cache (the S3 backend's local copy of blobs): a blob inserted
 * again replaces its copy and must count once.  Nine 1000-byte blobs in a
 * 10000-byte cache sit over the low water mark (8000) and under the limit;
 * re-inserting one of them twice took the estimate over the limit, so an
 * eviction removed a blob from a cache that was not full. */
static void cache_reinsert_counts_once(void)
{
	char dir[] = "/tmp/test_s3-cache.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	chunkcache_t *c = NULL;
	CHECK(dfd >= 0 && chunkcache_open(dfd, 10000, &c) == 0 && c);
	if (!c)
		return;
	enum { NBLOBS = 9, BLOB = 1000 };
	uint8_t blob[NBLOBS][BLOB];
	digest_t d[NBLOBS];
	for (int i = 0; i < NBLOBS; i++) {
		memset(blob[i], 'a' + i, BLOB);
		digest_of(blob[i], BLOB, &d[i]);
		chunkcache_put(c, &d[i], blob[i], BLOB);
	}
	chunkcache_put(c, &d[0], blob[0], BLOB);
	chunkcache_put(c, &d[0], blob[0], BLOB);
	chunkcache_stats st;
	chunkcache_get_stats(c, &st);
	CHECK(st.inserts == NBLOBS + 2);
	CHECK(st.evictions == 0);
	buf_t b = {0};
	for (int i = 0; i < NBLOBS; i++)
		CHECK(chunkcache_get(c, &d[i], &b) == 0 && b.len == BLOB && !memcmp(b.data, blob[i], BLOB));
	buf_free(&b);
	for (int i = 0; i < NBLOBS; i++)
		chunkcache_drop(c, &d[i]);
	chunkcache_close(c);
	unlinkat(dfd, "cache", AT_REMOVEDIR);
	close(dfd);
	rmdir(dir);
}

int main(void)
{
	if (!getenv("CAIRN_S3_ENDPOINT")) {
		fprintf(stderr, "CAIRN_S3_ENDPOINT is not set (run under make check-s3)\n");
		return 1;
	}
	char bucket[64];
	snprintf(bucket, sizeof(bucket), "t-s3-%d-%ld", (int)getpid(), (long)(random_u64() % 100000));
	cache_reinsert_counts_once();
	s3_t *s = open_client(bucket, NULL, false, NULL);
	cur = s;
	CHECK(s3_create_bucket(s) == 0);
	CHECK(s3_create_bucket(s) == 0); /* again: already ours */

	/* 2500 small objects, with names needing encoding. */
	enum { N = 2500 };
	char **keys = calloc(N, sizeof(*keys));
	s3_body *bodies = calloc(N, sizeof(*bodies));
	char (*data)[32] = calloc(N, 32);
	for (int i = 0; i < N; i++) {
		if (asprintf(&keys[i], "p/x y&%04d/obj+%d", i % 7, i) < 0)
			return 1;
		snprintf(data[i], 32, "object %d", i);
		bodies[i] = (s3_body){.data = data[i], .len = strlen(data[i])};
	}
	s3_stats st0, st1;
	s3_get_stats(s, &st0);
	CHECK(s3_put_many(s, N, keys, bodies, NULL) == 0);
	s3_get_stats(s, &st1);
	CHECK(st1.put - st0.put == N);

	buf_t b = {0};
	CHECK(s3_get(s, keys[1234], &b) == 0);
	CHECK(b.len == strlen(data[1234]) && !memcmp(b.data, data[1234], b.len));
	CHECK(s3_get(s, "p/missing", &b) == -ENOENT);
	/* A missing bucket is not a missing object: space accounting and
	 * others excuse -ENOENT as a missing chunk, never an unreachable store. */
	{
		char nobucket[80];
		snprintf(nobucket, sizeof(nobucket), "%s-none", bucket);
		s3_t *n = open_client(nobucket, NULL, false, NULL);
		CHECK(s3_get(n, "p/missing", &b) == -EIO);
		CHECK(strstr(s3_errmsg(n), "NoSuchBucket") != NULL);
		CHECK(s3_no_bucket(n));
		/* A HEAD's 404 has no body to tell which is missing: the
		 * bucket is asked, and its absence is no answer "missing". */
		bool nb_have[2] = {true, true};
		char *nb_keys[2] = {"p/missing", "p/other"};
		CHECK(s3_have_many(n, 2, nb_keys, nb_have) == -EIO);
		CHECK(s3_no_bucket(n));
		char want[120];
		snprintf(want, sizeof(want), "no such bucket %s ", nobucket);
		CHECK(strncmp(s3_errmsg(n), want, strlen(want)) == 0);
		s3_close(n);
	}

	bool have[3];
	char *hk[3] = {keys[0], "p/none", keys[N - 1]};
	CHECK(s3_have_many(s, 3, hk, have) == 0);
	CHECK(have[0] && !have[1] && have[2]);
	CHECK(!s3_no_bucket(s));

	/* Pages of 1000: 3 pages for 2500. */
	char *tok = NULL;
	size_t total = 0, pages = 0;
	do {
		s3_object *o;
		size_t n;
		int r = s3_list_page(s, "p/", &tok, &o, &n);
		CHECK(r == 0);
		if (r)
			break;
		total += n;
		pages++;
		CHECK(n == 0 || o[0].mtime > 1700000000);
		s3_objects_free(o, n);
	} while (tok);
	CHECK(total == N);
	CHECK(pages == 3);

	s3_get_stats(s, &st0);
	CHECK(s3_delete_many(s, N, keys) == 0);
	s3_get_stats(s, &st1);
	CHECK(st1.delete_req - st0.delete_req == 3);
	CHECK(st1.delete_keys - st0.delete_keys == N);
	tok = NULL;
	s3_object *o;
	size_t n;
	CHECK(s3_list_page(s, "p/", &tok, &o, &n) == 0 && n == 0);
	s3_objects_free(o, n);

	/* A body from a file. */
	char path[] = "/tmp/test_s3.XXXXXX";
	int fd = mkstemp(path);
	write(fd, "from a file", 11);
	s3_body fb = {.fd = fd, .len = 11};
	char *fk = "f/one";
	CHECK(s3_put_many(s, 1, &fk, &fb, NULL) == 0);
	CHECK(s3_get(s, fk, &b) == 0 && b.len == 11 && !memcmp(b.data, "from a file", 11));
	close(fd);
	unlink(path);

	/* Virtual-host addressing: bucket.localhost:port. */
	const char *ep = getenv("CAIRN_S3_ENDPOINT");
	const char *port = strrchr(ep, ':');
	char vep[128];
	snprintf(vep, sizeof(vep), "http://localhost%s", port);
	s3_t *v = open_client(bucket, NULL, true, vep);
	CHECK(s3_get(v, fk, &b) == 0 && b.len == 11);
	s3_close(v);

	/* A wrong secret: 403, not retried, clear message. */
	s3_t *bad = open_client(bucket, "wrongwrongwrongwrongwrongwrongwrongwrong", false, NULL);
	CHECK(s3_get(bad, fk, &b) == -EACCES);
	CHECK(strstr(s3_errmsg(bad), "403") != NULL);
	s3_close(bad);

	/* Nothing listens: retried until the budget is spent, then ETIMEDOUT. */
	s3_t *down = open_client(bucket, NULL, false, "http://127.0.0.1:1");
	CHECK(s3_get(down, fk, &b) == -ETIMEDOUT);
	s3_stats ds;
	s3_get_stats(down, &ds);
	CHECK(ds.retries >= 2);
	CHECK(strstr(s3_errmsg(down), "gave up") != NULL);
	fprintf(stderr, "down: %s\n", s3_errmsg(down));
	s3_close(down);

	CHECK(s3_delete_many(s, 1, &fk) == 0);
	buf_free(&b);
	s3_close(s);
	printf("%s\n", fails ? "test_s3: FAILED" : "test_s3: ok");
	return fails ? 1 : 0;
}
