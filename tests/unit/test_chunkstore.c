/* test_chunkstore.c - the chunk directory: layout, batching, atimes,
 * corruption detection, write errors and concurrent puts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/backend.h"
#include "store/blob.h"
#include "store/chunkcache.h"
#include "store/chunkstore.h"
#include "unit.h"

static char tmpdir[] = "/dev/shm/test_chunkstore.XXXXXX";
static char store_path[128];

/* A deterministic, incompressible chunk: seed picks the content.  Every
 * test uses its own seeds, so all can share one store (creating 65536
 * directories is the slowest thing here). */
static void make_chunk(uint64_t seed, size_t len, buf_t *b, digest_t *d)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	b->len = 0;
	/* No CHECK here: stress threads call this, and unit.h is not
	 * thread safe. */
	if (buf_reserve(b, len ? len : 1) < 0)
		abort();
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b->data[i] = x;
	}
	b->len = len;
	digest_of(b->data, len, d);
}

/* The shared store, made by test_create_open. */
static const char *shared_store(void)
{
	return store_path;
}

static void chunk_path(const char *store, const digest_t *d, char *out, size_t n)
{
	char hex[DIGEST_HEX_LEN + 1];
	digest_to_hex(d, hex);
	snprintf(out, n, "%s/%.4s/%s", store, hex, hex);
}

/* Counts d's final file and its temporary files in d's subdirectory. */
static void count_names(const char *store, const digest_t *d, int *finals, int *temps)
{
	char hex[DIGEST_HEX_LEN + 1], sub[300], pfx[DIGEST_HEX_LEN + 8];
	digest_to_hex(d, hex);
	snprintf(sub, sizeof(sub), "%s/%.4s", store, hex);
	snprintf(pfx, sizeof(pfx), "%s.tmp.", hex);
	*finals = *temps = 0;
	DIR *dir = opendir(sub);
	CHECK(dir != NULL);
	if (!dir)
		return;
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, hex))
			(*finals)++;
		else if (!strncmp(de->d_name, pfx, strlen(pfx)))
			(*temps)++;
	}
	closedir(dir);
}

static void write_file(const char *path, const void *data, size_t len);

