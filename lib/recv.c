/* recv.c - receiving send streams.  The stream is untrusted: records are
 * checksummed and bounded by stream.c; here every name is validated, every
 * chunk's digest is checked before it is stored, every chunk a snapshot
 * lists must exist before the snapshot is committed, and each snapshot is
 * committed in one transaction.  Nothing outside the store is written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "blob.h"
#include "dataset.h"
#include "snapio.h"
#include "snapshot.h"
#include "store.h"
#include "stream.h"
#include "token.h"
#include "writer.h"

#define NAME_BUF 512
#define MAX_CREATED 64
#define CHECKPOINT_CHUNKS 1024
#define CHECKPOINT_BYTES (256ull << 20)

typedef struct rctx {
	cairn_store *st;
	cairn_recv_opts *o;
	sreader_t rd;
	uint32_t flags;
	uint64_t resume_skip;
	char top[NAME_BUF];
	/* datasets of the stream: sender name -> type */
	char (*dsnames)[NAME_BUF];
	uint8_t *dstypes;
	size_t nds;
	/* the snapshot being received */
	char dsname[NAME_BUF], snapname[NAME_BUF], target[NAME_BUF];
	uint64_t guid, fromguid, referenced, logical;
	int64_t creation;
	buf_t tree, idx;
	cairn_prop *sprops;
	size_t nsprops;
	refset_t got; /* chunks received for it (kept by GC via recvstate) */
	uint64_t nchunks, since_checkpoint_chunks, since_checkpoint_bytes;
	bool in_snap;
	buf_t plain;
	int64_t last_progress;
	char created[MAX_CREATED][NAME_BUF]; /* datasets this receive made */
	size_t ncreated;
	uint64_t *dsguids; /* -R: guids of the stream's datasets */
	size_t ndsguids;
	bool reconciled;
	bool state_saved;
} rctx_t;

static int bad(rctx_t *c, const char *what)
{
	return store_err(c->st, CAIRN_ECORRUPT, "stream is invalid at byte %llu: %s",
			 (unsigned long long)c->rd.offset, what);
}

/* ---- names ---- */

/* Maps a sender dataset name to the local name per -d / -e. */
static int map_name(rctx_t *c, const char *sent, char *out)
{
	size_t tl = strlen(c->top);
	if (strncmp(sent, c->top, tl) || (sent[tl] && sent[tl] != '/'))
		return bad(c, "dataset outside the stream's top dataset");
	const char *rel = sent + tl;
	/* -d: all but the first component of the sent name; -e: its last. */
	char base[NAME_BUF + 2] = "";
	if (c->o->naming == 'd' && strchr(c->top, '/'))
		snprintf(base, sizeof(base), "%s", strchr(c->top, '/'));
	else if (c->o->naming == 'e')
		snprintf(base, sizeof(base), "/%s",
			 strrchr(c->top, '/') ? strrchr(c->top, '/') + 1 : c->top);
	int n = snprintf(out, NAME_BUF, "%s%s%s", c->o->target, base, rel);
	char why[256];
	if (n >= NAME_BUF || cairn_name_check(out, false, why, sizeof(why)) < 0)
		return store_err(c->st, CAIRN_EBADNAME, "%s: %s", out,
				 n >= NAME_BUF ? "name too long" : why);
	return 0;
}

/* ---- records ---- */

static int truncated(rctx_t *c)
{
	return store_err(c->st, -EPIPE, "stream truncated after %llu bytes",
			 (unsigned long long)(c->rd.offset + c->rd.in.len - c->rd.inpos));
}

static int read_begin(rctx_t *c)
{
	int t = sr_next(&c->rd);
	if (t == -EPIPE)
		return truncated(c);
	if (t != REC_BEGIN)
		return t < 0 && t != CAIRN_ECORRUPT ? t : bad(c, "no BEGIN record");
	c->flags = sr_u32(&c->rd);
	c->resume_skip = sr_u64(&c->rd);
	sr_str(&c->rd, c->top, sizeof(c->top));
	sr_u64(&c->rd);
	char why[256];
	if (sr_done(&c->rd) || (c->flags & ~(STREAM_F_RECURSIVE | STREAM_F_RESUMED)))
		return bad(c, "malformed BEGIN record");
	if (cairn_name_check(c->top, false, why, sizeof(why)) < 0)
		return bad(c, why);
	if (c->resume_skip && !(c->flags & STREAM_F_RESUMED))
		return bad(c, "resume offset in a stream that is not resumed");
	return 0;
}

