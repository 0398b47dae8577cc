/* crypt.c - see crypt.h.  Only OpenSSL 3 primitives: RAND_bytes, EVP
 * AES-256-GCM, EVP_MAC HMAC-SHA256, EVP_KDF SCRYPT and HKDF. */
#include "crypt/crypt.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#define KEYBLOB_MAGIC "CRNK"
#define KEYBLOB_VERSION 1
#define KEYBLOB_AAD_LEN 60
#define KDF_NONE 0
#define KDF_SCRYPT 1
#define SALT_LEN 16
/* Bounds a hostile key blob cannot get past: scrypt's memory is
 * 128 * r * N bytes (times p, run one after the other), kept at 1 GiB. */
#define LOGN_MIN 10
#define LOGN_MAX 20
#define R_MAX 16
#define P_MAX 16
#define SCRYPT_MEM_MAX (1ull << 30)
/* scrypt's time grows with N * r * p: at most 8 times the default's
 * (2^17 * 8 * 1), so a hostile blob cannot make one attempt take minutes. */
#define SCRYPT_WORK_MAX (8ull << 20)

int crypt_keyformat_parse(const char *s)
{
	if (!strcmp(s, "passphrase"))
		return CRYPT_KEYFORMAT_PASSPHRASE;
	if (!strcmp(s, "hex"))
		return CRYPT_KEYFORMAT_HEX;
	if (!strcmp(s, "raw"))
		return CRYPT_KEYFORMAT_RAW;
	return CAIRN_EBADPROP;
}

const char *crypt_keyformat_name(int fmt)
{
	switch (fmt) {
	case CRYPT_KEYFORMAT_PASSPHRASE:
		return "passphrase";
	case CRYPT_KEYFORMAT_HEX:
		return "hex";
	case CRYPT_KEYFORMAT_RAW:
		return "raw";
	}
	return "none";
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int crypt_secret_parse(int fmt, const uint8_t *in, size_t len, uint8_t *out, size_t *outlen,
		       const char **why)
{
	/* A key file written by echo ends in a newline; it is not key material
	 * (raw keys are exactly 32 bytes, so they are left alone). */
	if (fmt != CRYPT_KEYFORMAT_RAW && len && in[len - 1] == '\n')
		len--;
	*outlen = 0;
	switch (fmt) {
	case CRYPT_KEYFORMAT_PASSPHRASE:
		if (len < CRYPT_PASSPHRASE_MIN || len > CRYPT_PASSPHRASE_MAX) {
			*why = "passphrase must be 8 to 512 bytes long";
			return CAIRN_EBADPROP;
		}
		memcpy(out, in, len);
		*outlen = len;
		return 0;
	case CRYPT_KEYFORMAT_HEX:
		if (len != 2 * CRYPT_KEY_LEN) {
			*why = "hex key must be exactly 64 hexadecimal digits";
			return CAIRN_EBADPROP;
		}
		for (size_t i = 0; i < CRYPT_KEY_LEN; i++) {
			int hi = hexval(in[2 * i]), lo = hexval(in[2 * i + 1]);
			if (hi < 0 || lo < 0) {
				*why = "hex key must be exactly 64 hexadecimal digits";
				OPENSSL_cleanse(out, i);
				return CAIRN_EBADPROP;
			}
			out[i] = hi << 4 | lo;
		}
		*outlen = CRYPT_KEY_LEN;
		return 0;
	case CRYPT_KEYFORMAT_RAW:
		if (len != CRYPT_KEY_LEN) {
			*why = "raw key must be exactly 32 bytes";
			return CAIRN_EBADPROP;
		}
		memcpy(out, in, len);
		*outlen = len;
		return 0;
	}
	*why = "unknown keyformat";
	return CAIRN_EBADPROP;
}

/* ---- master keys ---- */

/* The gear table: 2048 bytes of HKDF-SHA256(seed) output.  Then, as for the
 * fixed table (chunker.c), entry 0 is re-derived until a run of zero bytes
 * is never cut before max_size: the hash of n zeros is (2^n - 1) * gear[0],
 * and its top 8 bits (the loosest mask any chunk size uses) must never all
 * be zero. */
static int hkdf(const uint8_t *key, size_t klen, const char *info, uint8_t *out, size_t olen)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	EVP_KDF_free(kdf);
	if (!ctx)
		return -EIO;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key, klen),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, strlen(info)),
		OSSL_PARAM_construct_end(),
	};
	int ok = EVP_KDF_derive(ctx, out, olen, params) == 1;
	EVP_KDF_CTX_free(ctx);
	return ok ? 0 : -EIO;
}

