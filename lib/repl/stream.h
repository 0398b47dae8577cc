/* stream.h - the framing of send streams (untrusted bytes on receive).
 *
 *   header:  "CAIRNSND" u32 version (2)
 *   record:  u8 type, u32 payload length, payload, u64 XXH3-64 of
 *            (type, length, payload)
 *   the last record is REC_END whose payload is the SHA-256 of every byte
 *   before it (header included); each REC_GROUPEND carries the same kind
 *   of digest, so a group is committed only once every byte before it,
 *   metadata included, has been verified.
 * Integers are little-endian; strings are u16 length + bytes (no NUL).
 * The reader bounds every length by the record type before allocating,
 * and checks each record's checksum before anything acts on it.
 */
#ifndef CAIRN_STREAM_H
#define CAIRN_STREAM_H

#include "util.h"

#define STREAM_MAGIC "CAIRNSND"
#define STREAM_VERSION 2
#define STREAM_HEADER_LEN 12

enum rec_type {
	REC_BEGIN = 1,    /* u32 flags, u64 resume_skip, str top, u64 nsnaps,
			   * u64 toguid (the top's last snapshot), u64 fromguid (the
			   * top's incremental source, 0 = full), u64 resume_txg */
	REC_DATASET = 2,  /* str name, u8 type, u64 guid, u32 nprops, (str, str)... */
	REC_SNAPLIST = 3, /* str dataset, u32 n, (str name, u64 guid)... */
	REC_SNAP = 4,     /* str ds, str snap, u64 guid, u64 fromguid, u64 createtxg
			   * (the sender's: names the group), i64 creation,
			   * u64 referenced, u64 logical, u32 nprops, (str,str)...,
			   * u32 ntree, refs, u32 nidx, refs */
	REC_CHUNK = 5,    /* digest[32], blob bytes */
	REC_SNAPEND = 6,  /* u64 guid */
	REC_END = 7,      /* sha256[32] */
	REC_GROUPEND = 8, /* u64 createtxg, u32 nsnaps, sha256[32] of every byte
			   * before this record: the commit point of a group */
	REC_CRYPTKEY = 9, /* raw streams: str dataset (it becomes an encryption root),
			   * str keyformat, str keylocation, wrapped key blob (crypt.h) */
	REC_MAX_TYPE = 9,
};

#define STREAM_F_RECURSIVE 0x1
#define STREAM_F_RESUMED 0x2
#define STREAM_F_INTERMEDIATES 0x4 /* planned as -I (every snapshot in the range) */
#define STREAM_F_RAW 0x8 /* send -w: encrypted datasets' blobs as stored, with their keys */
/* send -R -s left out a dataset the sender had when the snapshot was
 * taken: the stream's datasets are not all the sender's, so recv -F
 * destroys none of the receiver's on its strength. */
#define STREAM_F_SKIPPED 0x10
/* The flags a resume token records (token.h): how the stream was planned,
 * so that send -t plans the same stream again. */
#define STREAM_F_PLAN                                                                \
	(STREAM_F_RECURSIVE | STREAM_F_INTERMEDIATES | STREAM_F_RAW | STREAM_F_SKIPPED)
#define STREAM_F_ALL                                                                 \
	(STREAM_F_RECURSIVE | STREAM_F_RESUMED | STREAM_F_INTERMEDIATES | STREAM_F_RAW |  \
	 STREAM_F_SKIPPED)

/* The most datasets one stream may declare (DATASET records): send refuses
 * to write more, recv refuses to read more (docs/REPLICATION.md). */
#define STREAM_MAX_DATASETS 65536

/* Largest payload per type; anything bigger is refused before reading it. */
size_t stream_rec_limit(int type);

typedef struct swriter {
	int fd;
	/* When set, a write interrupted by a signal gives up (-EINTR) once
	 * *stop is non-zero, so SIGINT/SIGTERM end a send blocked on a pipe. */
	volatile int *stop;
	void *sha; /* EVP_MD_CTX */
	buf_t rec;
	uint8_t type;
	uint64_t bytes;
	int err;
} swriter_t;

int sw_init(swriter_t *w, int fd);
/* Starts a record; append the payload to w->rec with buf_put_*. */
void sw_begin(swriter_t *w, uint8_t type);
int sw_put_str(swriter_t *w, const char *s);
/* Frames and writes the record. */
int sw_end(swriter_t *w);
/* The SHA-256 of every byte written so far. */
int sw_digest(swriter_t *w, uint8_t out[32]);
/* Writes REC_END. */
int sw_finish(swriter_t *w);
void sw_free(swriter_t *w);

typedef struct sreader {
	int fd;
	void *sha;
	buf_t in;   /* read-ahead */
	size_t inpos;
	buf_t rec;  /* current payload */
	uint8_t type;
	size_t pos; /* parse cursor in rec */
	bool bad;   /* a parse went past the payload */
	uint64_t offset; /* stream bytes consumed */
	bool eof;
	/* When set, nonzero makes reads stop with -EINTR (a signal). */
	volatile int *stop;
	/* With stop: a pipe the signal handler writes to (-1: none).  A read
	 * waits for the stream or this, so a signal that lands between the
	 * check of *stop and the read cannot leave it blocked. */
	int stop_fd;
	/* For REC_END and REC_GROUPEND: the SHA-256 of every byte before the
	 * current record, to compare with the digest it carries. */
	uint8_t prior[32];
} sreader_t;

/* Reads and checks the header. */
int sr_init(sreader_t *r, int fd);
/* Reads the next record: its type (>0), or CAIRN_ECORRUPT (bad length,
 * checksum, type) or -EPIPE (the stream ended mid-way: truncated). */
int sr_next(sreader_t *r);
/* For REC_END: 0 if the stream checksum matches. */
int sr_check_end(sreader_t *r);
/* 1 when the input has no byte left, 0 when it has, <0 on a read error. */
int sr_at_eof(sreader_t *r);
/* A string of at most maxlen bytes, malloc'ed (exactly its size + 1);
 * NULL with r->bad set on overrun, NUL bytes or excess length. */
char *sr_strdup(sreader_t *r, size_t maxlen);
/* Field readers: on overrun they set r->bad and return zero/NULL. */
uint8_t sr_u8(sreader_t *r);
uint32_t sr_u32(sreader_t *r);
uint64_t sr_u64(sreader_t *r);
/* A string copied into out (NUL-terminated, at most outlen-1 bytes);
 * strings with NUL bytes or too long set bad. */
void sr_str(sreader_t *r, char *out, size_t outlen);
const uint8_t *sr_bytes(sreader_t *r, size_t n);
/* 0 when the payload was consumed exactly and nothing overran. */
int sr_done(sreader_t *r);
void sr_free(sreader_t *r);

#endif
