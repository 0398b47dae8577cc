/* fuzz_stream.c - libFuzzer target for the send-stream parser and cairn_recv.
 *
 * Each input is treated as a send stream and
 *   1. read with the framing reader directly (sr_init, sr_next, the field
 *      readers, sr_check_end), decoding each record's fields the way
 *      recv.c does;
 *   2. received with cairn_recv() into a scratch store (created once per
 *      process in a temporary directory, reused), fed through a memfd;
 *   3. received again after its framing has been re-signed: every record
 *      checksum (XXH3) and the END digest (SHA-256) recomputed.  A fuzzer
 *      cannot guess a 64-bit hash, so without this pass nothing behind the
 *      record checksum (names, counts, chunk lists, holds on the catalog)
 *      would ever be reached.
 * Options come from the input length: bit 0 picks the target (a fresh
 * dataset "fz/t", or "fz/base", which holds base@1 so incremental streams
 * from it can land), bit 1 -F, bit 2 -s, bit 3 -d/-e naming (bit 4: -e).
 * After each input the scratch datasets are reset.  It must never crash,
 * leak, or write outside the scratch directory.
 *
 * The seed corpus (tests/fuzz/corpus/stream) holds real streams made with
 * the CLI from tiny datasets in the store that made BASE_STREAM below
 * (base@1 -> base@2 -> base@3 and a bookmark, a pool with a child, a small
 * volume, a resumed stream), truncated and bit-flipped ones, and re-signed
 * hostile ones (made with the stream tool inside tests/cli/t0810).  The
 * incremental streams have sizes of 1 modulo 32 (bytes appended after END,
 * which recv refuses since stream version 2), so they go into fz/base with no other option.  After a change of the stream format, regenerate
 * both (the replay then warns "BASE_STREAM is not readable"):
 *   T=$(mktemp -d); O=tests/fuzz/corpus/stream; C() { build/cairn -s $T/st "$@"; }
 *   C init; mkdir -p $T/base $T/pool/c1 $T/vol; echo one >$T/base/a; echo two >$T/base/b
 *   C create -o source=$T/base base; C snapshot base@1; C send base@1 >$O/full-base
 *     (BASE_STREAM = these bytes)
 *   echo three >>$T/base/a; C snapshot base@2; C bookmark base@2 base#bm2
 *   echo four >$T/base/c; C snapshot base@3
 *   C send -i @1 base@2 >$O/incr-base-1-2; C send -I @1 base@3 >$O/incr-I-base-1-3
 *   C send -i base#bm2 base@3 >$O/incr-bookmark-base            (pad to size % 32 == 1)
 *   echo p >$T/pool/f; echo c >$T/pool/c1/f; C create -o source=$T/pool -o user:x=1 pool
 *   C create -o compression=zstd-3 pool/c1; C snapshot -r pool@a; echo p2 >>$T/pool/f
 *   C snapshot -r pool@b; C send -R pool@b >$O/full-R-pool; C send -R -i @a pool@b >$O/incr-R-pool
 *   head -c 6000 /dev/urandom >$T/vol/img; C create -V -o source=$T/vol/img vol
 *   C snapshot vol@1; C send vol@1 >$O/full-volume
 *   resumed-base: `send -t` of a `recv -s` cut after full-base's first chunk;
 *   trunc-*: head -c of full-base (300) and full-R-pool (1000); flip-*: one bit
 *   flipped in full-base at 100 and 300, incr-R-pool at 60; resigned-*: t0810's
 *   tool (chunkcontent, snapname "a/../b", garbagetree, snaplistname "x/../").
 *   Raw streams (CRYPTKEY records, the receiver's encryption checks), made in
 *   a keyctl session (as tests/cli/crypt.sh runs): an encryption root enc
 *   over a file a, with a child enc/k, snapshot -r enc@1, a changed,
 *   snapshot -r enc@2; send -w enc@1 >raw-full-enc, send -w -R enc@2
 *   >raw-full-R-enc, send -w -i @1 enc@2 >raw-incr-enc.  skipped-R-pool (the
 *   SKIPPED flag): pool over a file, pool/k, snapshot -r pool@a, create
 *   pool/late, snapshot pool@b and pool/k@b, send -R -s pool@b.
 *
 * libFuzzer build (from the top directory):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 -Iinclude -Ilib \
 *     -D_FILE_OFFSET_BITS=64 -D_GNU_SOURCE -o build/fuzz_stream_lf \
 *     tests/fuzz/fuzz_stream.c $(find lib -name '[a-z]*.c') $(pkg-config --cflags --libs libzstd libxxhash sqlite3 libcrypto) -pthread
 *   build/fuzz_stream_lf -max_total_time=120 -max_len=65536 CORPUS_DIR tests/fuzz/corpus/stream
 * The replay build (no clang) is the Makefile's build/fuzz/fuzz_stream.
 * FUZZ_STREAM_DIR overrides where the scratch store lives (default
 * /dev/shm if writable, else /tmp).
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "cairn.h"
#include "crypt/crypt.h"
#include "repl/stream.h"
#include "util.h"

/* `cairn send base@1` of a dataset with two small files. */
static const uint8_t BASE_STREAM[] = {
	0x43, 0x41, 0x49, 0x52, 0x4e, 0x53, 0x4e, 0x44, 0x02, 0x00, 0x00, 0x00, 0x01, 0x32, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x62,
	0x61, 0x73, 0x65, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xcf, 0x42, 0x2f, 0x1b, 0x05,
	0x31, 0xa2, 0xb9, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0xcc, 0x50, 0x54, 0x7b, 0xd3, 0x7e, 0x94, 0x3d, 0x02, 0x13, 0x00, 0x00, 0x00,
	0x04, 0x00, 0x62, 0x61, 0x73, 0x65, 0x01, 0xcf, 0x36, 0x91, 0x41, 0x8e, 0x52, 0x4e, 0x3d, 0x00,
	0x00, 0x00, 0x00, 0xba, 0x8b, 0xa3, 0x18, 0xae, 0x3e, 0x78, 0x4a, 0x04, 0x95, 0x00, 0x00, 0x00,
	0x04, 0x00, 0x62, 0x61, 0x73, 0x65, 0x01, 0x00, 0x31, 0xcf, 0x42, 0x2f, 0x1b, 0x05, 0x31, 0xa2,
	0xb9, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x18, 0x5c, 0x0e, 0x6b, 0x00, 0x00, 0x00, 0x00, 0xc7, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x6a, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	0x00, 0xb4, 0xa2, 0x0c, 0xc5, 0x94, 0xff, 0x8f, 0x01, 0xe8, 0x5a, 0xbf, 0x92, 0x89, 0x0d, 0x52,
	0x97, 0x42, 0x94, 0x66, 0x6d, 0x11, 0x3b, 0x8a, 0xe7, 0xf1, 0xfe, 0x10, 0xab, 0xe6, 0xa9, 0xdd,
	0xc7, 0x62, 0x01, 0x00, 0x00, 0xa7, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x51, 0x0e, 0x8b,
	0xb1, 0xa7, 0xef, 0xd1, 0xbc, 0xcc, 0xe2, 0x85, 0x83, 0x7d, 0xfe, 0x56, 0x39, 0x73, 0x63, 0xe7,
	0xd3, 0x7b, 0x0f, 0x31, 0xb8, 0xda, 0xd0, 0xc5, 0x6b, 0x28, 0x04, 0x1c, 0xe4, 0x5c, 0x00, 0x00,
	0x00, 0x74, 0x00, 0x00, 0x00, 0x06, 0xfa, 0xc3, 0xe5, 0x13, 0x71, 0x4b, 0xf6, 0x05, 0xc7, 0x00,
	0x00, 0x00, 0xb4, 0xa2, 0x0c, 0xc5, 0x94, 0xff, 0x8f, 0x01, 0xe8, 0x5a, 0xbf, 0x92, 0x89, 0x0d,
	0x52, 0x97, 0x42, 0x94, 0x66, 0x6d, 0x11, 0x3b, 0x8a, 0xe7, 0xf1, 0xfe, 0x10, 0xab, 0xe6, 0xa9,
	0xdd, 0xc7, 0x43, 0x52, 0x4e, 0x42, 0x01, 0x01, 0x00, 0x00, 0x62, 0x01, 0x00, 0x00, 0x8f, 0x00,
	0x00, 0x00, 0x1f, 0x09, 0xfb, 0xde, 0x95, 0xb4, 0xed, 0xba, 0x28, 0xb5, 0x2f, 0xfd, 0x60, 0x62,
	0x00, 0x2d, 0x04, 0x00, 0x04, 0x06, 0x43, 0x41, 0x49, 0x52, 0x4e, 0x54, 0x52, 0x45, 0x01, 0x00,
	0x00, 0x00, 0x50, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0xed, 0x01, 0x00, 0xbc, 0x02, 0xa5, 0x45,
	0x56, 0x0a, 0xed, 0x18, 0x2c, 0xaa, 0xa7, 0x00, 0xfe, 0x00, 0x02, 0x00, 0x00, 0x00, 0x7d, 0x00,
	0x00, 0x00, 0x01, 0x01, 0x00, 0x61, 0xa4, 0x04, 0x30, 0x01, 0x02, 0xc3, 0xf9, 0xc8, 0xc2, 0x83,
	0xa2, 0xb1, 0xf2, 0xf1, 0x89, 0x6f, 0x27, 0xa0, 0x1c, 0xbe, 0x3c, 0xdd, 0xc0, 0xc9, 0xd9, 0x3f,
	0x75, 0x2e, 0x46, 0x39, 0x03, 0x5a, 0x0f, 0x5b, 0x36, 0xf6, 0xe8, 0x08, 0x00, 0x00, 0x00, 0x20,
	0x62, 0x31, 0x04, 0x00, 0x00, 0x00, 0x0f, 0x00, 0x05, 0x50, 0x09, 0xcc, 0x11, 0xcc, 0x0b, 0x7e,
	0x0a, 0x3f, 0xc8, 0x0e, 0x54, 0x06, 0xae, 0x80, 0x05, 0x92, 0x40, 0x1c, 0x20, 0x96, 0x72, 0x0d,
	0x34, 0x1f, 0xea, 0xd9, 0x95, 0x97, 0x9b, 0x41, 0x13, 0xfc, 0x8d, 0xb1, 0xdb, 0x69, 0xa4, 0xec,
	0x2b, 0x05, 0x40, 0x00, 0x00, 0x00, 0xc3, 0xf9, 0xc8, 0xc2, 0x83, 0xa2, 0xb1, 0xf2, 0xf1, 0x89,
	0x6f, 0x27, 0xa0, 0x1c, 0xbe, 0x3c, 0xdd, 0xc0, 0xc9, 0xd9, 0x3f, 0x75, 0x2e, 0x46, 0x39, 0x03,
	0x5a, 0x0f, 0x5b, 0x36, 0xf6, 0xe8, 0x43, 0x52, 0x4e, 0x42, 0x01, 0x00, 0x00, 0x00, 0x08, 0x00,
	0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x1d, 0xc0, 0x24, 0xca, 0x29, 0x84, 0x62, 0x6e, 0x6f, 0x6e,
	0x65, 0x0a, 0x74, 0x77, 0x6f, 0x0a, 0x87, 0x84, 0xc4, 0x5b, 0x98, 0xf3, 0xa6, 0x3b, 0x05, 0x94,
	0x00, 0x00, 0x00, 0x51, 0x0e, 0x8b, 0xb1, 0xa7, 0xef, 0xd1, 0xbc, 0xcc, 0xe2, 0x85, 0x83, 0x7d,
	0xfe, 0x56, 0x39, 0x73, 0x63, 0xe7, 0xd3, 0x7b, 0x0f, 0x31, 0xb8, 0xda, 0xd0, 0xc5, 0x6b, 0x28,
	0x04, 0x1c, 0xe4, 0x43, 0x52, 0x4e, 0x42, 0x01, 0x00, 0x00, 0x00, 0x5c, 0x00, 0x00, 0x00, 0x5c,
	0x00, 0x00, 0x00, 0xae, 0xf6, 0xd7, 0x32, 0xb7, 0xb7, 0x6e, 0x94, 0x43, 0x41, 0x49, 0x52, 0x4e,
	0x49, 0x44, 0x58, 0x01, 0x00, 0x00, 0x00, 0xb4, 0xa2, 0x0c, 0xc5, 0x94, 0xff, 0x8f, 0x01, 0xe8,
	0x5a, 0xbf, 0x92, 0x89, 0x0d, 0x52, 0x97, 0x42, 0x94, 0x66, 0x6d, 0x11, 0x3b, 0x8a, 0xe7, 0xf1,
	0xfe, 0x10, 0xab, 0xe6, 0xa9, 0xdd, 0xc7, 0x62, 0x01, 0x00, 0x00, 0xa7, 0x00, 0x00, 0x00, 0xc3,
	0xf9, 0xc8, 0xc2, 0x83, 0xa2, 0xb1, 0xf2, 0xf1, 0x89, 0x6f, 0x27, 0xa0, 0x1c, 0xbe, 0x3c, 0xdd,
	0xc0, 0xc9, 0xd9, 0x3f, 0x75, 0x2e, 0x46, 0x39, 0x03, 0x5a, 0x0f, 0x5b, 0x36, 0xf6, 0xe8, 0x08,
	0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x95, 0xfd, 0x1f, 0x99, 0xef, 0x13, 0x3c, 0xad, 0x06,
	0x08, 0x00, 0x00, 0x00, 0xcf, 0x42, 0x2f, 0x1b, 0x05, 0x31, 0xa2, 0xb9, 0xf2, 0x20, 0x0c, 0xd9,
	0x56, 0xb4, 0xfb, 0x85, 0x08, 0x2c, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x01, 0x00, 0x00, 0x00, 0x37, 0xb5, 0x16, 0x1e, 0x2e, 0x46, 0x98, 0x34, 0xea, 0x94, 0xc5,
	0x39, 0x76, 0x4f, 0x54, 0x06, 0x56, 0x85, 0x31, 0xe4, 0x16, 0xe4, 0x8b, 0x46, 0xaa, 0x67, 0x84,
	0x7c, 0x45, 0xa9, 0xb8, 0xba, 0xd3, 0x82, 0x53, 0xad, 0xd2, 0x12, 0xbf, 0x2c, 0x07, 0x20, 0x00,
	0x00, 0x00, 0x17, 0xde, 0x37, 0xc4, 0xb6, 0xd4, 0xf8, 0xe4, 0x06, 0x0a, 0x8d, 0xc2, 0x5e, 0x2b,
	0x34, 0x5c, 0xf6, 0x3f, 0x23, 0x1f, 0x92, 0xb9, 0x1c, 0xb3, 0xe5, 0x82, 0xea, 0x17, 0x8c, 0xfc,
	0x84, 0xee, 0xbb, 0x7b, 0xe7, 0xa5, 0x4f, 0x05, 0x09, 0x06,
};