static bool zero_run_cuts(uint64_t g0)
{
	uint64_t x = 0;
	for (int n = 0; n < 128; n++) {
		x = (x << 1) + g0;
		if (!(x >> 56))
			return true;
	}
	return false;
}

static int derive_gear(crypt_keys_t *k)
{
	uint8_t raw[256 * 8];
	int r = hkdf(k->seed, CRYPT_KEY_LEN, "cairn fastcdc gear table", raw, sizeof(raw));
	for (int i = 0; r == 0 && i < 256; i++)
		k->gear[i] = get_u64(raw + 8 * i);
	for (unsigned n = 0; r == 0 && zero_run_cuts(k->gear[0]); n++) {
		char info[64];
		snprintf(info, sizeof(info), "cairn fastcdc gear zero %u", n);
		r = hkdf(k->seed, CRYPT_KEY_LEN, info, raw, 8);
		k->gear[0] = get_u64(raw);
	}
	OPENSSL_cleanse(raw, sizeof(raw));
	return r;
}

static int make_mac(crypt_keys_t *k)
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	EVP_MAC_free(mac);
	if (!ctx)
		return -EIO;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
		OSSL_PARAM_construct_end(),
	};
	if (EVP_MAC_init(ctx, k->id, CRYPT_KEY_LEN, params) != 1) {
		EVP_MAC_CTX_free(ctx);
		return -EIO;
	}
	k->mac = ctx;
	return 0;
}

static int keys_finish(crypt_keys_t *k)
{
	int r = derive_gear(k);
	if (r == 0)
		r = make_mac(k);
	return r;
}

void crypt_keys_free(crypt_keys_t *k)
{
	if (!k)
		return;
	EVP_MAC_CTX_free(k->mac);
	if (k->usefd >= 0)
		close(k->usefd); /* the key is no longer in use here */
	OPENSSL_clear_free(k, sizeof(*k));
}

static crypt_keys_t *keys_alloc(void)
{
	crypt_keys_t *k = OPENSSL_zalloc(sizeof(crypt_keys_t));
	if (k)
		k->usefd = -1;
	return k;
}

int crypt_keys_generate(crypt_keys_t **out)
{
	*out = NULL;
	crypt_keys_t *k = keys_alloc();
	if (!k)
		return -ENOMEM;
	int r = RAND_bytes(k->data, CRYPT_KEY_LEN) == 1 && RAND_bytes(k->id, CRYPT_KEY_LEN) == 1 &&
			RAND_bytes(k->seed, CRYPT_KEY_LEN) == 1 &&
			RAND_bytes(k->keyid, CRYPT_KEYID_LEN) == 1
		? 0
		: -EIO;
	if (r == 0)
		r = keys_finish(k);
	if (r < 0)
		crypt_keys_free(k);
	else
		*out = k;
	return r;
}

int crypt_keys_from_master(const uint8_t master[CRYPT_MASTER_LEN],
			   const uint8_t keyid[CRYPT_KEYID_LEN], crypt_keys_t **out)
{
	*out = NULL;
	crypt_keys_t *k = keys_alloc();
	if (!k)
		return -ENOMEM;
	memcpy(k->data, master, CRYPT_KEY_LEN);
	memcpy(k->id, master + CRYPT_KEY_LEN, CRYPT_KEY_LEN);
	memcpy(k->seed, master + 2 * CRYPT_KEY_LEN, CRYPT_KEY_LEN);
	memcpy(k->keyid, keyid, CRYPT_KEYID_LEN);
	int r = keys_finish(k);
	if (r < 0)
		crypt_keys_free(k);
	else
		*out = k;
	return r;
}

void crypt_keys_export(const crypt_keys_t *k, uint8_t out[CRYPT_MASTER_LEN + CRYPT_KEYID_LEN])
{
	memcpy(out, k->data, CRYPT_KEY_LEN);
	memcpy(out + CRYPT_KEY_LEN, k->id, CRYPT_KEY_LEN);
	memcpy(out + 2 * CRYPT_KEY_LEN, k->seed, CRYPT_KEY_LEN);
	memcpy(out + CRYPT_MASTER_LEN, k->keyid, CRYPT_KEYID_LEN);
}

/* ---- AES-256-GCM ---- */

int crypt_nonce(uint8_t nonce[CRYPT_NONCE_LEN])
{
	return RAND_bytes(nonce, CRYPT_NONCE_LEN) == 1 ? 0 : -EIO;
}