static bool excluded(rctx_t *c, const char *prop)
{
	for (size_t i = 0; i < c->o->nexclude; i++)
		if (!strcmp(c->o->exclude[i], prop))
			return true;
	for (size_t i = 0; i < c->o->nprops; i++)
		if (!strcmp(c->o->props[i].name, prop))
			return true; /* -o wins */
	return false;
}

/* Datasets are matched by guid inside the target subtree: a dataset the
 * sender renamed is renamed here too (-R). */
static int find_by_guid(rctx_t *c, uint64_t guid, char *out)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "SELECT name FROM dataset WHERE guid = ?1 AND (name = ?2 OR"
			       " (name > ?2 || '/' AND name < ?2 || '0'))",
			       -1, &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, (int64_t)guid);
	sqlite3_bind_text(q, 2, c->o->target, -1, SQLITE_STATIC);
	int r = -ENOENT;
	if (sqlite3_step(q) == SQLITE_ROW) {
		snprintf(out, NAME_BUF, "%s", sqlite3_column_text(q, 0));
		r = 0;
	}
	sqlite3_finalize(q);
	return r;
}

static int set_guid(rctx_t *c, const char *local, uint64_t guid)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat), "UPDATE dataset SET guid=? WHERE name=?", -1,
			       &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, (int64_t)guid);
	sqlite3_bind_text(q, 2, local, -1, SQLITE_STATIC);
	int r = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(q);
	return r;
}

/* With -R -F: the datasets under the target that the sender no longer has
 * go, once every dataset record has been seen. */
static int reconcile(rctx_t *c)
{
	if (c->reconciled || !(c->flags & STREAM_F_RECURSIVE) || !c->o->force) {
		c->reconciled = true;
		return 0;
	}
	c->reconciled = true;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "SELECT name, guid FROM dataset WHERE name > ?1 || '/' AND"
			       " name < ?1 || '0' ORDER BY name",
			       -1, &q, NULL))
		return -EIO;
	sqlite3_bind_text(q, 1, c->o->target, -1, SQLITE_STATIC);
	char (*gone)[NAME_BUF] = NULL;
	size_t n = 0;
	int r = 0;
	while (r == 0 && sqlite3_step(q) == SQLITE_ROW) {
		uint64_t g = sqlite3_column_int64(q, 1);
		bool keep = false;
		for (size_t i = 0; i < c->ndsguids && !keep; i++)
			keep = c->dsguids[i] == g;
		if (keep)
			continue;
		void *p = realloc(gone, (n + 1) * sizeof(*gone));
		if (!p) {
			r = -ENOMEM;
			break;
		}
		gone = p;
		snprintf(gone[n++], NAME_BUF, "%s", sqlite3_column_text(q, 0));
	}
	sqlite3_finalize(q);
	for (size_t i = 0; r == 0 && i < n; i++) {
		ds_row_t d = {0};
		if (catalog_ds_by_name(c->st->cat, gone[i], &d) < 0)
			continue; /* went with its parent */
		ds_row_clear(&d);
		cairn_destroy_opts dop = {.recursive = true};
		r = cairn_destroy(c->st, gone[i], &dop);
		if (r == 0 && c->o->item)
			c->o->item("destroyed", gone[i], c->o->arg);
	}
	free(gone);
	return r;
}

/* Creates the local dataset for a stream dataset if it does not exist. */
static int ensure_dataset(rctx_t *c, const char *local, int type, cairn_prop *props,
			  size_t np)
{
	ds_row_t d = {0};
	int r = catalog_ds_by_name(c->st->cat, local, &d);
	if (r == 0) {
		if (d.type != type)
			r = store_err(c->st, -EINVAL, "%s: exists as a %s", local,
				      d.type == CAIRN_TYPE_VOLUME ? "volume" : "filesystem");
		ds_row_clear(&d);
		if (r == 0 && np)
			r = cairn_dataset_set(c->st, local, props, np);
		return r;
	}
	if (r != -ENOENT)
		return r;
	/* Below the target, missing parents come from the stream's own tree. */
	r = cairn_dataset_create(c->st, local, type, props, np, strcmp(local, c->o->target) != 0);
	if (r == 0 && c->ncreated < MAX_CREATED)
		snprintf(c->created[c->ncreated++], NAME_BUF, "%s", local);
	if (r == 0 && c->o->item)
		c->o->item("created", local, c->o->arg);
	return r;
}