static cairn_store *g_st;
static char g_dir[256];

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void cleanup(void)
{
	cairn_store_close(g_st);
	g_st = NULL;
	if (g_dir[0])
		nftw(g_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int memfd_of(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-stream", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (size && write_full(fd, data, size) < 0)
		abort();
	if (lseek(fd, 0, SEEK_SET) < 0)
		abort();
	return fd;
}

static int recv_bytes(const uint8_t *data, size_t size, const char *target, bool force,
		      bool resumable, char naming)
{
	int fd = memfd_of(data, size);
	cairn_recv_opts o = {.target = target, .force = force, .resumable = resumable,
			     .naming = naming, .fd = fd};
	int r = cairn_recv(g_st, &o);
	close(fd);
	return r;
}

/* fz/base back to holding exactly base@1.  If this build no longer reads
 * BASE_STREAM (the stream format changed: regenerate it and the corpus as
 * described above), fz/base stays an empty dataset and incremental inputs
 * only reach the "source not on the target" path. */
static bool g_nobase;

static void reset_base(void)
{
	cairn_destroy_opts d = {.recursive = true};
	cairn_destroy(g_st, "fz/base", &d);
	if (!g_nobase && recv_bytes(BASE_STREAM, sizeof(BASE_STREAM), "fz/base", false, false, 0)) {
		fprintf(stderr, "fuzz_stream: warning: BASE_STREAM is not readable by this build (%s); "
				"regenerate it and the corpus\n",
			cairn_store_errdetail(g_st));
		g_nobase = true;
	}
	if (g_nobase)
		cairn_dataset_create(g_st, "fz/base", CAIRN_TYPE_FILESYSTEM, NULL, 0, false);
}

static void setup(void)
{
	if (g_st)
		return;
	const char *base = getenv("FUZZ_STREAM_DIR");
	if (!base)
		base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(g_dir, sizeof(g_dir), "%s/fuzz-stream.XXXXXX", base);
	if (!mkdtemp(g_dir))
		abort();
	atexit(cleanup);
	char path[300];
	snprintf(path, sizeof(path), "%s/store", g_dir);
	cairn_init_opts io = {.skip_atime_check = true};
	if (cairn_store_init(path, &io) != 0 || cairn_store_open(path, &g_st) != 0)
		abort();
	if (cairn_dataset_create(g_st, "fz", CAIRN_TYPE_FILESYSTEM, NULL, 0, false) != 0)
		abort();
	reset_base();
}

/* Decodes one record's fields the way recv.c does; the values are dropped. */
static void decode(sreader_t *r, int type)
{
	char s[512], v[8200];
	uint32_t n;
	switch (type) {
	case REC_BEGIN:
		sr_u32(r);
		sr_u64(r);
		sr_str(r, s, sizeof(s));
		for (int i = 0; i < 4; i++)
			sr_u64(r);
		break;
	case REC_DATASET:
		sr_str(r, s, sizeof(s));
		sr_u8(r);
		n = sr_u32(r);
		for (uint32_t i = 0; i < n && !r->bad; i++) {
			sr_str(r, s, sizeof(s));
			sr_str(r, v, sizeof(v));
		}
		break;
	case REC_SNAPLIST:
		sr_str(r, s, sizeof(s));
		n = sr_u32(r);
		for (uint32_t i = 0; i < n && !r->bad; i++) {
			sr_str(r, s, 256);
			sr_u64(r);
		}
		break;
	case REC_SNAP:
		sr_str(r, s, sizeof(s));
		sr_str(r, s, sizeof(s));
		for (int i = 0; i < 6; i++)
			sr_u64(r);
		n = sr_u32(r);
		for (uint32_t i = 0; i < n && !r->bad; i++) {
			free(sr_strdup(r, 255));
			sr_str(r, v, sizeof(v));
		}
		for (int k = 0; k < 2 && !r->bad; k++) {
			n = sr_u32(r);
			sr_bytes(r, (size_t)n * CHUNK_REF_WIRE);
		}
		break;
	case REC_GROUPEND:
		sr_u64(r);
		sr_u32(r);
		sr_bytes(r, DIGEST_LEN);
		break;
	case REC_CHUNK:
		sr_bytes(r, DIGEST_LEN);
		sr_bytes(r, r->rec.len - r->pos);
		break;
	case REC_SNAPEND:
		sr_u64(r);
		break;
	case REC_CRYPTKEY: /* dataset, keyformat, keylocation, wrapped key */
		sr_str(r, s, sizeof(s));
		free(sr_strdup(r, 64));
		free(sr_strdup(r, 4096));
		sr_bytes(r, CRYPT_KEYBLOB_LEN);
		break;
	case REC_END:
		sr_check_end(r);
		return;
	}
	/* a record parsed without overrun consumed exactly its payload or not */
	int done = sr_done(r);
	if (done == 0 && (r->bad || r->pos != r->rec.len))
		abort();
}

static void read_direct(const uint8_t *data, size_t size)
{
	int fd = memfd_of(data, size);
	sreader_t r;
	if (sr_init(&r, fd) == 0) {
		uint64_t last = r.offset;
		for (int i = 0; i < 100000; i++) {
			int t = sr_next(&r);
			if (t < 0) {
				if (t != -EPIPE && t != CAIRN_ECORRUPT)
					abort(); /* only truncation or damage */
				break;
			}
			if (t < 1 || t > REC_MAX_TYPE || r.offset <= last || r.offset > size)
				abort();
			if (r.rec.len > stream_rec_limit(t))
				abort();
			last = r.offset;
			decode(&r, t);
			if (t == REC_END)
				break;
		}
	}
	sr_free(&r);
	close(fd);
}

/* Recomputes every record checksum and the END digest, as far as the
 * framing holds together.  Returns true when something changed. */
static bool resign(uint8_t *p, size_t n)
{
	if (n < STREAM_HEADER_LEN)
		return false;
	bool changed = false;
	size_t off = STREAM_HEADER_LEN;
	while (off + 5 + 8 <= n) {
		uint32_t len = get_u32(p + off + 1);
		if (len > n - off - 13)
			break;
		/* END and GROUPEND end with the digest of everything before them */
		if ((p[off] == REC_END && len == DIGEST_LEN) ||
		    (p[off] == REC_GROUPEND && len == 12 + DIGEST_LEN)) {
			digest_t d;
			digest_of(p, off, &d);
			uint8_t *at = p + off + 5 + len - DIGEST_LEN;
			if (memcmp(at, d.b, DIGEST_LEN)) {
				memcpy(at, d.b, DIGEST_LEN);
				changed = true;
			}
		}
		uint64_t x = XXH3_64bits(p + off, 5 + (size_t)len);
		if (get_u64(p + off + 5 + len) != x) {
			put_u64(p + off + 5 + len, x);
			changed = true;
		}
		off += 13 + (size_t)len;
	}
	return changed;
}

typedef struct names {
	char **v;
	size_t n;
} names_t;

static int collect(const char *name, cairn_type type, void *arg)
{
	(void)type;
	names_t *l = arg;
	if (strncmp(name, "fz/", 3))
		return 0;
	char **v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	l->v[l->n++] = strdup(name);
	return 0;
}

static void reset(bool base_touched, bool resumable)
{
	if (resumable) {
		names_t l = {0};
		cairn_dataset_iter(g_st, collect, &l);
		for (size_t i = 0; i < l.n; i++) {
			cairn_recv_abort(g_st, l.v[i]);
			free(l.v[i]);
		}
		free(l.v);
	}
	cairn_destroy_opts d = {.recursive = true};
	cairn_destroy(g_st, "fz/t", &d);
	if (base_touched)
		reset_base();
}

static void receive(const uint8_t *data, size_t size)
{
	bool into_base = size & 1, force = size & 2, resumable = size & 4;
	char naming = !(size & 8) ? 0 : (size & 16) ? 'e' : 'd';
	int r = recv_bytes(data, size, into_base ? "fz/base" : "fz/t", force, resumable, naming);
	if (r > 0)
		abort();
	/* errors should come with a reason: report each bare code once */
	static int bare[16];
	static size_t nbare;
	if (r < 0 && !cairn_store_errdetail(g_st)[0]) {
		size_t i = 0;
		while (i < nbare && bare[i] != r)
			i++;
		if (i == nbare && nbare < 16) {
			bare[nbare++] = r;
			fprintf(stderr, "fuzz_stream: cairn_recv failed with %d (%s) and no detail\n", r,
				cairn_strerror(r));
		}
	}
	reset(into_base, resumable);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup();
	read_direct(data, size);
	receive(data, size);
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (resign(copy, size)) {
		read_direct(copy, size);
		receive(copy, size);
	}
	free(copy);
	return 0;
}