static int gcm(bool enc, const uint8_t *key, const uint8_t *aad, size_t aadlen,
	       const uint8_t *in, size_t len, uint8_t *out, const uint8_t *nonce, uint8_t *tag)
{
	if (len > INT_MAX || aadlen > INT_MAX)
		return -EINVAL;
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return -ENOMEM;
	int n, r = -EIO;
	if (EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce, enc) != 1)
		goto out;
	if (aadlen && EVP_CipherUpdate(ctx, NULL, &n, aad, (int)aadlen) != 1)
		goto out;
	if (len && EVP_CipherUpdate(ctx, out, &n, in, (int)len) != 1)
		goto out;
	if (!enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, CRYPT_TAG_LEN, tag) != 1)
		goto out;
	if (EVP_CipherFinal_ex(ctx, out + len, &n) != 1) {
		/* Decryption: the tag did not verify. */
		r = enc ? -EIO : CAIRN_ECORRUPT;
		goto out;
	}
	if (enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, CRYPT_TAG_LEN, tag) != 1)
		goto out;
	r = 0;
out:
	EVP_CIPHER_CTX_free(ctx);
	return r;
}

int crypt_seal(const crypt_keys_t *k, const uint8_t *aad, size_t aadlen, const uint8_t *plain,
	       size_t len, uint8_t *ct, uint8_t nonce[CRYPT_NONCE_LEN], uint8_t tag[CRYPT_TAG_LEN])
{
	int r = crypt_nonce(nonce);
	return r ? r : gcm(true, k->data, aad, aadlen, plain, len, ct, nonce, tag);
}

int crypt_open(const crypt_keys_t *k, const uint8_t *aad, size_t aadlen, const uint8_t *ct,
	       size_t len, const uint8_t nonce[CRYPT_NONCE_LEN], const uint8_t tag[CRYPT_TAG_LEN],
	       uint8_t *plain)
{
	return gcm(false, k->data, aad, aadlen, ct, len, plain, nonce, (uint8_t *)tag);
}

/* ---- keyed chunk ids ---- */

int crypt_chunk_id(const crypt_keys_t *k, const void *data, size_t len, digest_t *out)
{
	/* The keyed context is shared; a duplicate per call keeps this
	 * thread safe without paying the HMAC key setup each time. */
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup(k->mac);
	if (!ctx)
		return -ENOMEM;
	size_t n = 0;
	int ok = EVP_MAC_update(ctx, data, len) == 1 &&
		 EVP_MAC_final(ctx, out->b, &n, DIGEST_LEN) == 1 && n == DIGEST_LEN;
	EVP_MAC_CTX_free(ctx);
	return ok ? 0 : -EIO;
}

/* ---- key blobs ---- */

struct keyblob_hdr {
	uint8_t fmt, kdf, logn;
	uint32_t r, p;
	const uint8_t *salt, *keyid, *nonce, *ct, *tag;
};

static int keyblob_parse(const uint8_t *b, size_t len, struct keyblob_hdr *h)
{
	if (len != CRYPT_KEYBLOB_LEN || memcmp(b, KEYBLOB_MAGIC, 4) || b[4] != KEYBLOB_VERSION)
		return CAIRN_ECORRUPT;
	h->fmt = b[5];
	h->kdf = b[6];
	h->logn = b[7];
	h->r = get_u32(b + 8);
	h->p = get_u32(b + 12);
	h->salt = b + 16;
	h->keyid = b + 32;
	h->nonce = b + 48;
	h->ct = b + KEYBLOB_AAD_LEN;
	h->tag = h->ct + CRYPT_MASTER_LEN;
	if (h->fmt == CRYPT_KEYFORMAT_PASSPHRASE) {
		if (h->kdf != KDF_SCRYPT || h->logn < LOGN_MIN || h->logn > LOGN_MAX || !h->r ||
		    h->r > R_MAX || !h->p || h->p > P_MAX ||
		    128ull * h->r * (1ull << h->logn) > SCRYPT_MEM_MAX ||
		    (1ull << h->logn) * h->r * h->p > SCRYPT_WORK_MAX)
			return CAIRN_ECORRUPT;
	} else if (h->fmt == CRYPT_KEYFORMAT_HEX || h->fmt == CRYPT_KEYFORMAT_RAW) {
		static const uint8_t zero[SALT_LEN];
		if (h->kdf != KDF_NONE || h->logn || h->r || h->p || memcmp(h->salt, zero, SALT_LEN))
			return CAIRN_ECORRUPT;
	} else {
		return CAIRN_ECORRUPT;
	}
	return 0;
}

int crypt_keyblob_check(const uint8_t *blob, size_t len, int *fmt, uint8_t keyid[CRYPT_KEYID_LEN])
{
	struct keyblob_hdr h;
	int r = keyblob_parse(blob, len, &h);
	if (r == 0) {
		if (fmt)
			*fmt = h.fmt;
		if (keyid)
			memcpy(keyid, h.keyid, CRYPT_KEYID_LEN);
	}
	return r;
}