static int read_dataset(rctx_t *c)
{
	char name[NAME_BUF], local[NAME_BUF], why[256];
	sr_str(&c->rd, name, sizeof(name));
	int type = sr_u8(&c->rd);
	uint64_t guid = sr_u64(&c->rd);
	uint32_t np = sr_u32(&c->rd);
	if (c->rd.bad || np > (c->rd.rec.len - c->rd.pos) / 4 ||
	    (type != CAIRN_TYPE_FILESYSTEM && type != CAIRN_TYPE_VOLUME))
		return bad(c, "malformed DATASET record");
	if (cairn_name_check(name, false, why, sizeof(why)) < 0)
		return bad(c, why);
	cairn_prop *props = calloc(np + c->o->nprops + 1, sizeof(*props));
	char (*kv)[2][8200] = calloc(np + 1, sizeof(*kv));
	int r = props && kv ? 0 : -ENOMEM;
	size_t n = 0;
	for (uint32_t i = 0; r == 0 && i < np; i++) {
		sr_str(&c->rd, kv[i][0], sizeof(kv[i][0]));
		sr_str(&c->rd, kv[i][1], sizeof(kv[i][1]));
		if (!excluded(c, kv[i][0]))
			props[n++] = (cairn_prop){kv[i][0], kv[i][1]};
	}
	for (size_t i = 0; i < c->o->nprops; i++)
		props[n++] = c->o->props[i];
	if (r == 0 && sr_done(&c->rd))
		r = bad(c, "malformed DATASET record");
	if (r == 0)
		r = map_name(c, name, local);
	if (r == 0) {
		char (*dn)[NAME_BUF] = realloc(c->dsnames, (c->nds + 1) * sizeof(*dn));
		uint8_t *dt = dn ? realloc(c->dstypes, c->nds + 1) : NULL;
		if (dn)
			c->dsnames = dn;
		if (!dt)
			r = -ENOMEM;
		else {
			c->dstypes = dt;
			snprintf(c->dsnames[c->nds], NAME_BUF, "%s", name);
			c->dstypes[c->nds++] = type;
		}
	}
	char old[NAME_BUF];
	if (r == 0 && (c->flags & STREAM_F_RECURSIVE) && find_by_guid(c, guid, old) == 0 &&
	    strcmp(old, local)) {
		r = cairn_rename(c->st, old, local, false, true);
		if (r == 0 && c->o->item)
			c->o->item("renamed", local, c->o->arg);
	}
	if (r == 0)
		r = ensure_dataset(c, local, type, props, n);
	if (r == 0 && (c->flags & STREAM_F_RECURSIVE) && c->ncreated &&
	    !strcmp(c->created[c->ncreated - 1], local))
		r = set_guid(c, local, guid);
	if (r == 0) {
		uint64_t *g = realloc(c->dsguids, (c->ndsguids + 1) * sizeof(*g));
		if (!g)
			r = -ENOMEM;
		else
			(c->dsguids = g)[c->ndsguids++] = guid;
	}
	free(props);
	free(kv);
	return r;
}

/* -R: apply snapshot renames (same guid, other name) and, with -F,
 * destroy the snapshots the sender no longer has. */
static int apply_snaplist(rctx_t *c, const ds_row_t *d, const char *local, char (*names)[256],
			  const uint64_t *guids, uint32_t n)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "SELECT name, guid FROM snapshot WHERE dataset=? ORDER BY createtxg", -1,
			       &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, d->id);
	char (*from)[NAME_BUF * 2] = NULL, (*to)[NAME_BUF * 2] = NULL;
	size_t nren = 0, ngone = 0, cap = 0;
	char (*gone)[NAME_BUF * 2] = NULL;
	int r = 0;
	while (r == 0 && sqlite3_step(q) == SQLITE_ROW) {
		const char *ln = (const char *)sqlite3_column_text(q, 0);
		uint64_t g = sqlite3_column_int64(q, 1);
		uint32_t k = 0;
		while (k < n && guids[k] != g)
			k++;
		bool ren = k < n && strcmp(names[k], ln), drop = k == n && c->o->force;
		if (!ren && !drop)
			continue;
		if (nren + ngone == cap) {
			cap = cap ? cap * 2 : 16;
			void *a1 = realloc(from, cap * sizeof(*from)), *a2 = realloc(to, cap * sizeof(*to)),
			     *a3 = realloc(gone, cap * sizeof(*gone));
			if (a1)
				from = a1;
			if (a2)
				to = a2;
			if (a3)
				gone = a3;
			if (!a1 || !a2 || !a3) {
				r = -ENOMEM;
				break;
			}
		}
		if (ren) {
			snprintf(from[nren], sizeof(from[0]), "%s@%s", local, ln);
			snprintf(to[nren++], sizeof(to[0]), "%s@%s", local, names[k]);
		} else {
			snprintf(gone[ngone++], sizeof(gone[0]), "%s@%s", local, ln);
		}
	}
	sqlite3_finalize(q);
	char why[256];
	for (size_t i = 0; r == 0 && i < nren; i++) {
		if (cairn_name_check(to[i], true, why, sizeof(why)) < 0) {
			r = bad(c, why);
			break;
		}
		r = cairn_rename(c->st, from[i], to[i], false, false);
		if (r == 0 && c->o->item)
			c->o->item("renamed", to[i], c->o->arg);
	}
	for (size_t i = 0; r == 0 && i < ngone; i++) {
		cairn_destroy_opts dop = {0};
		r = cairn_destroy(c->st, gone[i], &dop);
		if (r == 0 && c->o->item)
			c->o->item("destroyed", gone[i], c->o->arg);
	}
	free(from);
	free(to);
	free(gone);
	return r;
}

