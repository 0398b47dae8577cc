/* test_lru.c - the GC's LRU digest cache against a straightforward model.
 *
 * The model keeps the same recency list in a plain array (O(n) per
 * operation) with the same promotion rule; the cache must give the same
 * answer to every query and end with the same contents in the same order.
 * Also: no false positives even for digests that share the hashed bytes,
 * the prefetching batch call equals single calls, capacity 1, and a large
 * cache's speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "maint/lru.h"
#include "unit.h"

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static digest_t dg(uint64_t k)
{
	digest_t d;
	uint64_t x = k * 0x9e3779b97f4a7c15ull + 1;
	for (int i = 0; i < 4; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(d.b + 8 * i, &x, 8);
	}
	return d;
}

/* ---- the model: index 0 = most recent ---- */
typedef struct model {
	digest_t *v;
	uint64_t *stamp;
	size_t n, cap;
	uint64_t clock;
} model_t;

static bool model_check_insert(model_t *m, const digest_t *d)
{
	for (size_t i = 0; i < m->n; i++) {
		if (digest_cmp(&m->v[i], d))
			continue;
		if (m->clock - m->stamp[i] > m->cap / 2) {
			digest_t x = m->v[i];
			memmove(m->v + 1, m->v, i * sizeof(*m->v));
			memmove(m->stamp + 1, m->stamp, i * sizeof(*m->stamp));
			m->v[0] = x;
			m->stamp[0] = ++m->clock;
		}
		return true;
	}
	if (m->n == m->cap)
		m->n--; /* drop the least recent */
	memmove(m->v + 1, m->v, m->n * sizeof(*m->v));
	memmove(m->stamp + 1, m->stamp, m->n * sizeof(*m->stamp));
	m->v[0] = *d;
	m->stamp[0] = ++m->clock;
	m->n++;
	return false;
}

static void test_against_model(size_t cap, uint64_t keys, size_t ops)
{
	lru_t *c;
	CHECK_EQ(lru_new(cap, &c), 0);
	model_t m = {.v = calloc(cap, sizeof(digest_t)), .stamp = calloc(cap, 8), .cap = cap};
	size_t mismatches = 0;
	for (size_t i = 0; i < ops; i++) {
		/* Skewed: mostly recent keys, sometimes any key. */
		uint64_t k = (rnd() & 3) ? rnd() % (keys / 4 + 1) : rnd() % keys;
		digest_t d = dg(k);
		bool a = lru_check_insert(c, &d), b = model_check_insert(&m, &d);
		mismatches += a != b;
	}
	CHECK_EQ(mismatches, 0);
	CHECK_EQ(lru_size(c), m.n);
	digest_t *dump = calloc(cap, sizeof(digest_t));
	size_t n = lru_dump(c, dump);
	CHECK_EQ(n, m.n);
	CHECK(n == m.n && !memcmp(dump, m.v, n * sizeof(digest_t)));
	for (size_t i = 0; i < m.n; i++)
		CHECK(lru_contains(c, &m.v[i]));
	free(dump);
	free(m.v);
	free(m.stamp);
	lru_free(c);
}

static void test_eviction_order(void)
{
	lru_t *c;
	CHECK_EQ(lru_new(8, &c), 0);
	digest_t d[12];
	for (int i = 0; i < 12; i++)
		d[i] = dg(1000 + i);
	for (int i = 0; i < 8; i++)
		CHECK(!lru_check_insert(c, &d[i]));
	CHECK_EQ(lru_size(c), 8);
	/* d[0] is the oldest: a hit promotes it (it is in the older half). */
	CHECK(lru_check_insert(c, &d[0]));
	CHECK(!lru_check_insert(c, &d[8])); /* evicts d[1] */
	CHECK(!lru_contains(c, &d[1]));
	CHECK(lru_contains(c, &d[0]));
	/* d[8] is new: a hit does not move it, and changes nothing else. */
	CHECK(lru_check_insert(c, &d[8]));
	CHECK(!lru_check_insert(c, &d[9])); /* evicts d[2] */
	CHECK(!lru_contains(c, &d[2]));
	CHECK_EQ(lru_size(c), 8);
	lru_free(c);

	CHECK_EQ(lru_new(1, &c), 0);
	CHECK(!lru_check_insert(c, &d[0]));
	CHECK(lru_check_insert(c, &d[0]));
	CHECK(!lru_check_insert(c, &d[1]));
	CHECK(!lru_contains(c, &d[0]));
	CHECK(lru_check_insert(c, &d[1]));
	lru_free(c);
	CHECK(lru_new(0, &c) < 0);
}