static int scrypt(const uint8_t *pass, size_t plen, const struct keyblob_hdr *h,
		  uint8_t out[CRYPT_KEY_LEN])
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "SCRYPT", NULL);
	EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	EVP_KDF_free(kdf);
	if (!ctx)
		return -EIO;
	uint64_t n = 1ull << h->logn;
	uint32_t r = h->r, p = h->p;
	uint64_t maxmem = 2 * SCRYPT_MEM_MAX;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD, (void *)pass, plen),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)h->salt, SALT_LEN),
		OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &n),
		OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_R, &r),
		OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_P, &p),
		OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_MAXMEM, &maxmem),
		OSSL_PARAM_construct_end(),
	};
	int ok = EVP_KDF_derive(ctx, out, CRYPT_KEY_LEN, params) == 1;
	EVP_KDF_CTX_free(ctx);
	return ok ? 0 : -ENOMEM; /* scrypt fails mostly for want of memory */
}

static int wrapping_key(const struct keyblob_hdr *h, const uint8_t *secret, size_t slen,
			uint8_t out[CRYPT_KEY_LEN])
{
	if (h->kdf == KDF_SCRYPT)
		return scrypt(secret, slen, h, out);
	if (slen != CRYPT_KEY_LEN)
		return CAIRN_EBADKEY;
	memcpy(out, secret, CRYPT_KEY_LEN);
	return 0;
}

static int scrypt_logn(void)
{
	const char *e = getenv("CAIRN_TEST_SCRYPT_LOGN");
	if (e) {
		char *end;
		long v = strtol(e, &end, 10);
		if (end != e && !*end && v >= LOGN_MIN && v <= LOGN_MAX)
			return (int)v;
	}
	return CRYPT_SCRYPT_LOGN;
}

int crypt_wrap(const crypt_keys_t *k, int fmt, const uint8_t *secret, size_t slen,
	       uint8_t out[CRYPT_KEYBLOB_LEN])
{
	memset(out, 0, CRYPT_KEYBLOB_LEN);
	memcpy(out, KEYBLOB_MAGIC, 4);
	out[4] = KEYBLOB_VERSION;
	out[5] = fmt;
	if (fmt == CRYPT_KEYFORMAT_PASSPHRASE) {
		out[6] = KDF_SCRYPT;
		out[7] = scrypt_logn();
		put_u32(out + 8, CRYPT_SCRYPT_R);
		put_u32(out + 12, CRYPT_SCRYPT_P);
		if (RAND_bytes(out + 16, SALT_LEN) != 1)
			return -EIO;
	}
	memcpy(out + 32, k->keyid, CRYPT_KEYID_LEN);
	if (crypt_nonce(out + 48) < 0)
		return -EIO;
	struct keyblob_hdr h;
	int r = keyblob_parse(out, CRYPT_KEYBLOB_LEN, &h);
	if (r < 0)
		return -EINVAL;
	uint8_t wk[CRYPT_KEY_LEN], master[CRYPT_MASTER_LEN + CRYPT_KEYID_LEN];
	r = wrapping_key(&h, secret, slen, wk);
	if (r == 0) {
		crypt_keys_export(k, master);
		r = gcm(true, wk, out, KEYBLOB_AAD_LEN, master, CRYPT_MASTER_LEN,
			out + KEYBLOB_AAD_LEN, h.nonce, out + KEYBLOB_AAD_LEN + CRYPT_MASTER_LEN);
	}
	OPENSSL_cleanse(wk, sizeof(wk));
	OPENSSL_cleanse(master, sizeof(master));
	return r == CAIRN_EBADKEY ? -EINVAL : r;
}

int crypt_unwrap(const uint8_t *blob, size_t len, const uint8_t *secret, size_t slen,
		 crypt_keys_t **out)
{
	*out = NULL;
	struct keyblob_hdr h;
	int r = keyblob_parse(blob, len, &h);
	if (r < 0)
		return r;
	uint8_t wk[CRYPT_KEY_LEN], master[CRYPT_MASTER_LEN];
	r = wrapping_key(&h, secret, slen, wk);
	if (r == 0)
		r = gcm(false, wk, blob, KEYBLOB_AAD_LEN, h.ct, CRYPT_MASTER_LEN, master, h.nonce,
			(uint8_t *)h.tag);
	if (r == CAIRN_ECORRUPT)
		r = CAIRN_EBADKEY;
	if (r == 0)
		r = crypt_keys_from_master(master, h.keyid, out);
	OPENSSL_cleanse(wk, sizeof(wk));
	OPENSSL_cleanse(master, sizeof(master));
	return r;
}