static int read_snaplist(rctx_t *c)
{
	char name[NAME_BUF], local[NAME_BUF];
	sr_str(&c->rd, name, sizeof(name));
	uint32_t n = sr_u32(&c->rd);
	/* Each entry takes at least 10 bytes: bound n by the payload first. */
	if (c->rd.bad || n > (c->rd.rec.len - c->rd.pos) / 10)
		return bad(c, "malformed SNAPLIST record");
	int r = map_name(c, name, local);
	uint64_t *guids = calloc(n + 1, sizeof(*guids));
	char (*names)[256] = calloc(n + 1, 256);
	if (!guids || !names)
		r = -ENOMEM;
	for (uint32_t i = 0; r == 0 && i < n && !c->rd.bad; i++) {
		sr_str(&c->rd, names[i], 256);
		guids[i] = sr_u64(&c->rd);
	}
	if (r == 0 && sr_done(&c->rd))
		r = bad(c, "malformed SNAPLIST record");
	ds_row_t d = {0};
	if (r == 0 && catalog_ds_by_name(c->st->cat, local, &d) == 0)
		r = apply_snaplist(c, &d, local, names, guids, n);
	free(guids);
	free(names);
	ds_row_clear(&d);
	return r;
}

static int read_refs(rctx_t *c, buf_t *out)
{
	uint32_t n = sr_u32(&c->rd);
	if (n > (1u << 20))
		return bad(c, "too many root chunks");
	const uint8_t *p = sr_bytes(&c->rd, (size_t)n * CHUNK_REF_WIRE);
	out->len = 0;
	if (!p)
		return bad(c, "truncated root list");
	for (uint32_t i = 0; i < n; i++) {
		chunk_ref_t ref;
		chunk_ref_unpack(p + i * CHUNK_REF_WIRE, &ref);
		if (!ref.plain_len || ref.plain_len > CHUNK_MAX_PLAIN)
			return bad(c, "root chunk with an impossible length");
	}
	return buf_append(out, p, (size_t)n * CHUNK_REF_WIRE);
}

static void free_sprops(rctx_t *c)
{
	for (size_t i = 0; i < c->nsprops; i++) {
		free((char *)c->sprops[i].name);
		free((char *)c->sprops[i].value);
	}
	free(c->sprops);
	c->sprops = NULL;
	c->nsprops = 0;
}

/* ---- partial state (recv -s) ---- */

static int checkpoint(rctx_t *c)
{
	int r = chunkstore_flush(c->st->cs);
	buf_t roots = {0};
	uint64_t ref = 0, logical = 0;
	if (r == 0)
		r = index_write(c->st->cs, &c->got, &roots, &ref, &logical);
	if (r == 0)
		r = chunkstore_flush(c->st->cs);
	resume_token_t t = {.toguid = c->guid, .fromguid = c->fromguid, .skip = c->nchunks,
			    .flags = c->flags & STREAM_F_RECURSIVE};
	char tok[TOKEN_MAX];
	token_encode(&t, tok);
	uint64_t txg;
	if (r == 0)
		r = catalog_begin_write(c->st->cat, &txg);
	if (r == 0) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(catalog_db(c->st->cat),
				       "INSERT OR REPLACE INTO recvstate(dataset, token, state, idx)"
				       " VALUES(?, ?, ?, ?)",
				       -1, &q, NULL))
			r = -EIO;
		else {
			sqlite3_bind_text(q, 1, c->target, -1, SQLITE_STATIC);
			sqlite3_bind_text(q, 2, tok, -1, SQLITE_STATIC);
			sqlite3_bind_blob(q, 3, "", 0, SQLITE_STATIC);
			sqlite3_bind_blob(q, 4, roots.data ? (void *)roots.data : "", roots.len,
					  SQLITE_STATIC);
			r = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
			sqlite3_finalize(q);
		}
		r = store_txn_end(c->st, r);
	}
	buf_free(&roots);
	c->since_checkpoint_bytes = c->since_checkpoint_chunks = 0;
	return r;
}