static void test_create_open(void)
{
	const char *store = store_path;
	snprintf(store_path, sizeof(store_path), "%s/chunks", tmpdir);
	int64_t t0 = mono_ns();
	CHECK_EQ(chunkstore_create(store), 0);
	fprintf(stderr, "chunkstore_create: %.0f ms\n", (mono_ns() - t0) / 1e6);
	char sub[300];
	struct stat st;
	/* Subdirectories appear on first use: an empty store is one directory. */
	snprintf(sub, sizeof(sub), "%s/ab0f", store);
	CHECK(stat(sub, &st) < 0 && errno == ENOENT);
	CHECK(stat(store, &st) == 0 && (st.st_mode & 0777) == 0700);
	/* Rerunning create is harmless. */
	CHECK_EQ(chunkstore_create(store), 0);
	chunkstore_t *cs = NULL;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	CHECK(cs != NULL);
	CHECK_EQ(chunkstore_dirfd(cs, 65536u), -EINVAL);
	int fd = chunkstore_dirfd(cs, 0x1234);
	CHECK(fd >= 0);
	CHECK_EQ(chunkstore_dirfd(cs, 0x1234), fd);
	snprintf(sub, sizeof(sub), "%s/1234", store);
	CHECK(stat(sub, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	CHECK_EQ(chunkstore_sync_count(cs), 0);
	chunkstore_close(cs);
	chunkstore_close(NULL);

	char missing[300];
	snprintf(missing, sizeof(missing), "%s/nope", tmpdir);
	CHECK_EQ(chunkstore_open(missing, &cs), -ENOENT);
	write_file(missing, "x", 1);
	CHECK_EQ(chunkstore_open(missing, &cs), -ENOTDIR);
	unlink(missing);
}

static void test_put_flush_get(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	buf_t data = {0}, out = {0}, raw = {0};
	digest_t d;
	make_chunk(1, 100000, &data, &d);
	char path[300];
	chunk_path(store, &d, path, sizeof(path));

	uint32_t slen = 0;
	bool was_new = false;
	CHECK_EQ(chunkstore_put(cs, &d, data.data, data.len, 1, &slen, &was_new), 0);
	CHECK(was_new);
	CHECK_EQ(slen, BLOB_HEADER_LEN + data.len); /* incompressible: stored raw */
	int finals, temps;
	count_names(store, &d, &finals, &temps);
	CHECK_EQ(finals, 0);
	CHECK_EQ(temps, 1);
	CHECK_EQ(chunkstore_sync_count(cs), 0);

	/* Readable and touchable while pending (backup reads back tree chunks). */
	CHECK_EQ(chunkstore_get(cs, &d, &out), 0);
	CHECK(out.len == data.len && !memcmp(out.data, data.data, data.len));
	CHECK_EQ(chunkstore_touch(cs, &d), 0);

	/* A second put in the same batch finds it pending. */
	uint32_t slen2 = 0;
	CHECK_EQ(chunkstore_put(cs, &d, data.data, data.len, 1, &slen2, &was_new), 0);
	CHECK(!was_new);
	CHECK_EQ(slen2, slen);

	CHECK_EQ(chunkstore_flush(cs), 0);
	CHECK_EQ(chunkstore_sync_count(cs), 2);
	count_names(store, &d, &finals, &temps);
	CHECK_EQ(finals, 1);
	CHECK_EQ(temps, 0);
	struct stat st;
	CHECK(stat(path, &st) == 0 && st.st_size == slen && (st.st_mode & 0777) == 0600);
	CHECK_EQ(chunkstore_new_chunks(cs), 1);
	CHECK_EQ(chunkstore_new_bytes(cs), slen);

	CHECK_EQ(chunkstore_get(cs, &d, &out), 0);
	CHECK(out.len == data.len && !memcmp(out.data, data.data, data.len));
	CHECK_EQ(chunkstore_get_raw(cs, &d, &raw), 0);
	CHECK_EQ(raw.len, slen);
	uint32_t plain_len = 0;
	CHECK_EQ(blob_check(raw.data, raw.len, &plain_len), 0);
	CHECK_EQ(plain_len, data.len);

	/* Compressible data at level 3, and the empty chunk at level 0. */
	memset(data.data, 'x', data.len);
	digest_of(data.data, data.len, &d);
	CHECK_EQ(chunkstore_put(cs, &d, data.data, data.len, 3, &slen, &was_new), 0);
	CHECK(was_new && slen < data.len / 10);
	digest_t empty;
	digest_of("", 0, &empty);
	CHECK_EQ(chunkstore_put(cs, &empty, "", 0, 0, &slen, &was_new), 0);
	CHECK(was_new);
	CHECK_EQ(slen, BLOB_HEADER_LEN);
	CHECK_EQ(chunkstore_flush(cs), 0);
	CHECK_EQ(chunkstore_get(cs, &d, &out), 0);
	CHECK(out.len == data.len && !memcmp(out.data, data.data, data.len));
	CHECK_EQ(chunkstore_get(cs, &empty, &out), 0);
	CHECK_EQ(out.len, 0);

	/* Flushing nothing costs nothing. */
	uint64_t syncs = chunkstore_sync_count(cs);
	CHECK_EQ(chunkstore_flush(cs), 0);
	CHECK_EQ(chunkstore_sync_count(cs), syncs);

	CHECK_EQ(chunkstore_put(cs, &d, data.data, CHUNK_MAX_PLAIN + 1, 0, &slen, &was_new), -EINVAL);
	digest_t missing;
	make_chunk(2, 10, &data, &missing);
	CHECK_EQ(chunkstore_get(cs, &missing, &out), -ENOENT);
	CHECK_EQ(chunkstore_get_raw(cs, &missing, &out), -ENOENT);
	CHECK_EQ(chunkstore_touch(cs, &missing), -ENOENT);
	chunkstore_close(cs);
	buf_free(&data);
	buf_free(&out);
	buf_free(&raw);
}

static void set_atime(const char *path, time_t sec)
{
	struct timespec ts[2] = {{sec, 0}, {0, UTIME_OMIT}};
	CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0);
}

static time_t get_atime(const char *path)
{
	struct stat st;
	CHECK(stat(path, &st) == 0);
	return st.st_atim.tv_sec;
}

static void test_existing_touch(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	buf_t data = {0};
	digest_t d;
	make_chunk(3, 5000, &data, &d);
	char path[300];
	chunk_path(store, &d, path, sizeof(path));
	uint32_t slen, slen2;
	bool was_new;
	CHECK_EQ(chunkstore_put(cs, &d, data.data, data.len, 1, &slen, &was_new), 0);
	CHECK_EQ(chunkstore_flush(cs), 0);

	const time_t old = 1000000000;
	set_atime(path, old);
	CHECK_EQ(get_atime(path), old);
	CHECK_EQ(chunkstore_put(cs, &d, data.data, data.len, 1, &slen2, &was_new), 0);
	CHECK(!was_new);
	CHECK_EQ(slen2, slen);
	CHECK(labs((long)(get_atime(path) - time(NULL))) < 60);
	CHECK_EQ(chunkstore_new_chunks(cs), 1);

	set_atime(path, old);
	CHECK_EQ(chunkstore_touch(cs, &d), 0);
	CHECK(labs((long)(get_atime(path) - time(NULL))) < 60);
	/* Nothing was pending, so nothing to sync. */
	uint64_t syncs = chunkstore_sync_count(cs);
	CHECK_EQ(chunkstore_flush(cs), 0);
	CHECK_EQ(chunkstore_sync_count(cs), syncs);
	chunkstore_close(cs);

	/* A fresh handle has no fan-out subdirectory open: the touch goes
	 * through the store's root, and must still set the atime (and still
	 * tell a missing chunk). */
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	set_atime(path, old);
	CHECK_EQ(chunkstore_touch(cs, &d), 0);
	CHECK(labs((long)(get_atime(path) - time(NULL))) < 60);
	digest_t gone = d;
	gone.b[DIGEST_LEN - 1] ^= 1;
	CHECK_EQ(chunkstore_touch(cs, &gone), -ENOENT);
	gone.b[0] ^= 0x80; /* in a subdirectory never made */
	CHECK_EQ(chunkstore_touch(cs, &gone), -ENOENT);

	/* In a sweep's window (gc.c renamed it to "<hex>.gc" to remove it):
	 * a receive's touch must not call it missing; it takes it back, and
	 * the sweep, finding its "<hex>.gc" gone, keeps it.  Both ways to
	 * the directory: by the root (fresh handle), by the cached fd. */
	char aside[sizeof(path) + 8];
	snprintf(aside, sizeof(aside), "%s.gc", path);
	for (int round = 0; round < 2; round++) {
		set_atime(path, old);
		CHECK(rename(path, aside) == 0);
		CHECK_EQ(chunkstore_touch(cs, &d), 0);
		CHECK(access(aside, F_OK) < 0 && errno == ENOENT);
		CHECK(labs((long)(get_atime(path) - time(NULL))) < 60);
	}
	chunkstore_close(cs);
	buf_free(&data);
}

static void write_file(const char *path, const void *data, size_t len)
{
	/* Chunk directories are made on first use: make this one. */
	char dir[300];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = 0;
		mkdir(dir, 0700);
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

/* A chunk file emptied by damage (a crash before its data reached the
 * disk, a truncation) is missing to touch (a receive or backup stores it
 * again), and so it must be to has too: cairn_chunks_peek (sync -n, have
 * -n) answers with has, cairn_chunks_present with touch, and a dry run's
 * estimate must count what the real run would send. */
static void test_empty_is_missing(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	buf_t data = {0};
	digest_t d;
	make_chunk(77, 3000, &data, &d);
	char path[300];
	chunk_path(store, &d, path, sizeof(path));
	uint32_t slen;
	bool was_new;
	CHECK_EQ(chunkstore_put(cs, &d, data.data, data.len, 1, &slen, &was_new), 0);
	CHECK_EQ(chunkstore_flush(cs), 0);
	CHECK_EQ(chunkstore_has(cs, &d), 0);
	CHECK_EQ(chunkstore_touch(cs, &d), 0);
	CHECK(truncate(path, 0) == 0);
	CHECK_EQ(chunkstore_touch(cs, &d), -ENOENT);
	CHECK_EQ(chunkstore_has(cs, &d), -ENOENT);
	/* Stored again, it is there for both. */
	CHECK_EQ(chunkstore_put(cs, &d, data.data, data.len, 1, &slen, &was_new), 0);
	CHECK_EQ(chunkstore_flush(cs), 0);
	CHECK_EQ(chunkstore_has(cs, &d), 0);
	CHECK_EQ(chunkstore_touch(cs, &d), 0);
	chunkstore_close(cs);
	buf_free(&data);
}

static void test_corruption(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	buf_t data = {0}, out = {0}, raw = {0};
	digest_t a, b, c;
	uint32_t slen;
	bool was_new;
	make_chunk(10, 3000, &data, &a);
	CHECK_EQ(chunkstore_put(cs, &a, data.data, data.len, 1, &slen, &was_new), 0);
	make_chunk(11, 3000, &data, &b);
	CHECK_EQ(chunkstore_put(cs, &b, data.data, data.len, 1, &slen, &was_new), 0);
	CHECK_EQ(chunkstore_flush(cs), 0);
	char pa[300], pb[300], pc[300];
	chunk_path(store, &a, pa, sizeof(pa));
	chunk_path(store, &b, pb, sizeof(pb));

	/* One flipped payload byte. */
	CHECK_EQ(chunkstore_get_raw(cs, &a, &raw), 0);
	raw.data[BLOB_HEADER_LEN + 100] ^= 0x40;
	write_file(pa, raw.data, raw.len);
	CHECK_EQ(chunkstore_get(cs, &a, &out), CAIRN_ECORRUPT);

	/* A valid blob under another digest's name. */
	make_chunk(12, 10, &data, &c);
	chunk_path(store, &c, pc, sizeof(pc));
	CHECK_EQ(chunkstore_get_raw(cs, &b, &raw), 0);
	write_file(pc, raw.data, raw.len);
	CHECK_EQ(chunkstore_get(cs, &b, &out), 0);
	CHECK_EQ(chunkstore_get(cs, &c, &out), CAIRN_ECORRUPT);

	/* Empty, and absurdly large (sparse) files. */
	write_file(pc, "", 0);
	CHECK_EQ(chunkstore_get(cs, &c, &out), CAIRN_ECORRUPT);
	CHECK(truncate(pc, (off_t)CHUNK_MAX_PLAIN * 2) == 0);
	CHECK_EQ(chunkstore_get(cs, &c, &out), CAIRN_ECORRUPT);
	CHECK_EQ(chunkstore_get_raw(cs, &c, &out), CAIRN_ECORRUPT);
	chunkstore_close(cs);
	buf_free(&data);
	buf_free(&out);
	buf_free(&raw);
}

/* Puts n new small chunks and flushes; returns the syncfs calls it took. */
static uint64_t put_n_flush(chunkstore_t *cs, uint64_t seed, int n)
{
	buf_t data = {0};
	uint64_t before = chunkstore_sync_count(cs);
	for (int i = 0; i < n; i++) {
		digest_t d;
		uint32_t slen;
		bool was_new = false;
		make_chunk(seed + i, 200, &data, &d);
		CHECK_EQ(chunkstore_put(cs, &d, data.data, data.len, 1, &slen, &was_new), 0);
		CHECK(was_new);
	}
	CHECK_EQ(chunkstore_flush(cs), 0);
	buf_free(&data);
	return chunkstore_sync_count(cs) - before;
}

static void test_sync_count(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	CHECK_EQ(put_n_flush(cs, 1000, 1), 2);
	CHECK_EQ(put_n_flush(cs, 2000, 100), 2);
	CHECK_EQ(put_n_flush(cs, 3000, 1000), 2);
	CHECK_EQ(chunkstore_new_chunks(cs), 1101);
	chunkstore_close(cs);
}

static void count_all(const char *store, uint64_t seed, int n, int *finals, int *temps)
{
	buf_t data = {0};
	*finals = *temps = 0;
	for (int i = 0; i < n; i++) {
		digest_t d;
		int f, t;
		make_chunk(seed + i, 200, &data, &d);
		count_names(store, &d, &f, &t);
		*finals += f;
		*temps += t;
	}
	buf_free(&data);
}

static void put_range(chunkstore_t *cs, uint64_t seed, int n)
{
	buf_t data = {0};
	for (int i = 0; i < n; i++) {
		digest_t d;
		uint32_t slen;
		bool was_new;
		make_chunk(seed + i, 200, &data, &d);
		CHECK_EQ(chunkstore_put(cs, &d, data.data, data.len, 1, &slen, &was_new), 0);
		/* A full batch goes to the flusher thread: let it finish, so
		 * that each batch is exactly the limit. */
		chunkstore_wait_flushes(cs);
	}
	buf_free(&data);
}

static void test_batch_limits(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	int finals, temps;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	chunkstore_set_batch(cs, 10, 1ull << 30);
	put_range(cs, 5000, 25);
	/* Two full batches went out, one syncfs each; 5 chunks still pending. */
	CHECK_EQ(chunkstore_sync_count(cs), 2);
	count_all(store, 5000, 25, &finals, &temps);
	CHECK_EQ(finals, 20);
	CHECK_EQ(temps, 5);
	CHECK_EQ(chunkstore_flush(cs), 0);
	CHECK_EQ(chunkstore_sync_count(cs), 4);
	count_all(store, 5000, 25, &finals, &temps);
	CHECK_EQ(finals, 25);
	CHECK_EQ(temps, 0);

	/* The byte limit: each blob is 224 bytes, so 3 fill 600 bytes. */
	chunkstore_set_batch(cs, 1000, 600);
	put_range(cs, 6000, 3);
	CHECK_EQ(chunkstore_sync_count(cs), 5);
	count_all(store, 6000, 3, &finals, &temps);
	CHECK_EQ(finals, 3);
	/* Renames of an auto-flushed batch still get their own syncfs. */
	CHECK_EQ(chunkstore_flush(cs), 0);
	CHECK_EQ(chunkstore_sync_count(cs), 6);
	chunkstore_close(cs);
}

static void test_close_unflushed(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	int finals, temps;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	put_range(cs, 7000, 30);
	count_all(store, 7000, 30, &finals, &temps);
	CHECK_EQ(finals, 0);
	CHECK_EQ(temps, 30);
	chunkstore_close(cs);
	count_all(store, 7000, 30, &finals, &temps);
	CHECK_EQ(finals, 0);
	CHECK_EQ(temps, 0);
}

/* ---- write errors: RLIMIT_FSIZE makes write() fail with EFBIG ---- */

static void test_write_error(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	buf_t data = {0};
	digest_t d;
	uint32_t slen;
	bool was_new = true;
	make_chunk(8000, 100000, &data, &d);

	struct rlimit old, small;
	CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
	small = old;
	small.rlim_cur = 4096;
	signal(SIGXFSZ, SIG_IGN);
	CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
	int r = chunkstore_put(cs, &d, data.data, data.len, 0, &slen, &was_new);
	CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
	CHECK_EQ(r, -EFBIG);
	CHECK(!was_new);
	int finals, temps;
	count_names(store, &d, &finals, &temps);
	CHECK_EQ(finals, 0);
	CHECK_EQ(temps, 0);
	CHECK_EQ(chunkstore_flush(cs), 0);
	count_names(store, &d, &finals, &temps);
	CHECK_EQ(finals + temps, 0);
	CHECK_EQ(chunkstore_get(cs, &d, &data), -ENOENT);

	/* The failed put left nothing behind that blocks a retry. */
	make_chunk(8000, 100000, &data, &d);
	CHECK_EQ(chunkstore_put(cs, &d, data.data, data.len, 0, &slen, &was_new), 0);
	CHECK(was_new);
	CHECK_EQ(chunkstore_flush(cs), 0);
	count_names(store, &d, &finals, &temps);
	CHECK_EQ(finals, 1);
	CHECK_EQ(temps, 0);
	chunkstore_close(cs);
	buf_free(&data);
}

/* A final name taken by a non-empty directory makes that one rename fail:
 * the flush reports it, drops the chunk, and still publishes the others. */
static void block_final_name(const char *store, const digest_t *d)
{
	char path[300], inner[320];
	chunk_path(store, d, path, sizeof(path));
	snprintf(inner, sizeof(inner), "%s/x", path);
	CHECK(mkdir(path, 0700) == 0 && mkdir(inner, 0700) == 0);
}

static void test_flush_error(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	int finals, temps;
	buf_t data = {0}, out = {0};
	digest_t x, y, z;
	uint32_t slen;
	bool was_new;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	make_chunk(30000, 300, &data, &x);
	CHECK_EQ(chunkstore_put(cs, &x, data.data, data.len, 1, &slen, &was_new), 0);
	make_chunk(30001, 300, &data, &y);
	CHECK_EQ(chunkstore_put(cs, &y, data.data, data.len, 1, &slen, &was_new), 0);
	block_final_name(store, &x);
	char why[160], want[160], hex[DIGEST_HEX_LEN + 1];
	CHECK(!chunkstore_batch_failure(cs, -EISDIR, why, sizeof(why)));
	CHECK_EQ(chunkstore_flush(cs), -EISDIR);
	/* The failure names the chunk at fault, once. */
	digest_to_hex(&x, hex);
	snprintf(want, sizeof(want), "publishing chunk %s", hex);
	CHECK(chunkstore_batch_failure(cs, -EISDIR, why, sizeof(why)));
	CHECK(!strcmp(why, want));
	CHECK(!chunkstore_batch_failure(cs, -EISDIR, why, sizeof(why)));
	count_names(store, &x, &finals, &temps);
	CHECK_EQ(temps, 0);
	CHECK_EQ(chunkstore_get(cs, &x, &out), CAIRN_ECORRUPT);
	count_names(store, &y, &finals, &temps);
	CHECK(finals == 1 && temps == 0);
	CHECK_EQ(chunkstore_get(cs, &y, &out), 0);
	CHECK_EQ(chunkstore_flush(cs), 0);

	/* Failing inside an automatic flush (on the flusher thread): the put
	 * that filled the batch has returned, so the next flush() reports it,
	 * once, for every thread whose chunks went down with the batch. */
	chunkstore_set_batch(cs, 2, 1ull << 30);
	make_chunk(30002, 300, &data, &x);
	CHECK_EQ(chunkstore_put(cs, &x, data.data, data.len, 1, &slen, &was_new), 0);
	block_final_name(store, &x);
	make_chunk(30003, 300, &data, &z);
	uint64_t syncs = chunkstore_sync_count(cs);
	CHECK_EQ(chunkstore_put(cs, &z, data.data, data.len, 1, &slen, &was_new), 0);
	chunkstore_wait_flushes(cs);
	CHECK_EQ(chunkstore_sync_count(cs), syncs + 1);
	/* Until a flush reports it, further puts fail at once: a backup
	 * stops at the failure, not at its end. */
	make_chunk(30004, 300, &data, &y);
	CHECK_EQ(chunkstore_put(cs, &y, data.data, data.len, 1, &slen, &was_new), -EISDIR);
	CHECK(!was_new);
	/* That put's own chunk is not the one at fault: x is.  A report
	 * of another errno (a put's own failure) does not take it. */
	digest_to_hex(&x, hex);
	snprintf(want, sizeof(want), "publishing chunk %s", hex);
	CHECK(!chunkstore_batch_failure(cs, -ENOSPC, why, sizeof(why)));
	CHECK(chunkstore_batch_failure(cs, -EISDIR, why, sizeof(why)));
	CHECK(!strcmp(why, want));
	CHECK_EQ(chunkstore_flush(cs), -EISDIR);
	CHECK_EQ(chunkstore_flush(cs), 0);
	CHECK(!chunkstore_batch_failure(cs, -EISDIR, why, sizeof(why)));
	CHECK_EQ(chunkstore_put(cs, &y, data.data, data.len, 1, &slen, &was_new), 0);
	CHECK(was_new);
	CHECK_EQ(chunkstore_flush(cs), 0);
	/* A new operation on the handle starts clean without a flush
	 * (a failed backup skips its flush). */
	make_chunk(30005, 300, &data, &x);
	CHECK_EQ(chunkstore_put(cs, &x, data.data, data.len, 1, &slen, &was_new), 0);
	block_final_name(store, &x);
	make_chunk(30006, 300, &data, &z);
	CHECK_EQ(chunkstore_put(cs, &z, data.data, data.len, 1, &slen, &was_new), 0);
	chunkstore_wait_flushes(cs);
	CHECK_EQ(chunkstore_put(cs, &y, data.data, data.len, 1, &slen, &was_new), -EISDIR);
	chunkstore_reset_error(cs);
	CHECK(!chunkstore_batch_failure(cs, -EISDIR, why, sizeof(why)));
	make_chunk(30007, 300, &data, &y);
	CHECK_EQ(chunkstore_put(cs, &y, data.data, data.len, 1, &slen, &was_new), 0);
	CHECK(was_new);
	CHECK_EQ(chunkstore_flush(cs), 0);
	count_names(store, &x, &finals, &temps);
	CHECK_EQ(temps, 0);
	chunkstore_close(cs);
	buf_free(&data);
	buf_free(&out);
}

/* ---- fd budget ---- */

static int count_open_fds(void)
{
	int n = 0;
	DIR *dir = opendir("/proc/self/fd");
	if (!dir)
		return -1;
	while (readdir(dir))
		n++;
	closedir(dir);
	return n - 3; /* ".", "..", and the DIR's own fd */
}

static void test_fd_budget(void)
{
	const char *store = shared_store();
	struct rlimit old, small;
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
	small = old;
	small.rlim_cur = 64;
	CHECK(setrlimit(RLIMIT_NOFILE, &small) == 0);
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	/* 300 chunks land in ~300 subdirectories; most are reached by path
	 * from the store fd once the cache holds its share of the budget. */
	put_range(cs, 9000, 300);
	CHECK_EQ(chunkstore_flush(cs), 0);
	CHECK(count_open_fds() < 40);
	int finals, temps;
	count_all(store, 9000, 300, &finals, &temps);
	CHECK_EQ(finals, 300);
	CHECK_EQ(temps, 0);
	buf_t data = {0}, out = {0};
	int bad = 0;
	for (int i = 0; i < 300; i++) {
		digest_t d;
		make_chunk(9000 + i, 200, &data, &d);
		bad += chunkstore_get(cs, &d, &out) != 0 || out.len != 200 ||
		       memcmp(out.data, data.data, 200);
		bad += chunkstore_touch(cs, &d) != 0;
	}
	CHECK_EQ(bad, 0);
	chunkstore_close(cs);
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
	buf_free(&data);
	buf_free(&out);
}

/* ---- concurrency ---- */

struct racer {
	chunkstore_t *cs;
	pthread_barrier_t *barrier;
	const buf_t *data;
	const digest_t *d;
	bool was_new;
	int r;
};

static void *race_put(void *arg)
{
	struct racer *rc = arg;
	uint32_t slen;
	pthread_barrier_wait(rc->barrier);
	rc->r = chunkstore_put(rc->cs, rc->d, rc->data->data, rc->data->len, 1, &slen,
			       &rc->was_new);
	return NULL;
}

static void test_same_digest_race(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	enum { NT = 4, ROUNDS = 50 };
	buf_t data = {0};
	int bad_new = 0, bad_r = 0, bad_files = 0;
	for (int round = 0; round < ROUNDS; round++) {
		digest_t d;
		make_chunk(10000 + round, 50000, &data, &d);
		pthread_barrier_t barrier;
		pthread_barrier_init(&barrier, NULL, NT);
		struct racer rc[NT];
		pthread_t th[NT];
		for (int i = 0; i < NT; i++) {
			rc[i] = (struct racer){cs, &barrier, &data, &d, false, 0};
			pthread_create(&th[i], NULL, race_put, &rc[i]);
		}
		int nnew = 0;
		for (int i = 0; i < NT; i++) {
			pthread_join(th[i], NULL);
			nnew += rc[i].was_new;
			bad_r += rc[i].r != 0;
		}
		pthread_barrier_destroy(&barrier);
		bad_new += nnew != 1;
		/* Flush every other round so racers meet both pending and
		 * on-disk chunks. */
		if (round % 2)
			CHECK_EQ(chunkstore_flush(cs), 0);
	}
	CHECK_EQ(chunkstore_flush(cs), 0);
	for (int round = 0; round < ROUNDS; round++) {
		digest_t d;
		int finals, temps;
		make_chunk(10000 + round, 50000, &data, &d);
		count_names(store, &d, &finals, &temps);
		bad_files += finals != 1 || temps != 0;
	}
	CHECK_EQ(bad_new, 0);
	CHECK_EQ(bad_r, 0);
	CHECK_EQ(bad_files, 0);
	CHECK_EQ(chunkstore_new_chunks(cs), ROUNDS);
	chunkstore_close(cs);
	buf_free(&data);
}

enum { POOL = 100, PUTS = 300, STRESS_T = 4 };

struct stresser {
	chunkstore_t *cs;
	unsigned seed;
	int nnew, errors;
};

/* Random puts and gets over a shared pool with a tiny batch, so that auto
 * flushes interleave with claims, waits and pending reads. */
static void *stress(void *arg)
{
	struct stresser *st = arg;
	buf_t data = {0}, out = {0};
	for (int i = 0; i < PUTS; i++) {
		digest_t d;
		uint32_t slen;
		bool was_new;
		int k = rand_r(&st->seed) % POOL;
		make_chunk(20000 + k, 1000 + k, &data, &d);
		st->errors += chunkstore_put(st->cs, &d, data.data, data.len, 1, &slen, &was_new) != 0;
		st->nnew += was_new;
		st->errors += chunkstore_get(st->cs, &d, &out) != 0 || out.len != data.len;
	}
	buf_free(&data);
	buf_free(&out);
	return NULL;
}

static void test_stress(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	chunkstore_set_batch(cs, 7, 1ull << 30);
	struct stresser st[STRESS_T];
	pthread_t th[STRESS_T];
	for (int i = 0; i < STRESS_T; i++) {
		st[i] = (struct stresser){cs, 1234u + i, 0, 0};
		pthread_create(&th[i], NULL, stress, &st[i]);
	}
	int nnew = 0, errors = 0;
	for (int i = 0; i < STRESS_T; i++) {
		pthread_join(th[i], NULL);
		nnew += st[i].nnew;
		errors += st[i].errors;
	}
	CHECK_EQ(errors, 0);
	CHECK_EQ(chunkstore_flush(cs), 0);
	CHECK_EQ((uint64_t)nnew, chunkstore_new_chunks(cs));
	buf_t data = {0}, out = {0};
	int present = 0, bad = 0;
	for (int k = 0; k < POOL; k++) {
		digest_t d;
		int finals, temps;
		make_chunk(20000 + k, 1000 + k, &data, &d);
		count_names(store, &d, &finals, &temps);
		bad += finals > 1 || temps != 0;
		present += finals;
		if (finals)
			bad += chunkstore_get(cs, &d, &out) != 0;
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(present, nnew);
	chunkstore_close(cs);
	buf_free(&data);
	buf_free(&out);
}

enum { OVERLAP_T = 4, OVERLAP_PUTS = 250, OVERLAP_BATCH = 7 };

struct writer {
	chunkstore_t *cs;
	int first, errors;
};

/* Puts chunks nobody else puts: every put makes a new chunk. */
static void *write_own(void *arg)
{
	struct writer *w = arg;
	buf_t data = {0};
	for (int i = 0; i < OVERLAP_PUTS; i++) {
		digest_t d;
		uint32_t slen;
		bool was_new;
		make_chunk(w->first + i, 2000, &data, &d);
		w->errors += chunkstore_put(w->cs, &d, data.data, data.len, 1, &slen, &was_new) != 0 ||
			     !was_new;
	}
	buf_free(&data);
	return NULL;
}

/* Full batches are published by the flusher thread while writers go on,
 * but a writer that finds the next batch full too waits for it to be
 * sealed: pending chunks stay within a batch plus one per writer. */
static void test_flush_overlap(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	chunkstore_set_batch(cs, OVERLAP_BATCH, 1ull << 30);
	struct writer w[OVERLAP_T];
	pthread_t th[OVERLAP_T];
	for (int i = 0; i < OVERLAP_T; i++) {
		w[i] = (struct writer){cs, 40000 + i * OVERLAP_PUTS, 0};
		pthread_create(&th[i], NULL, write_own, &w[i]);
	}
	int errors = 0;
	for (int i = 0; i < OVERLAP_T; i++) {
		pthread_join(th[i], NULL);
		errors += w[i].errors;
	}
	CHECK_EQ(errors, 0);
	/* The race took place: chunks became ready during a flush. */
	CHECK(chunkstore_puts_during_flush(cs) > 0);
	CHECK(chunkstore_peak_ready(cs) <= OVERLAP_BATCH + OVERLAP_T);
	CHECK_EQ(chunkstore_flush(cs), 0);
	buf_t data = {0};
	int bad = 0;
	for (int k = 0; k < OVERLAP_T * OVERLAP_PUTS; k++) {
		digest_t d;
		int finals, temps;
		make_chunk(40000 + k, 2000, &data, &d);
		count_names(store, &d, &finals, &temps);
		bad += finals != 1 || temps != 0;
	}
	CHECK_EQ(bad, 0);
	chunkstore_close(cs);
	buf_free(&data);
}

/* ---- reading pending chunks of a remote store during flushes ---- */

enum { PR_CHUNKS = 800, PR_LEN = 256 << 10, PR_BATCH = 8, PR_LOOKBACK = 8 };

struct pending_reader {
	chunkstore_t *cs;
	const digest_t *d;
	atomic_int latest; /* index of the newest chunk put, -1 before */
	atomic_bool done;
	int reads, failed, last_err;
};

/* Reads back the newest chunks, which are pending in a batch or being
 * published by the flusher, until the writer is done. */
static void *read_pending(void *arg)
{
	struct pending_reader *pr = arg;
	buf_t out = {0};
	while (!atomic_load(&pr->done)) {
		int i = atomic_load(&pr->latest);
		for (int k = i; k >= 0 && k > i - PR_LOOKBACK; k--) {
			int r = chunkstore_get(pr->cs, &pr->d[k], &out);
			pr->reads++;
			if (r) {
				pr->failed++;
				pr->last_err = r;
			}
		}
	}
	buf_free(&out);
	return NULL;
}

/* A remote store's published chunk becomes a local marker.  Made by
 * truncating the data file in place, a reader that had just found the
 * chunk pending read half a blob (CAIRN_ECORRUPT, 7-18 reads of 2,300-
 * 4,000 here); the marker is now a new file and the data file goes after
 * it. */
/* A chunk store in tmpdir/NAME whose chunks go to the local "bucket"
 * tmpdir/NAME-bucket (its path in bucket when not NULL). */
static chunkstore_t *bucket_store(const char *name, char *bucket)
{
	char dir[300], b[300], lock[300];
	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
	snprintf(b, sizeof(b), "%s/%s-bucket", tmpdir, name);
	snprintf(lock, sizeof(lock), "%s/%s.lock", tmpdir, name);
	chunkstore_t *cs = NULL;
	backend_t *be = NULL;
	char why[256];
	CHECK_EQ(chunkstore_create(dir), 0);
	CHECK_EQ(chunkstore_open(dir, &cs), 0);
	CHECK_EQ(backend_local_open(b, true, &be, why, sizeof(why)), 0);
	CHECK_EQ(chunkstore_set_backend(cs, be, lock), 0);
	if (bucket)
		strcpy(bucket, b);
	return cs;
}

/* The same with a chunk cache of 1 MiB in the store's directory. */
static chunkstore_t *remote_store(const char *name, chunkcache_t **cache)
{
	chunkstore_t *cs = bucket_store(name, NULL);
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*cache = NULL;
	CHECK_EQ(chunkcache_open(dfd, 1 << 20, cache), 0);
	close(dfd);
	chunkstore_set_cache(cs, *cache);
	return cs;
}

/* One round of test_pending_read_remote in its own store: returns the
 * writer's failed puts and fills *pr (reads, failures) and *during (puts
 * that landed while a flush ran). */
static int pending_read_round(int round, struct pending_reader *pr, uint64_t *during)
{
	char name[64];
	snprintf(name, sizeof(name), "pending-read-%d", round);
	chunkstore_t *cs = bucket_store(name, NULL);
	chunkstore_set_batch(cs, PR_BATCH, 1ull << 40);
	digest_t *d = calloc(PR_CHUNKS, sizeof(*d));
	*pr = (struct pending_reader){.cs = cs, .d = d, .latest = -1};
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, read_pending, pr), 0);
	buf_t data = {0};
	int errors = 0;
	for (int i = 0; i < PR_CHUNKS; i++) {
		uint32_t slen;
		bool was_new;
		make_chunk(70000 + i, PR_LEN, &data, &d[i]);
		errors += chunkstore_put(cs, &d[i], data.data, data.len, 0, &slen, &was_new) != 0;
		atomic_store(&pr->latest, i);
	}
	atomic_store(&pr->done, true);
	pthread_join(th, NULL);
	CHECK_EQ(chunkstore_flush(cs), 0);
	*during = chunkstore_puts_during_flush(cs);
	chunkstore_close(cs);
	buf_free(&data);
	free(d);
	return errors;
}

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

static void test_pending_read_remote(void)
{
	/* The race must take place: reads while batches are published.  A
	 * slow run (a loaded machine) may flush every batch before the next
	 * put; up to five rounds are run until one races.  Under
	 * ThreadSanitizer no round did in three CI runs here (each put is
	 * slowed far more than the flush): that leg looks for data races in
	 * one round, and the check and sanitizer legs require the overlap. */
#ifdef UNDER_TSAN
	const bool need_overlap = false;
#else
	const bool need_overlap = true;
#endif
	struct pending_reader pr;
	uint64_t during = 0;
	int round = 0;
	do {
		CHECK_EQ(pending_read_round(round, &pr, &during), 0);
		if (pr.failed)
			fprintf(stderr, "%d of %d reads failed, the last with %d\n", pr.failed,
				pr.reads, pr.last_err);
		CHECK_EQ(pr.failed, 0);
	} while (need_overlap && ++round < 5 && !(pr.reads > PR_CHUNKS && during > 0));
	CHECK(pr.reads > PR_CHUNKS || !need_overlap);
	CHECK(during > 0 || !need_overlap);
}

/* ---- touch and has while the flusher publishes ---- */

enum { TD_CHUNKS = 3000, TD_BATCH = 3, TD_READERS = 2 };

struct touch_reader {
	chunkstore_t *cs;
	const digest_t *d;
	atomic_int *latest;
	atomic_bool *done;
	int looks, missing;
};

/* Touches (and has()) the newest chunks: each was put, so is pending,
 * being published, or on disk, and must never be reported missing. */
static void *touch_pending(void *arg)
{
	struct touch_reader *t = arg;
	while (!atomic_load(t->done)) {
		int i = atomic_load(t->latest);
		for (int k = i; k >= 0 && k > i - 2 * TD_BATCH; k--) {
			t->missing += chunkstore_touch(t->cs, &t->d[k]) != 0;
			t->missing += chunkstore_has(t->cs, &t->d[k]) != 0;
			t->looks += 2;
		}
	}
	return NULL;
}

static void test_touch_during_flush(void)
{
	const char *store = shared_store();
	chunkstore_t *cs;
	CHECK_EQ(chunkstore_open(store, &cs), 0);
	chunkstore_set_batch(cs, TD_BATCH, 1ull << 30);
	digest_t *d = calloc(TD_CHUNKS, sizeof(*d));
	atomic_int latest = -1;
	atomic_bool done = false;
	struct touch_reader tr[TD_READERS];
	pthread_t th[TD_READERS];
	for (int i = 0; i < TD_READERS; i++) {
		tr[i] = (struct touch_reader){cs, d, &latest, &done, 0, 0};
		pthread_create(&th[i], NULL, touch_pending, &tr[i]);
	}
	buf_t data = {0};
	int errors = 0;
	for (int i = 0; i < TD_CHUNKS; i++) {
		uint32_t slen;
		bool was_new;
		make_chunk(90000 + i, 64, &data, &d[i]);
		errors += chunkstore_put(cs, &d[i], data.data, data.len, 0, &slen, &was_new) != 0;
		atomic_store(&latest, i);
	}
	atomic_store(&done, true);
	int missing = 0, looks = 0;
	for (int i = 0; i < TD_READERS; i++) {
		pthread_join(th[i], NULL);
		missing += tr[i].missing;
		looks += tr[i].looks;
	}
	if (missing)
		fprintf(stderr, "%d of %d looks found a put chunk missing\n", missing, looks);
	CHECK_EQ(errors, 0);
	CHECK_EQ(missing, 0);
	CHECK_EQ(chunkstore_flush(cs), 0);
	chunkstore_close(cs);
	buf_free(&data);
	free(d);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* Each test makes its own store; the timings show where syncfs hurts. */
#define RUN(fn)                                                                   \
	do {                                                                      \
		int64_t t = mono_ns();                                            \
		fn();                                                             \
		fprintf(stderr, "%-24s %6.0f ms\n", #fn, (mono_ns() - t) / 1e6);  \
	} while (0)

/* Two threads whose gets fail on the bucket, one after the other: each
 * must be told its own failure, not the one that happened last.  (Restore
 * writes files on several threads, each naming its own failing chunk.) */
typedef struct remote_fail {
	chunkstore_t *cs;
	digest_t d;
	pthread_barrier_t *bar;
	int first; /* 1: fails before the other thread */
	char msg[600];
	bool got;
} remote_fail_t;

static void *remote_fail_thread(void *arg)
{
	remote_fail_t *f = arg;
	buf_t out = {0};
	if (!f->first)
		pthread_barrier_wait(f->bar);
	int r = chunkstore_get(f->cs, &f->d, &out);
	(void)r;
	if (f->first)
		pthread_barrier_wait(f->bar);
	pthread_barrier_wait(f->bar); /* both have failed */
	f->got = chunkstore_remote_error(f->cs, f->msg, sizeof(f->msg));
	buf_free(&out);
	return NULL;
}

static void test_remote_error_per_thread(void)
{
	char bucket[300], obj[600];
	chunkstore_t *cs = bucket_store("remote-err", bucket);
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 2);
	remote_fail_t f[2];
	char name[2][80];
	for (int i = 0; i < 2; i++) {
		f[i] = (remote_fail_t){.cs = cs, .bar = &bar, .first = i == 0};
		buf_t b = {0};
		make_chunk(9000 + i, 1000, &b, &f[i].d);
		buf_free(&b);
		/* the object is a directory: the get fails, and not as "missing" */
		backend_chunk_name(&f[i].d, name[i]);
		snprintf(obj, sizeof(obj), "%s/%s", bucket, name[i]);
		char cmd[700];
		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", obj);
		CHECK_EQ(system(cmd), 0);
	}
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		CHECK_EQ(thread_start(&th[i], remote_fail_thread, &f[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++) {
		CHECK(f[i].got);
		if (!strstr(f[i].msg, name[i]))
			fprintf(stderr, "thread %d was told: %s\n", i, f[i].msg);
		CHECK(strstr(f[i].msg, name[i]) != NULL);
	}
	/* both failures were reported: nothing is left for anyone else */
	char rest[600];
	CHECK(!chunkstore_remote_error(cs, rest, sizeof(rest)));
	pthread_barrier_destroy(&bar);
	chunkstore_close(cs); /* closes the backend too */
}

/* ---- the cache bypass is the calling thread's ---- */

/* A "verify" thread: sets the bypass on cs, lets main read, clears it. */
struct bypasser {
	chunkstore_t *cs;
	pthread_barrier_t set, read;
};

static void *bypass_thread(void *arg)
{
	struct bypasser *b = arg;
	chunkstore_cache_bypass(b->cs, true);
	pthread_barrier_wait(&b->set);
	pthread_barrier_wait(&b->read);
	chunkstore_cache_bypass(b->cs, false);
	return NULL;
}

/* verify bypasses a remote store's chunk cache.  The flag was the store's:
 * a restore reading the same handle in another thread while a verify ran
 * skipped the cache too (every read a request).  Now it is the thread's:
 * 1. read once (the cache keeps the blob); 2. another thread bypasses,
 * and a read here still hits the cache; 3. a read in a bypassing thread
 * goes to the backend and keeps nothing. */
static void test_cache_bypass_per_thread(void)
{
	chunkcache_t *cache;
	chunkstore_t *cs = remote_store("bypass", &cache);
	backend_t *be = chunkstore_backend(cs);
	buf_t data = {0}, out = {0};
	digest_t d;
	uint32_t slen;
	bool was_new;
	make_chunk(4242, 5000, &data, &d);
	CHECK_EQ(chunkstore_put(cs, &d, data.data, data.len, 0, &slen, &was_new), 0);
	CHECK_EQ(chunkstore_flush(cs), 0);

	/* 1. the first read fills the cache */
	CHECK_EQ(chunkstore_get(cs, &d, &out), 0);
	chunkcache_stats c0, c1, c2;
	chunkcache_get_stats(cache, &c0);
	CHECK_EQ(c0.inserts, 1);

	/* 2. another thread bypasses: this one still hits */
	struct bypasser b = {.cs = cs};
	pthread_barrier_init(&b.set, NULL, 2);
	pthread_barrier_init(&b.read, NULL, 2);
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, bypass_thread, &b), 0);
	pthread_barrier_wait(&b.set);
	CHECK_EQ(chunkstore_get(cs, &d, &out), 0);
	CHECK(out.len == data.len && !memcmp(out.data, data.data, data.len));
	chunkcache_get_stats(cache, &c1);
	CHECK_EQ(c1.hits, c0.hits + 1);
	pthread_barrier_wait(&b.read);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&b.set);
	pthread_barrier_destroy(&b.read);

	/* 3. this thread bypasses: no hit, nothing kept */
	backend_stats s0, s1;
	backend_get_stats(be, &s0);
	chunkstore_cache_bypass(cs, true);
	CHECK_EQ(chunkstore_get(cs, &d, &out), 0);
	chunkstore_cache_bypass(cs, false);
	backend_get_stats(be, &s1);
	chunkcache_get_stats(cache, &c2);
	CHECK_EQ(c2.hits, c1.hits);
	CHECK_EQ(c2.inserts, c1.inserts);
	CHECK_EQ(s1.get, s0.get + 1);
	chunkstore_close(cs);
	buf_free(&data);
	buf_free(&out);
}

/* ---- a closed store's per-thread state does not pass to the next ----
 *
 * The thread-local "last read failed remotely" and cache bypass name a
 * store by its address.  Closing it left them set, so a store opened next
 * at the same address (malloc hands the freed block back) started as if
 * its last read had failed in the bucket, and with its cache bypassed. */

static void test_thread_state_after_close(void)
{
	chunkcache_t *cache;
	chunkstore_t *a = remote_store("tls-a", &cache);
	buf_t data = {0}, out = {0};
	digest_t d, none;
	uint32_t slen;
	bool was_new;
	make_chunk(7070, 3000, &data, &none);
	CHECK_EQ(chunkstore_get(a, &none, &out), -ENOENT); /* the bucket's answer */
	CHECK(chunkstore_read_failed_remotely(a));
	chunkstore_cache_bypass(a, true);
	uintptr_t was = (uintptr_t)a;
	chunkstore_close(a);

	chunkstore_t *b = remote_store("tls-b", &cache);
	if ((uintptr_t)b != was) {
		/* (ASan's quarantine, another allocator: nothing to see) */
		fprintf(stderr, "test_thread_state_after_close: the address was not reused\n");
	} else {
		CHECK(!chunkstore_read_failed_remotely(b));
		make_chunk(7071, 3000, &data, &d);
		CHECK_EQ(chunkstore_put(b, &d, data.data, data.len, 0, &slen, &was_new), 0);
		CHECK_EQ(chunkstore_flush(b), 0);
		CHECK_EQ(chunkstore_get(b, &d, &out), 0);
		CHECK_EQ(chunkstore_get(b, &d, &out), 0);
		chunkcache_stats st;
		chunkcache_get_stats(cache, &st);
		CHECK_EQ(st.inserts, 1); /* the cache was not bypassed */
		CHECK_EQ(st.hits, 1);
	}
	chunkstore_close(b);
	buf_free(&data);
	buf_free(&out);
}

int main(void)
{
	umask(022);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_create_open);
	RUN(test_put_flush_get);
	RUN(test_existing_touch);
	RUN(test_empty_is_missing);
	RUN(test_corruption);
	RUN(test_sync_count);
	RUN(test_batch_limits);
	RUN(test_close_unflushed);
	RUN(test_write_error);
	RUN(test_flush_error);
	RUN(test_fd_budget);
	RUN(test_same_digest_race);
	RUN(test_remote_error_per_thread);
	RUN(test_cache_bypass_per_thread);
	RUN(test_thread_state_after_close);
	RUN(test_stress);
	RUN(test_flush_overlap);
	RUN(test_pending_read_remote);
	RUN(test_touch_during_flush);
	int64_t t0 = mono_ns();
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	fprintf(stderr, "cleanup: %.0f ms\n", (mono_ns() - t0) / 1e6);
	UNIT_DONE();
}