/* Digests equal in every byte the table hashes, different elsewhere:
 * never a hit for one that was not inserted. */
static void test_no_false_positive(void)
{
	lru_t *c;
	CHECK_EQ(lru_new(1024, &c), 0);
	digest_t base = dg(7);
	for (int i = 0; i < 600; i++) {
		digest_t d = base;
		d.b[0] = i & 0xff;
		d.b[31] = i >> 8;
		CHECK(!lru_check_insert(c, &d));
	}
	for (int i = 0; i < 600; i++) {
		digest_t d = base;
		d.b[0] = i & 0xff;
		d.b[31] = 0x80 | (i >> 8); /* never inserted */
		CHECK(!lru_contains(c, &d));
		d.b[31] = i >> 8;
		CHECK(lru_contains(c, &d));
	}
	/* Now evict through collisions: entries must leave cleanly. */
	for (int i = 0; i < 5000; i++) {
		digest_t d = dg(50000 + i);
		lru_check_insert(c, &d);
	}
	CHECK_EQ(lru_size(c), 1024);
	for (int i = 0; i < 600; i++) {
		digest_t d = base;
		d.b[0] = i & 0xff;
		d.b[31] = i >> 8;
		CHECK(!lru_contains(c, &d));
	}
	for (int i = 5000 - 1024; i < 5000; i++) {
		digest_t d = dg(50000 + i);
		CHECK(lru_contains(c, &d));
	}
	lru_free(c);
}

static void test_many_equals_single(void)
{
	lru_t *a, *b;
	CHECK_EQ(lru_new(5000, &a), 0);
	CHECK_EQ(lru_new(5000, &b), 0);
	size_t n = 200000;
	digest_t *v = malloc(n * sizeof(*v));
	bool *hit = malloc(n);
	for (size_t i = 0; i < n; i++)
		v[i] = dg(rnd() % 12000);
	size_t diff = 0;
	for (size_t i = 0; i < n; i += 777) {
		size_t k = i + 777 > n ? n - i : 777;
		lru_check_insert_many(a, v + i, k, hit + i);
	}
	for (size_t i = 0; i < n; i++)
		diff += hit[i] != lru_check_insert(b, &v[i]);
	CHECK_EQ(diff, 0);
	free(v);
	free(hit);
	lru_free(a);
	lru_free(b);
}

static void test_speed(void)
{
	size_t cap = 1 << 20, n = 8 << 20;
	lru_t *c;
	CHECK_EQ(lru_new(cap, &c), 0);
	digest_t *v = malloc(4096 * sizeof(*v));
	bool hit[4096];
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	size_t hits = 0;
	/* A sliding working set: mostly hits, a steady stream of misses. */
	for (size_t i = 0; i < n; i += 4096) {
		for (size_t k = 0; k < 4096; k++)
			v[k] = dg(i / 8 + rnd() % (cap / 2));
		lru_check_insert_many(c, v, 4096, hit);
		for (size_t k = 0; k < 4096; k++)
			hits += hit[k];
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "lru: %zu lookups (%.0f%% hits) in %.2fs: %.1f M/s, %zu MiB\n", n,
		100.0 * hits / n, s, n / s / 1e6, lru_memory(c) >> 20);
	CHECK(lru_memory(c) < (80u << 20));
	free(v);
	lru_free(c);
}

int main(void)
{
	test_eviction_order();
	test_against_model(1, 5, 2000);
	test_against_model(2, 7, 5000);
	test_against_model(64, 200, 200000);
	test_against_model(1000, 3000, 300000);
	test_no_false_positive();
	test_many_equals_single();
	test_speed();
	UNIT_DONE();
}