static int drop_state(cairn_store *st, const char *dataset)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(st->cat), "DELETE FROM recvstate WHERE dataset=?", -1, &q,
			       NULL))
		return -EIO;
	sqlite3_bind_text(q, 1, dataset, -1, SQLITE_STATIC);
	int r = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(q);
	return r;
}

/* A resumed stream continues a recorded partial receive: same snapshot,
 * same source, same position.  The chunks it had are listed again so GC
 * keeps them. */
static int resume_check(rctx_t *c)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "SELECT token, idx FROM recvstate WHERE dataset=?", -1, &q, NULL))
		return -EIO;
	sqlite3_bind_text(q, 1, c->target, -1, SQLITE_STATIC);
	int r = 0;
	buf_t roots = {0};
	resume_token_t t = {0};
	if (sqlite3_step(q) != SQLITE_ROW)
		r = store_err(c->st, -ENOENT, "%s: no partial receive to resume", c->target);
	else if (token_decode((const char *)sqlite3_column_text(q, 0), &t) < 0)
		r = store_err(c->st, CAIRN_ECORRUPT, "%s: damaged resume state", c->target);
	else
		r = buf_append(&roots, sqlite3_column_blob(q, 1), sqlite3_column_bytes(q, 1));
	sqlite3_finalize(q);
	if (r == 0 && (t.toguid != c->guid || t.fromguid != c->fromguid || t.skip != c->resume_skip))
		r = store_err(c->st, -EINVAL,
			      "%s: the stream does not continue the interrupted receive "
			      "(token from another stream?)",
			      c->target);
	if (r == 0 && roots.len) {
		idxrd_t x;
		idxrd_open(&x, c->st->cs, &roots);
		chunk_ref_t ref;
		int k;
		while ((k = idxrd_next(&x, &ref)) == 1)
			refset_add(&c->got, &ref);
		idxrd_close(&x);
		if (k < 0)
			r = store_err(c->st, k, "%s: partial receive state lost", c->target);
	}
	c->nchunks = t.skip;
	buf_free(&roots);
	return r;
}

/* ---- one snapshot ---- */

static int read_snap(rctx_t *c)
{
	char why[256], full[NAME_BUF * 2];
	sr_str(&c->rd, c->dsname, sizeof(c->dsname));
	sr_str(&c->rd, c->snapname, sizeof(c->snapname));
	c->guid = sr_u64(&c->rd);
	c->fromguid = sr_u64(&c->rd);
	c->creation = (int64_t)sr_u64(&c->rd);
	c->referenced = sr_u64(&c->rd);
	c->logical = sr_u64(&c->rd);
	uint32_t np = sr_u32(&c->rd);
	if (c->rd.bad || np > 4096)
		return bad(c, "malformed SNAP record");
	free_sprops(c);
	c->sprops = calloc(np + 1, sizeof(*c->sprops));
	if (!c->sprops)
		return -ENOMEM;
	for (uint32_t i = 0; i < np && !c->rd.bad; i++) {
		char k[300], v[8200];
		sr_str(&c->rd, k, sizeof(k));
		sr_str(&c->rd, v, sizeof(v));
		if (!strchr(k, ':'))
			return bad(c, "snapshot property is not a user property");
		c->sprops[c->nsprops].name = strdup(k);
		c->sprops[c->nsprops++].value = strdup(v);
	}
	int r = read_refs(c, &c->tree);
	if (r == 0)
		r = read_refs(c, &c->idx);
	uint64_t skip = sr_u64(&c->rd);
	if (r == 0 && sr_done(&c->rd))
		r = bad(c, "malformed SNAP record");
	if (r < 0)
		return r;
	snprintf(full, sizeof(full), "%s@%s", c->dsname, c->snapname);
	if (cairn_name_check(full, true, why, sizeof(why)) < 0 || !c->guid)
		return bad(c, c->guid ? why : "snapshot guid 0");
	r = map_name(c, c->dsname, c->target);
	if (r < 0)
		return r;
	refset_free(&c->got);
	c->nchunks = 0;
	if (c->flags & STREAM_F_RESUMED) {
		if (skip != c->resume_skip)
			return bad(c, "resume offset differs between BEGIN and SNAP");
		r = resume_check(c);
	} else if (skip) {
		return bad(c, "chunks skipped in a stream that is not resumed");
	}
	/* Only a snapshot that passed its checks may leave partial state. */
	c->in_snap = r == 0;
	c->since_checkpoint_bytes = c->since_checkpoint_chunks = 0;
	return r;
}

static int read_chunk(rctx_t *c)
{
	if (!c->in_snap)
		return bad(c, "chunk outside a snapshot");
	const uint8_t *d = sr_bytes(&c->rd, DIGEST_LEN);
	size_t len = c->rd.rec.len - c->rd.pos;
	const uint8_t *blob = sr_bytes(&c->rd, len);
	if (!d || !blob)
		return bad(c, "malformed CHUNK record");
	digest_t dg;
	memcpy(dg.b, d, DIGEST_LEN);
	int r = blob_decode(blob, len, &dg, &c->plain);
	if (r < 0) {
		char hex[DIGEST_HEX_LEN + 1];
		digest_to_hex(&dg, hex);
		return store_err(c->st, CAIRN_ECORRUPT,
				 "stream is invalid at byte %llu: chunk %s does not match its digest",
				 (unsigned long long)c->rd.offset, hex);
	}
	chunk_ref_t ref = {.digest = dg, .plain_len = c->plain.len};
	bool isnew;
	r = chunkstore_put_blob(c->st->cs, &dg, blob, len, &ref.stored_len, &isnew);
	if (r < 0)
		return store_err(c->st, r, "chunk store: %s", strerror(-r));
	if (isnew)
		c->o->chunks_new++;
	if (refset_add(&c->got, &ref) < 0)
		return -ENOMEM;
	c->nchunks++;
	c->since_checkpoint_chunks++;
	c->since_checkpoint_bytes += len;
	if (c->o->resumable && (c->since_checkpoint_chunks >= CHECKPOINT_CHUNKS ||
				c->since_checkpoint_bytes >= CHECKPOINT_BYTES))
		r = checkpoint(c);
	if (c->o->progress && mono_ns() - c->last_progress > 200000000) {
		c->last_progress = mono_ns();
		cairn_progress p = {.phase = "recv", .object = c->target, .bytes = c->rd.offset};
		c->o->progress(&p, c->o->arg);
	}
	return r;
}

/* Every chunk the snapshot lists must be here (the stream carried it, or
 * the incremental source had it); touching it also tells GC it is used.
 * The tree must parse and reference only chunks its index lists, so a
 * committed snapshot always restores. */
static int check_complete(rctx_t *c)
{
	for (size_t i = 0; i < c->tree.len / CHUNK_REF_WIRE; i++) {
		chunk_ref_t ref;
		chunk_ref_unpack(c->tree.data + i * CHUNK_REF_WIRE, &ref);
		if (chunkstore_touch(c->st->cs, &ref.digest) < 0)
			return bad(c, "tree chunk neither sent nor present");
	}
	refset_t listed = {0};
	idxrd_t x;
	idxrd_open(&x, c->st->cs, &c->idx);
	chunk_ref_t ref;
	int k, r = 0;
	while (r == 0 && (k = idxrd_next(&x, &ref)) == 1) {
		if (chunkstore_touch(c->st->cs, &ref.digest) < 0) {
			char hex[DIGEST_HEX_LEN + 1];
			digest_to_hex(&ref.digest, hex);
			r = store_err(c->st, CAIRN_ECORRUPT,
				      "%s@%s: chunk %s was neither sent nor present on the receiver",
				      c->target, c->snapname, hex);
		} else if (refset_add(&listed, &ref) < 0) {
			r = -ENOMEM;
		}
	}
	idxrd_close(&x);
	if (r == 0 && k < 0)
		r = bad(c, "snapshot index unreadable or incomplete");
	snaptree_t t = {0};
	tree_entry_t e = {0};
	bool opened = false;
	if (r == 0) {
		r = snaptree_open(&t, c->st->cs, &c->tree);
		opened = true;
	}
	while (r == 0 && (k = snaptree_next(&t, &e)) == 1) {
		for (uint32_t i = 0; r == 0 && i < e.nextent; i++)
			if (e.extents[i].kind == TREE_EXT_CHUNK &&
			    !refset_has(&listed, &e.extents[i].ref.digest))
				r = bad(c, "tree references a chunk its index does not list");
		if (r == 0 && e.content == TREE_CONTENT_BUNDLE && !refset_has(&listed, &e.bundle.digest))
			r = bad(c, "tree references a bundle its index does not list");
		tree_entry_clear(&e);
	}
	if (r == 0 && k < 0)
		r = bad(c, "snapshot tree stream is not valid");
	if (opened)
		snaptree_close(&t);
	refset_free(&listed);
	return r;
}

/* The local snapshot the stream builds on must be the newest; -F rolls
 * back to it (destroys what is newer). */
static int check_base(rctx_t *c, const ds_row_t *ds, uint64_t txg, int64_t **drop, size_t *ndrop)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(catalog_db(c->st->cat),
			       "SELECT id, name, guid FROM snapshot WHERE dataset=? ORDER BY createtxg",
			       -1, &q, NULL))
		return -EIO;
	sqlite3_bind_int64(q, 1, ds->id);
	int64_t *ids = NULL;
	size_t n = 0, base = SIZE_MAX;
	int r = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		int64_t *p = realloc(ids, (n + 1) * sizeof(*p));
		if (!p) {
			r = -ENOMEM;
			break;
		}
		ids = p;
		if ((uint64_t)sqlite3_column_int64(q, 2) == c->guid)
			r = store_err(c->st, -EEXIST, "%s@%s: already received (same guid)", ds->name,
				      sqlite3_column_text(q, 1));
		if (c->fromguid && (uint64_t)sqlite3_column_int64(q, 2) == c->fromguid)
			base = n;
		ids[n++] = sqlite3_column_int64(q, 0);
	}
	sqlite3_finalize(q);
	(void)txg;
	if (r == 0 && c->fromguid && base == SIZE_MAX)
		r = store_err(c->st, -ENOENT,
			      "%s: the stream's incremental source (guid %llu) is not on the target",
			      ds->name, (unsigned long long)c->fromguid);
	size_t keep = c->fromguid ? base + 1 : 0;
	if (r == 0 && keep < n && !c->o->force)
		r = store_err(c->st, -EEXIST,
			      "%s: has %zu snapshot(s) newer than the stream's source (use -F to "
			      "roll back)",
			      ds->name, n - keep);
	if (r == 0 && keep < n) {
		*drop = malloc((n - keep) * sizeof(int64_t));
		if (!*drop)
			r = -ENOMEM;
		else {
			memcpy(*drop, ids + keep, (n - keep) * sizeof(int64_t));
			*ndrop = n - keep;
		}
	}
	free(ids);
	return r;
}

static int commit_snap(rctx_t *c)
{
	int r = chunkstore_flush(c->st->cs);
	if (r < 0)
		return store_err(c->st, r, "chunk store: %s", strerror(-r));
	r = check_complete(c);
	if (r < 0)
		return r;
	uint64_t txg;
	r = catalog_begin_write(c->st->cat, &txg);
	if (r < 0)
		return store_err(c->st, r, "catalog: %s", catalog_errmsg(c->st->cat));
	ds_row_t ds = {0};
	int64_t *drop = NULL;
	size_t ndrop = 0;
	r = dataset_lookup(c->st, c->target, &ds);
	if (r == 0)
		r = check_base(c, &ds, txg, &drop, &ndrop);
	if (r == 0 && ndrop)
		r = destroy_snapshots_in_txn(c->st, drop, ndrop, NULL);
	uint64_t referenced = 0, logical = 0;
	if (r == 0) {
		/* Space is recomputed from the index, not taken from the stream. */
		idxrd_t x;
		idxrd_open(&x, c->st->cs, &c->idx);
		chunk_ref_t ref;
		int k;
		while ((k = idxrd_next(&x, &ref)) == 1) {
			referenced += ref.stored_len;
			logical += ref.plain_len;
		}
		idxrd_close(&x);
		r = k;
	}
	snapnew_t sn = {.ds = ds.id, .dsname = ds.name, .name = c->snapname, .guid = c->guid,
			.creation = c->creation, .tree = &c->tree, .idx = &c->idx,
			.referenced = referenced, .logical = logical, .props = c->sprops,
			.nprops = c->nsprops};
	if (r == 0)
		r = snapshot_insert(c->st, &sn, txg);
	if (r == 0)
		r = drop_state(c->st, c->target);
	r = store_txn_end(c->st, r);
	if (r == 0 && c->o->item) {
		char full[NAME_BUF * 2];
		snprintf(full, sizeof(full), "%s@%s", c->target, c->snapname);
		c->o->item("received", full, c->o->arg);
	}
	free(drop);
	ds_row_clear(&ds);
	c->in_snap = false;
	c->o->snapshots += r == 0;
	return r;
}

static int read_snapend(rctx_t *c)
{
	uint64_t g = sr_u64(&c->rd);
	if (sr_done(&c->rd) || !c->in_snap || g != c->guid)
		return bad(c, "SNAPEND does not close the open snapshot");
	return commit_snap(c);
}

static int run(rctx_t *c)
{
	int r = read_begin(c);
	while (r == 0) {
		int t = sr_next(&c->rd);
		if (t < 0)
			return t == -EPIPE ? truncated(c)
					   : t == CAIRN_ECORRUPT ? bad(c, "damaged record") : t;
		switch (t) {
		case REC_DATASET:
			r = read_dataset(c);
			break;
		case REC_SNAPLIST:
			r = read_snaplist(c);
			break;
		case REC_SNAP:
			if (c->in_snap)
				return bad(c, "snapshot inside a snapshot");
			r = reconcile(c);
			if (r == 0)
				r = read_snap(c);
			break;
		case REC_CHUNK:
			r = read_chunk(c);
			break;
		case REC_SNAPEND:
			r = read_snapend(c);
			break;
		case REC_END:
			if (c->in_snap)
				return bad(c, "stream ends inside a snapshot");
			if (sr_check_end(&c->rd) < 0)
				return bad(c, "stream checksum mismatch");
			return reconcile(c);
		default:
			return bad(c, "unexpected record");
		}
	}
	return r;
}

/* A failed receive leaves no empty dataset it created itself, unless the
 * partial state lives on it (recv -s). */
static void undo_created(rctx_t *c)
{
	char saved[sizeof(c->st->errdetail)];
	memcpy(saved, c->st->errdetail, sizeof(saved));
	for (size_t i = c->ncreated; i-- > 0;) {
		if (c->state_saved && !strcmp(c->created[i], c->target))
			continue;
		cairn_destroy_opts d = {0};
		cairn_destroy(c->st, c->created[i], &d); /* refuses if it has snapshots or children */
	}
	memcpy(c->st->errdetail, saved, sizeof(saved));
}

int cairn_recv(cairn_store *st, cairn_recv_opts *o)
{
	st->errdetail[0] = 0;
	char why[256];
	if (!o->target || cairn_name_check(o->target, false, why, sizeof(why)) < 0)
		return store_err(st, CAIRN_EBADNAME, "%s: %s", o->target ? o->target : "",
				 o->target ? why : "no target");
	rctx_t c = {.st = st, .o = o};
	int r = sr_init(&c.rd, o->fd);
	if (r < 0) {
		sr_free(&c.rd);
		return store_err(st, r == CAIRN_EVERSION ? r : CAIRN_ECORRUPT, "%s",
				 r == CAIRN_EVERSION ? "stream has an unknown version"
						     : "input is not a cairn send stream");
	}
	r = writer_register(st);
	if (r == 0) {
		r = run(&c);
		if (r < 0 && c.in_snap && o->resumable) {
			char saved[sizeof(st->errdetail)];
			memcpy(saved, st->errdetail, sizeof(saved));
			c.state_saved = checkpoint(&c) == 0;
			memcpy(st->errdetail, saved, sizeof(saved));
		}
		if (r < 0)
			undo_created(&c);
		writer_unregister(st);
	}
	o->bytes = c.rd.offset;
	sr_free(&c.rd);
	refset_free(&c.got);
	buf_free(&c.tree);
	buf_free(&c.idx);
	buf_free(&c.plain);
	free_sprops(&c);
	free(c.dsnames);
	free(c.dstypes);
	free(c.dsguids);
	return r;
}

int cairn_recv_abort(cairn_store *st, const char *dataset)
{
	st->errdetail[0] = 0;
	uint64_t txg;
	int r = catalog_begin_write(st->cat, &txg);
	if (r < 0)
		return store_err(st, r, "catalog: %s", catalog_errmsg(st->cat));
	r = drop_state(st, dataset);
	if (r == 0 && !sqlite3_changes(catalog_db(st->cat)))
		r = store_err(st, -ENOENT, "%s: no partial receive", dataset);
	return store_txn_end(st, r);
}

int cairn_chunks_present(cairn_store *st, const uint8_t (*digests)[32], size_t n,
			 uint8_t *present)
{
	for (size_t i = 0; i < n; i++) {
		digest_t d;
		memcpy(d.b, digests[i], DIGEST_LEN);
		present[i] = chunkstore_touch(st->cs, &d) == 0;
	}
	return 0;
}
