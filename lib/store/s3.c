/* s3.c - S3 requests over libcurl (see s3.h).
 *
 * One engine runs every call: a set of requests, at most `parallel` in
 * flight on a curl multi handle, each retried with backoff when the answer
 * is transient.  The public calls only build requests and read answers;
 * XML answers are parsed with libxml2.
 */
#include "s3.h"

#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <openssl/evp.h>

#define MAX_PARALLEL 64
#define DELETE_BATCH 1000
/* No answer we parse or object we store is bigger; a hostile or broken
 * server cannot make us allocate more. */
#define MAX_RESPONSE (64u << 20)
/* The bound of an error answer's body, whatever the request's bound: S3's
 * error documents are a few hundred bytes, and a meta object's 4 GiB bound
 * is for the object, not for what a broken server sends with a 500. */
#define MAX_ERROR_BODY (1u << 20)
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000

struct s3 {
	char *scheme; /* "http" / "https" */
	char *host;   /* "host[:port]" */
	char *bucket;
	char *userpwd;
	char sigv4[160];
	bool vhost, insecure;
	int parallel, retry_seconds;
	CURLM *multi;
	CURL *easy[MAX_PARALLEL];
	/* The running call's retry clock: when its requests began failing
	 * with no success since (0: none failing). */
	int64_t failing_since;
	s3_stats st;
	char err[512];
	/* The last call failed because the bucket does not exist. */
	bool no_bucket;
};

enum kind { K_PUT, K_GET, K_HEAD, K_LIST, K_DELETE, K_OTHER };

struct req {
	const char *method;
	char *url;
	enum kind kind;
	/* upload body */
	const void *data;
	int fd;
	size_t len, off;
	bool has_body;
	bool only_new; /* If-None-Match: * */
	char sha_hex[65];
	char md5_b64[32];
	/* answer */
	buf_t *out; /* where the body goes (own_out unless the caller's) */
	buf_t own_out;
	uint64_t max_out; /* bound of a 2xx answer (0: MAX_RESPONSE) */
	bool too_big;     /* the answer went over its bound */
	CURL *easy;       /* the handle running it (its status, mid-answer) */
	bool to_fd;       /* a 2xx answer's body goes to out_fd, not out */
	int out_fd;
	uint64_t fd_len;  /* bytes written to out_fd */
	int fd_err;       /* writing out_fd failed: -errno */
	long status;
	CURLcode cc;
	char curlerr[CURL_ERROR_SIZE];
	/* engine state */
	int tries;
	int64_t not_before;
	int result;
	bool done, active;
	struct curl_slist *hdrs;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static bool global_ok;

static void global_init(void)
{
	global_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == 0;
	xmlInitParser();
}

static void set_err(s3_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(s3_t *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
}

const char *s3_errmsg(const s3_t *s)
{
	return s ? s->err : "";
}

void s3_get_stats(const s3_t *s, s3_stats *out)
{
	*out = s->st;
}

/* ---- open / close ---- */

int s3_open(const s3_config *cfg, s3_t **out)
{
	*out = NULL;
	pthread_once(&global_once, global_init);
	if (!global_ok)
		return -ENOMEM;
	if (!cfg->endpoint || !cfg->bucket || !*cfg->bucket || !cfg->access_key ||
	    !cfg->secret_key)
		return -EINVAL;
	const char *sep = strstr(cfg->endpoint, "://");
	if (!sep || (strncmp(cfg->endpoint, "http://", 7) && strncmp(cfg->endpoint, "https://", 8)))
		return -EINVAL;
	s3_t *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->scheme = strndup(cfg->endpoint, sep - cfg->endpoint);
	s->host = strdup(sep + 3);
	s->bucket = strdup(cfg->bucket);
	if (s->host) {
		size_t l = strlen(s->host);
		while (l && s->host[l - 1] == '/')
			s->host[--l] = 0;
	}
	if (asprintf(&s->userpwd, "%s:%s", cfg->access_key, cfg->secret_key) < 0)
		s->userpwd = NULL;
	snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3",
		 cfg->region && *cfg->region ? cfg->region : "us-east-1");
	s->vhost = cfg->virtual_host;
	s->insecure = cfg->insecure;
	s->parallel = cfg->parallel > 0 ? MIN(cfg->parallel, MAX_PARALLEL) : 8;
	s->retry_seconds = cfg->retry_seconds > 0 ? cfg->retry_seconds : 60;
	s->multi = curl_multi_init();
	if (!s->scheme || !s->host || !s->bucket || !s->userpwd || !s->multi || !*s->host) {
		int r = s->host && !*s->host ? -EINVAL : -ENOMEM;
		s3_close(s);
		return r;
	}
	curl_multi_setopt(s->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)s->parallel);
	*out = s;
	return 0;
}

void s3_close(s3_t *s)
{
	if (!s)
		return;
	for (int i = 0; i < MAX_PARALLEL; i++)
		if (s->easy[i])
			curl_easy_cleanup(s->easy[i]);
	if (s->multi)
		curl_multi_cleanup(s->multi);
	free(s->scheme);
	free(s->host);
	free(s->bucket);
	if (s->userpwd)
		explicit_bzero(s->userpwd, strlen(s->userpwd));
	free(s->userpwd);
	free(s);
}

/* ---- URLs ---- */

/* Appends src percent-encoded as SigV4 wants it: unreserved characters as
 * they are, '/' kept when keep_slash, everything else %XX. */
static int append_encoded(buf_t *b, const char *src, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
		char c = *p;
		bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
			     c == '~' || (keep_slash && c == '/');
		char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
		int r = plain ? buf_append(b, &c, 1) : buf_append(b, e, 3);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Builds the URL of key (NULL: the bucket itself) with an already sorted,
 * already encoded query (NULL: none). */
static char *make_url(s3_t *s, const char *key, const char *query)
{
	buf_t b = {0};
	int r = buf_append(&b, s->scheme, strlen(s->scheme));
	if (!r)
		r = buf_append(&b, "://", 3);
	if (!r && s->vhost) {
		r = buf_append(&b, s->bucket, strlen(s->bucket));
		if (!r)
			r = buf_append(&b, ".", 1);
	}
	if (!r)
		r = buf_append(&b, s->host, strlen(s->host));
	if (!r)
		r = buf_append(&b, "/", 1);
	if (!r && !s->vhost) {
		r = append_encoded(&b, s->bucket, false);
		if (!r && key)
			r = buf_append(&b, "/", 1);
	}
	if (!r && key)
		r = append_encoded(&b, key, true);
	if (!r && query) {
		r = buf_append(&b, "?", 1);
		if (!r)
			r = buf_append(&b, query, strlen(query));
	}
	if (!r)
		r = buf_append(&b, "", 1);
	if (r < 0) {
		buf_free(&b);
		return NULL;
	}
	return (char *)b.data;
}

/* ---- hashing of bodies ---- */

static void to_hex(const uint8_t *p, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[p[i] >> 4];
		out[2 * i + 1] = hex[p[i] & 15];
	}
	out[2 * n] = 0;
}

/* SHA-256 (hex) of the body, and its MD5 (base64) when md5 is wanted. */
static int hash_body(struct req *q, bool md5)
{
	EVP_MD_CTX *sha = EVP_MD_CTX_new(), *m = md5 ? EVP_MD_CTX_new() : NULL;
	int r = -ENOMEM;
	if (!sha || (md5 && !m))
		goto out;
	if (!EVP_DigestInit_ex(sha, EVP_sha256(), NULL) ||
	    (m && !EVP_DigestInit_ex(m, EVP_md5(), NULL)))
		goto out;
	if (q->data) {
		EVP_DigestUpdate(sha, q->data, q->len);
		if (m)
			EVP_DigestUpdate(m, q->data, q->len);
	} else {
		uint8_t buf[65536];
		for (size_t off = 0; off < q->len;) {
			ssize_t n = pread_full(q->fd, buf, MIN(sizeof(buf), q->len - off), off);
			if (n <= 0) {
				r = n < 0 ? (int)n : -EIO;
				goto out;
			}
			EVP_DigestUpdate(sha, buf, n);
			if (m)
				EVP_DigestUpdate(m, buf, n);
			off += n;
		}
	}
	uint8_t d[EVP_MAX_MD_SIZE];
	unsigned dl;
	EVP_DigestFinal_ex(sha, d, &dl);
	to_hex(d, dl, q->sha_hex);
	if (m) {
		EVP_DigestFinal_ex(m, d, &dl);
		EVP_EncodeBlock((unsigned char *)q->md5_b64, d, dl);
	}
	r = 0;
out:
	EVP_MD_CTX_free(sha);
	EVP_MD_CTX_free(m);
	return r;
}

/* SHA-256 of the empty string: the payload hash of bodiless requests. */
static const char EMPTY_SHA[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/* ---- curl callbacks ---- */

static int fd_write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct req *q = arg;
	size_t n = size * nmemb;
	long status = 0;
	curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &status);
	uint64_t max = status < 200 || status > 299 ? MAX_ERROR_BODY
		       : q->max_out		    ? q->max_out
						    : MAX_RESPONSE;
	bool fd = q->to_fd && status >= 200 && status <= 299;
	if ((fd ? q->fd_len : q->out->len) + n > max) {
		q->too_big = true;
		return 0; /* curl fails the transfer: CURLE_WRITE_ERROR */
	}
	if (fd) {
		int r = fd_write_all(q->out_fd, ptr, n);
		if (r < 0) {
			q->fd_err = r;
			return 0;
		}
		q->fd_len += n;
		return n;
	}
	return buf_append(q->out, ptr, n) < 0 ? 0 : n;
}

static size_t on_read(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct req *q = arg;
	size_t want = MIN(size * nmemb, q->len - q->off);
	if (!want)
		return 0;
	if (q->data) {
		memcpy(ptr, (const uint8_t *)q->data + q->off, want);
	} else {
		ssize_t n = pread_full(q->fd, ptr, want, q->off);
		if (n <= 0)
			return CURL_READFUNC_ABORT;
		want = n;
	}
	q->off += want;
	return want;
}

static int on_seek(void *arg, curl_off_t offset, int origin)
{
	struct req *q = arg;
	if (origin != SEEK_SET || offset < 0 || (size_t)offset > q->len)
		return CURL_SEEKFUNC_CANTSEEK;
	q->off = offset;
	return CURL_SEEKFUNC_OK;
}

/* ---- the engine ---- */

static int req_headers(struct req *q)
{
	char h[128];
	snprintf(h, sizeof(h), "x-amz-content-sha256: %s", q->has_body ? q->sha_hex : EMPTY_SHA);
	struct curl_slist *l = curl_slist_append(NULL, h);
	if (l && q->md5_b64[0]) {
		snprintf(h, sizeof(h), "Content-MD5: %s", q->md5_b64);
		l = curl_slist_append(l, h);
	}
	if (l && q->has_body && !strcmp(q->method, "POST"))
		l = curl_slist_append(l, "Content-Type: application/xml");
	if (l && q->only_new)
		l = curl_slist_append(l, "If-None-Match: *");
	if (!l)
		return -ENOMEM;
	q->hdrs = l;
	return 0;
}

static void easy_setup(s3_t *s, CURL *e, struct req *q)
{
	curl_easy_reset(e);
	curl_easy_setopt(e, CURLOPT_URL, q->url);
	curl_easy_setopt(e, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(e, CURLOPT_USERPWD, s->userpwd);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, q->hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, q);
	q->easy = e;
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, q->curlerr);
	curl_easy_setopt(e, CURLOPT_PRIVATE, q);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 10L);
	/* A stalled transfer (under 1 byte/s for 30 s) counts as a failure
	 * and is retried like a refused connection. */
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 30L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	/* No waiting for "100 Continue" before a large upload.  (An empty
	 * "Expect:" header would do it too, but libcurl 7.88 signs removed
	 * headers into SigV4 and the server rejects the signature.) */
	curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 1L);
	if (s->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (!strcmp(q->method, "HEAD")) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(q->method, "PUT")) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)q->len);
	} else if (!strcmp(q->method, "POST")) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->len);
	} else if (strcmp(q->method, "GET")) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, q->method);
	}
	if (q->has_body) {
		curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(e, CURLOPT_READDATA, q);
		curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(e, CURLOPT_SEEKDATA, q);
	}
	q->off = 0;
	q->out->len = 0;
	q->too_big = false;
	if (q->to_fd) {
		/* a retry starts the file again */
		q->fd_len = 0;
		q->fd_err = ftruncate(q->out_fd, 0) < 0 || lseek(q->out_fd, 0, SEEK_SET) < 0 ? -errno : 0;
	}
	q->curlerr[0] = 0;
	q->status = 0;
}

/* Parses an S3 answer; NULL when it is not XML or has a DTD.  No S3
 * answer has one, and a hostile one defines entities that expand
 * exponentially once text is read ("billion laughs"): refused before any
 * is.  (Nor XML_PARSE_HUGE: in libxml2 2.9 it turns the amplification
 * check off, and no answer we read comes near the limits it lifts.) */
static xmlDocPtr parse_answer(const buf_t *body)
{
	xmlDocPtr doc = xmlReadMemory((const char *)body->data, body->len, NULL, NULL,
				      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (doc && (doc->intSubset || doc->extSubset)) {
		xmlFreeDoc(doc);
		return NULL;
	}
	return doc;
}

/* Whether doc is the answer asked for: its root element is named want.
 * A 200 with anything else (an <Error> document, a proxy's page) says
 * nothing about the bucket; read as an answer it would be an empty
 * listing or a delete of every key. */
static bool answer_is(s3_t *s, xmlDocPtr doc, const char *call, const char *want)
{
	xmlNodePtr root = xmlDocGetRootElement(doc);
	if (root && !xmlStrcmp(root->name, BAD_CAST want))
		return true;
	char code[64] = "";
	for (xmlNodePtr c = root ? root->children : NULL; c; c = c->next) {
		if (c->type == XML_ELEMENT_NODE && !xmlStrcmp(c->name, BAD_CAST "Code")) {
			xmlChar *t = xmlNodeGetContent(c);
			snprintf(code, sizeof(code), "%s", t ? (char *)t : "");
			xmlFree(t);
			break;
		}
	}
	set_err(s, "%s: the answer is <%.40s>%s%s, not <%s>", call,
		root ? (const char *)root->name : "", code[0] ? " " : "", code, want);
	return false;
}

/* The <Code> and <Message> of an S3 error body, or "" (libxml2 parses
 * it).  Returns whether the body is an <Error> document. */
static bool error_code(const buf_t *body, char *code, size_t codelen, char *msg, size_t msglen)
{
	code[0] = msg[0] = 0;
	if (!body->len)
		return false;
	xmlDocPtr doc = parse_answer(body);
	if (!doc)
		return false;
	xmlNodePtr root = xmlDocGetRootElement(doc);
	bool is_error = root && !xmlStrcmp(root->name, BAD_CAST "Error");
	for (xmlNodePtr n = root ? root->children : NULL; n; n = n->next) {
		if (n->type != XML_ELEMENT_NODE)
			continue;
		bool c = !xmlStrcmp(n->name, BAD_CAST "Code");
		if (!c && xmlStrcmp(n->name, BAD_CAST "Message"))
			continue;
		xmlChar *t = xmlNodeGetContent(n);
		snprintf(c ? code : msg, c ? codelen : msglen, "%s", t ? (char *)t : "");
		xmlFree(t);
	}
	xmlFreeDoc(doc);
	return is_error;
}

/* S3 error codes that say "the server failed this time, try again": the
 * codes of its 500 and 503 answers and of a request it timed out. */
static bool transient_code(const char *code)
{
	return !strcmp(code, "SlowDown") || !strcmp(code, "InternalError") ||
	       !strcmp(code, "ServiceUnavailable") || !strcmp(code, "RequestTimeout");
}

/* Whether a 2xx answer is an S3 <Error> document with a transient code
 * (code and msg filled).  S3 may send 200 before a listing or a
 * DeleteObjects has failed, and then the error in the body: that failure
 * is as transient as the same code with a 500 or 503.  Only those calls
 * answer in XML; an object's body is whatever was stored, never read as
 * an error. */
static bool transient_error_document(const struct req *q, char *code, size_t codelen, char *msg,
				     size_t msglen)
{
	if (q->kind != K_LIST && q->kind != K_DELETE)
		return false;
	return error_code(q->out, code, codelen, msg, msglen) && transient_code(code);
}

/* The S3 name of a request's call, for messages. */
static const char *call_name(const struct req *q)
{
	return q->kind == K_LIST ? "ListObjectsV2" : q->kind == K_DELETE ? "DeleteObjects" : q->method;
}

static bool transient_curl(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	default:
		return false;
	}
}

static int64_t backoff_ns(int tries)
{
	int64_t ms = BACKOFF_FIRST_MS << MIN(tries, 10);
	if (ms > BACKOFF_MAX_MS)
		ms = BACKOFF_MAX_MS;
	/* Jitter: between half and all of it, so parallel retries spread. */
	ms = ms / 2 + (int64_t)(random_u64() % (uint64_t)(ms / 2 + 1));
	return ms * 1000000;
}

static void count_request(s3_t *s, const struct req *q)
{
	switch (q->kind) {
	case K_PUT: s->st.put++; break;
	case K_GET: s->st.get++; break;
	case K_HEAD: s->st.head++; break;
	case K_LIST: s->st.list++; break;
	case K_DELETE: s->st.delete_req++; break;
	default: s->st.other++; break;
	}
}

/* The retry budget, time without progress: whether a retry after wait
 * still fits in retry_seconds since *since (the first failure since the
 * last progress; set to now if 0).  If not, the error says so. */
static bool retry_fits(s3_t *s, int64_t *since, int64_t now, int64_t wait, int tries)
{
	if (!*since)
		*since = now;
	if (now + wait < *since + (int64_t)s->retry_seconds * 1000000000)
		return true;
	size_t l = strlen(s->err);
	snprintf(s->err + l, sizeof(s->err) - l, " (gave up after %d tries, %d s without a success)",
		 tries + 1, s->retry_seconds);
	return false;
}

/* Decides what a finished attempt means: done (result set) or retry. */
static void settle(s3_t *s, struct req *q)
{
	count_request(s, q);
	char code[64], msg[256];
	bool retry = false;
	int r = 0;
	bool ok_status = q->status >= 200 && q->status < 300;
	if (q->fd_err) {
		/* Not retried: the local file, not the server, failed. */
		r = q->fd_err;
		set_err(s, "%s %s: writing the answer to a file: %s", q->method, q->url,
			strerror(-q->fd_err));
	} else if (q->too_big && ok_status) {
		/* Not retried: the same answer would be as big again. */
		r = -EIO;
		set_err(s, "%s %s: answer over %" PRIu64 " bytes", q->method, q->url,
			q->max_out ? q->max_out : (uint64_t)MAX_RESPONSE);
	} else if (q->cc != CURLE_OK && !q->too_big) {
		retry = transient_curl(q->cc);
		r = -EIO;
		set_err(s, "%s %s: %s", q->method, q->url,
			q->curlerr[0] ? q->curlerr : curl_easy_strerror(q->cc));
	} else if (ok_status && transient_error_document(q, code, sizeof(code), msg, sizeof(msg))) {
		retry = true;
		r = -EIO;
		set_err(s, "%s %s: HTTP %ld with an <Error> document: %s%s%s", call_name(q), q->url,
			q->status, code, msg[0] ? ": " : "", msg);
	} else if (ok_status) {
		if (q->has_body)
			s->st.bytes_up += q->len;
		s->st.bytes_down += q->out->len + q->fd_len;
		s->failing_since = 0; /* progress: the budget is whole again */
		q->done = true;
		q->result = 0;
		return;
	} else {
		/* (An error body over its bound was cut: the status decides.) */
		if (q->too_big) {
			code[0] = 0;
			snprintf(msg, sizeof(msg), "a body over %u bytes, not read", MAX_ERROR_BODY);
		} else {
			error_code(q->out, code, sizeof(code), msg, sizeof(msg));
		}
		/* (ConditionalRequestConflict: a conditional write that raced
		 * another on the same key; the retry gets the verdict.) */
		retry = q->status == 500 || q->status == 502 || q->status == 503 ||
			q->status == 504 || q->status == 429 || transient_code(code) ||
			!strcmp(code, "ConditionalRequestConflict");
		/* Only a missing key is a missing object.  Any other 404 (no
		 * such bucket: a wrong name, prefix or endpoint) is the store
		 * being out of reach, which no reader may take for absence.
		 * A HEAD's 404 has no body to say which: HEAD only decides
		 * whether to upload, and the upload then fails on a missing
		 * bucket.  A GET's 404 without an S3 error code (a web server
		 * at a wrong endpoint) is not a missing key either. */
		bool head = !strcmp(q->method, "HEAD");
		bool no_key = q->status == 404 &&
			      (!strcmp(code, "NoSuchKey") || (!code[0] && head));
		/* A conditional write: 412 is "the key exists"; a server
		 * without conditional writes says 501 (NotImplemented). */
		bool taken = q->status == 412 && q->only_new;
		bool no_cond = q->only_new && (q->status == 501 || !strcmp(code, "NotImplemented"));
		r = no_key	 ? -ENOENT
		    : taken	 ? -EEXIST
		    : no_cond	 ? -EOPNOTSUPP
		    : q->status == 403 ? -EACCES
				       : -EIO;
		/* (The bucket's name first: one reading of many failures sees
		 * at once that the store, not an object, is out of reach.) */
		bool no_bucket = q->status == 404 && !strcmp(code, "NoSuchBucket");
		s->no_bucket |= no_bucket;
		if (no_bucket)
			set_err(s, "no such bucket %s (%s %s: HTTP %ld %s%s%s)", s->bucket, q->method,
				q->url, q->status, code, msg[0] ? ": " : "", msg);
		else if (!no_key)
			set_err(s, "%s %s: HTTP %ld%s%s%s%s", q->method, q->url, q->status,
				code[0] ? " " : "", code, msg[0] ? ": " : "", msg);
		/* An answer that is the request's result (absent, taken, no
		 * conditional writes) is progress as much as a 2xx: a batch of
		 * HEADs for new chunks is all 404s, and a transient failure late
		 * in it still deserves its whole budget.  Not one that is retried
		 * (a 412 ConditionalRequestConflict, a 501 with a transient code):
		 * it is no result, and resetting the clock on every try would
		 * retry it for ever once the backoff stops growing. */
		if ((no_key || taken || no_cond) && !retry)
			s->failing_since = 0;
	}
	int64_t now = mono_ns();
	if (retry) {
		/* The budget is time without progress, not the call's length: a
		 * batch over a slow link outlasts it while every request works,
		 * and a transient failure late in it still deserves its retries.
		 * A server that is gone fails every request, so the call still
		 * ends one budget after the last success. */
		int64_t wait = backoff_ns(q->tries);
		if (retry_fits(s, &s->failing_since, now, wait, q->tries)) {
			q->tries++;
			s->st.retries++;
			q->not_before = now + wait;
			return;
		}
		r = -ETIMEDOUT;
	}
	q->done = true;
	q->result = r;
}

static const volatile sig_atomic_t *stop_flag;

void s3_set_stop(const volatile sig_atomic_t *flag)
{
	stop_flag = flag;
}

/* Leaving run() early: no handle may stay attached to the multi handle
 * pointing at the caller's requests, which are freed on return (the next
 * call would otherwise drive them into freed memory). */
static int detach_all(s3_t *s, int r)
{
	for (int j = 0; j < s->parallel; j++) {
		char *owner = NULL;
		if (!s->easy[j])
			continue;
		curl_easy_getinfo(s->easy[j], CURLINFO_PRIVATE, &owner);
		if (owner) {
			curl_multi_remove_handle(s->multi, s->easy[j]);
			curl_easy_setopt(s->easy[j], CURLOPT_PRIVATE, NULL);
		}
	}
	return r;
}

/* Runs every request to completion (success, permanent error or spent
 * retry budget).  Returns 0 or -ENOMEM; per-request results are in q[i]. */
static int run(s3_t *s, struct req *q, size_t n)
{
	s->failing_since = 0;
	s->no_bucket = false;
	for (size_t i = 0; i < n; i++) {
		if (!q[i].out)
			q[i].out = &q[i].own_out;
		if (!q[i].hdrs && req_headers(&q[i]) < 0)
			return -ENOMEM;
	}
	size_t next = 0, left = n;
	int active = 0;
	while (left) {
		/* set by another thread or a signal: an atomic read */
		if (stop_flag && __atomic_load_n(stop_flag, __ATOMIC_RELAXED)) {
			for (size_t i = 0; i < n; i++)
				if (!q[i].done) {
					q[i].done = true;
					q[i].result = -EINTR;
				}
			set_err(s, "interrupted");
			return detach_all(s, 0);
		}
		int64_t now = mono_ns(), soonest = INT64_MAX;
		/* Start what may start: new requests first, then due retries. */
		for (size_t k = 0; k < n && active < s->parallel; k++) {
			size_t i = (next + k) % n;
			struct req *r = &q[i];
			if (r->done || r->active)
				continue;
			if (r->not_before > now) {
				soonest = MIN(soonest, r->not_before);
				continue;
			}
			CURL *e = NULL;
			for (int j = 0; j < s->parallel; j++) {
				if (!s->easy[j])
					s->easy[j] = curl_easy_init();
				char *owner = NULL;
				if (s->easy[j])
					curl_easy_getinfo(s->easy[j], CURLINFO_PRIVATE, &owner);
				if (s->easy[j] && !owner) {
					e = s->easy[j];
					break;
				}
			}
			if (!e)
				return detach_all(s, -ENOMEM);
			easy_setup(s, e, r);
			if (curl_multi_add_handle(s->multi, e) != CURLM_OK)
				return detach_all(s, -ENOMEM);
			r->active = true;
			active++;
			next = i + 1;
		}
		int running = 0;
		/* libcurl starts its name-lookup threads in here (util.h).
		 * Debian's libcurl resolves on threads, so this call does not
		 * wait on DNS and a stop is held back only until it returns. */
		sigset_t old;
		stop_signals_block(&old);
		curl_multi_perform(s->multi, &running);
		stop_signals_restore(&old);
		CURLMsg *m;
		int queued;
		while ((m = curl_multi_info_read(s->multi, &queued))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			CURL *e = m->easy_handle;
			struct req *r = NULL;
			curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
			r->cc = m->data.result;
			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
			curl_multi_remove_handle(s->multi, e);
			curl_easy_setopt(e, CURLOPT_PRIVATE, NULL);
			r->active = false;
			active--;
			settle(s, r);
			if (r->done)
				left--;
		}
		if (!left)
			break;
		int wait_ms = 100;
		if (!active && soonest != INT64_MAX)
			wait_ms = (int)MAX(1, MIN(1000, (soonest - mono_ns()) / 1000000));
		if (active)
			curl_multi_poll(s->multi, NULL, 0, wait_ms, NULL);
		else
			usleep(wait_ms * 1000);
	}
	return 0;
}

static void req_free(struct req *q, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(q[i].url);
		curl_slist_free_all(q[i].hdrs);
		buf_free(&q[i].own_out);
	}
}

static int first_error(const struct req *q, size_t n, int *errs)
{
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		if (errs)
			errs[i] = q[i].result;
		if (q[i].result < 0 && !r)
			r = q[i].result;
	}
	return r;
}

/* ---- public calls ---- */

int s3_create_bucket(s3_t *s)
{
	struct req q = {.method = "PUT", .kind = K_OTHER, .url = make_url(s, NULL, NULL)};
	if (!q.url)
		return -ENOMEM;
	q.data = "";
	q.has_body = true;
	hash_body(&q, false);
	int r = run(s, &q, 1);
	if (!r)
		r = q.result;
	if (r == -EIO && q.status == 409) {
		char code[64], msg[64];
		error_code(q.out, code, sizeof(code), msg, sizeof(msg));
		if (!strcmp(code, "BucketAlreadyOwnedByYou"))
			r = 0;
	}
	req_free(&q, 1);
	return r;
}

/* A PUT of body to key, its payload hashed for the signature. */
static int put_init(s3_t *s, struct req *q, const char *key, const s3_body *body)
{
	*q = (struct req){.method = "PUT", .kind = K_PUT, .data = body->data, .fd = body->fd,
			  .len = body->len, .has_body = true};
	q->url = make_url(s, key, NULL);
	return q->url ? hash_body(q, false) : -ENOMEM;
}

int s3_put_many(s3_t *s, size_t n, char *const *keys, const s3_body *bodies, int *errs)
{
	if (!n)
		return 0;
	struct req *q = calloc(n, sizeof(*q));
	if (!q)
		return -ENOMEM;
	int r = 0;
	for (size_t i = 0; i < n && !r; i++)
		r = put_init(s, &q[i], keys[i], &bodies[i]);
	if (!r)
		r = run(s, q, n);
	if (!r)
		r = first_error(q, n, errs);
	req_free(q, n);
	free(q);
	return r;
}

int s3_put_new(s3_t *s, const char *key, const s3_body *body)
{
	struct req q;
	int r = put_init(s, &q, key, body);
	q.only_new = true;
	if (!r)
		r = run(s, &q, 1);
	if (!r)
		r = q.result;
	req_free(&q, 1);
	return r;
}

int s3_get_many(s3_t *s, size_t n, char *const *keys, buf_t *outs, int *errs)
{
	if (!n)
		return 0;
	struct req *q = calloc(n, sizeof(*q));
	if (!q)
		return -ENOMEM;
	int r = 0;
	for (size_t i = 0; i < n && !r; i++) {
		q[i] = (struct req){.method = "GET", .kind = K_GET, .out = &outs[i]};
		q[i].url = make_url(s, keys[i], NULL);
		if (!q[i].url)
			r = -ENOMEM;
	}
	if (!r)
		r = run(s, q, n);
	if (!r)
		r = first_error(q, n, errs);
	req_free(q, n);
	free(q);
	return r;
}

/* Runs the GET q of key alone: 0 or its error. */
static int get_one(s3_t *s, struct req *q, const char *key)
{
	q->url = make_url(s, key, NULL);
	if (!q->url)
		return -ENOMEM;
	int r = run(s, q, 1);
	if (!r)
		r = q->result;
	req_free(q, 1);
	return r;
}

int s3_get_max(s3_t *s, const char *key, buf_t *out, uint64_t max)
{
	struct req q = {.method = "GET", .kind = K_GET, .out = out, .max_out = max};
	return get_one(s, &q, key);
}

int s3_get_fd(s3_t *s, const char *key, int fd, uint64_t max)
{
	struct req q = {.method = "GET", .kind = K_GET, .max_out = max, .to_fd = true, .out_fd = fd};
	return get_one(s, &q, key);
}

int s3_get(s3_t *s, const char *key, buf_t *out)
{
	return s3_get_max(s, key, out, 0);
}

/* After a HEAD's 404, which has no body to say whether the key or the
 * bucket is missing: 0 when the bucket is there (HEAD of the bucket), else
 * -EIO ("no such bucket NAME", s3_no_bucket) or the check's error.  A
 * missing bucket must not pass for missing objects: its reader would
 * report every chunk gone, or upload into nothing. */
static int bucket_check(s3_t *s)
{
	struct req q = {.method = "HEAD", .kind = K_HEAD};
	q.url = make_url(s, NULL, NULL);
	if (!q.url)
		return -ENOMEM;
	int r = run(s, &q, 1);
	if (r == 0)
		r = q.result;
	if (r == -ENOENT) {
		set_err(s, "no such bucket %s (HEAD %s: HTTP 404)", s->bucket, q.url);
		s->no_bucket = true;
		r = -EIO;
	}
	req_free(&q, 1);
	return r;
}

bool s3_no_bucket(const s3_t *s)
{
	return s->no_bucket;
}

int s3_have_many(s3_t *s, size_t n, char *const *keys, bool *have)
{
	if (!n)
		return 0;
	struct req *q = calloc(n, sizeof(*q));
	if (!q)
		return -ENOMEM;
	int r = 0;
	for (size_t i = 0; i < n && !r; i++) {
		q[i] = (struct req){.method = "HEAD", .kind = K_HEAD};
		q[i].url = make_url(s, keys[i], NULL);
		if (!q[i].url)
			r = -ENOMEM;
	}
	if (!r)
		r = run(s, q, n);
	bool absent = false;
	for (size_t i = 0; i < n && !r; i++) {
		have[i] = q[i].result == 0;
		absent |= q[i].result == -ENOENT;
		if (q[i].result < 0 && q[i].result != -ENOENT)
			r = q[i].result;
	}
	req_free(q, n);
	free(q);
	return r == 0 && absent ? bucket_check(s) : r;
}

/* Appends text with the five XML special characters escaped. */
static int append_xml_text(buf_t *b, const char *t)
{
	for (; *t; t++) {
		const char *e = *t == '&' ? "&amp;" : *t == '<' ? "&lt;" : *t == '>' ? "&gt;"
			      : *t == '"' ? "&quot;" : *t == '\'' ? "&apos;" : NULL;
		int r = e ? buf_append(b, e, strlen(e)) : buf_append(b, t, 1);
		if (r < 0)
			return r;
	}
	return 0;
}

static int delete_body(char *const *keys, size_t n, buf_t *b)
{
	static const char head[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
				   "<Delete><Quiet>true</Quiet>";
	int r = buf_append(b, head, strlen(head));
	for (size_t i = 0; i < n && !r; i++) {
		r = buf_append(b, "<Object><Key>", 13);
		if (!r)
			r = append_xml_text(b, keys[i]);
		if (!r)
			r = buf_append(b, "</Key></Object>", 15);
	}
	if (!r)
		r = buf_append(b, "</Delete>", 9);
	return r;
}

/* The key of keys[0..n) that is text, or NULL: a per-key failure is
 * retried only for a key this request asked about (a server cannot make
 * us delete another). */
static char *asked_key(char *const *keys, size_t n, const xmlChar *text)
{
	for (size_t i = 0; text && i < n; i++)
		if (!strcmp(keys[i], (const char *)text))
			return keys[i];
	return NULL;
}

/* A DeleteObjects answer lists failures as <Error> elements (quiet mode
 * lists no successes).  NoSuchKey is a success for us.  A key failed with
 * a transient code (SlowDown, InternalError, ...) goes to retry[] (*nretry
 * of them), to be asked again: the server failed it this time only, as a
 * whole answer's 503 would have.  Any other failure is the result. */
static int delete_result(s3_t *s, const buf_t *body, char *const *keys, size_t n, char **retry,
			 size_t *nretry)
{
	xmlDocPtr doc = parse_answer(body);
	if (!doc) {
		set_err(s, "DeleteObjects: answer is not XML, or has a DTD");
		return -EIO;
	}
	if (!answer_is(s, doc, "DeleteObjects", "DeleteResult")) {
		xmlFreeDoc(doc);
		return -EIO;
	}
	int r = 0;
	xmlNodePtr root = xmlDocGetRootElement(doc);
	for (xmlNodePtr e = root ? root->children : NULL; e && !r; e = e->next) {
		if (e->type != XML_ELEMENT_NODE || xmlStrcmp(e->name, BAD_CAST "Error"))
			continue;
		xmlChar *key = NULL, *code = NULL, *msg = NULL;
		for (xmlNodePtr c = e->children; c; c = c->next) {
			if (c->type != XML_ELEMENT_NODE)
				continue;
			xmlChar **dst = !xmlStrcmp(c->name, BAD_CAST "Key")	  ? &key
					: !xmlStrcmp(c->name, BAD_CAST "Code")	  ? &code
					: !xmlStrcmp(c->name, BAD_CAST "Message") ? &msg
										  : NULL;
			if (dst && !*dst)
				*dst = xmlNodeGetContent(c);
		}
		char *asked = asked_key(keys, n, key);
		bool again = code && transient_code((const char *)code) && asked;
		/* An answer may name a key twice: it is asked again once (and
		 * counted once, or a round that deleted others would not count
		 * as progress, and a key named more often than keys were asked
		 * would fail the command). */
		bool listed = false;
		for (size_t i = 0; again && !listed && i < *nretry; i++)
			listed = retry[i] == asked;
		if (again && !listed && *nretry < n) {
			retry[(*nretry)++] = asked;
			/* What the last try said, should the budget run out. */
			set_err(s, "DeleteObjects: %s: %s %s", asked, (char *)code,
				msg ? (char *)msg : "");
		} else if (!again && (!code || xmlStrcmp(code, BAD_CAST "NoSuchKey"))) {
			set_err(s, "DeleteObjects: %s: %s %s", key ? (char *)key : "?",
				code ? (char *)code : "error", msg ? (char *)msg : "");
			r = -EIO;
		}
		xmlFree(key);
		xmlFree(code);
		xmlFree(msg);
	}
	xmlFreeDoc(doc);
	return r;
}

/* One round: DeleteObjects for keys[0..n), 1000 a request.  Keys the
 * server failed transiently are put in retry[] (*nretry; room for n). */
static int delete_round(s3_t *s, size_t n, char *const *keys, char **retry, size_t *nretry)
{
	*nretry = 0;
	size_t nreq = (n + DELETE_BATCH - 1) / DELETE_BATCH;
	if (!nreq)
		return 0;
	struct req *q = calloc(nreq, sizeof(*q));
	buf_t *bodies = calloc(nreq, sizeof(*bodies));
	int r = q && bodies ? 0 : -ENOMEM;
	for (size_t i = 0; i < nreq && !r; i++) {
		size_t first = i * DELETE_BATCH, cnt = MIN(n - first, (size_t)DELETE_BATCH);
		r = delete_body(keys + first, cnt, &bodies[i]);
		q[i] = (struct req){.method = "POST", .kind = K_DELETE, .has_body = true,
				    .data = bodies[i].data, .len = bodies[i].len};
		q[i].url = make_url(s, NULL, "delete=");
		if (!r)
			r = q[i].url ? hash_body(&q[i], true) : -ENOMEM;
	}
	if (!r)
		r = run(s, q, nreq);
	if (!r)
		r = first_error(q, nreq, NULL);
	for (size_t i = 0; i < nreq && !r; i++) {
		size_t first = i * DELETE_BATCH, cnt = MIN(n - first, (size_t)DELETE_BATCH);
		size_t k = 0;
		r = delete_result(s, q[i].out, keys + first, cnt, retry + *nretry, &k);
		*nretry += k;
		if (!r)
			s->st.delete_keys += cnt - k;
	}
	if (q)
		req_free(q, nreq);
	for (size_t i = 0; bodies && i < nreq; i++)
		buf_free(&bodies[i]);
	free(bodies);
	free(q);
	return r;
}

/* Waits before the next round of per-key retries, under the rules of
 * settle(): backoff with jitter, and a budget of retry_seconds without
 * progress (*since: when the keys began failing with no key deleted
 * since).  Returns 0, -ETIMEDOUT (budget spent) or -EINTR (stop asked). */
static int delete_backoff(s3_t *s, int64_t *since, int tries)
{
	int64_t now = mono_ns(), wait = backoff_ns(tries);
	if (!retry_fits(s, since, now, wait, tries))
		return -ETIMEDOUT;
	s->st.retries++;
	for (int64_t end = now + wait; mono_ns() < end;) {
		if (stop_flag && __atomic_load_n(stop_flag, __ATOMIC_RELAXED)) {
			set_err(s, "interrupted");
			return -EINTR;
		}
		usleep((useconds_t)MIN((end - mono_ns()) / 1000 + 1, 100000));
	}
	return 0;
}

int s3_delete_many(s3_t *s, size_t n, char *const *keys)
{
	if (!n)
		return 0;
	/* Two lists of keys still to delete: the round's and the next's. */
	char **a = malloc(n * sizeof(*a)), **b = malloc(n * sizeof(*b));
	int r = a && b ? 0 : -ENOMEM;
	if (!r)
		memcpy(a, keys, n * sizeof(*a));
	int64_t since = 0;
	for (int tries = 0; !r && n; tries++) {
		size_t nretry;
		r = delete_round(s, n, a, b, &nretry);
		if (r || !nretry)
			break;
		/* Some keys went: progress.  The budget is whole again, and the
		 * backoff starts over, as settle()'s does for a request that
		 * succeeds: grown over rounds that all deleted keys, the wait
		 * alone would outlast a short budget and give up on progress. */
		if (nretry < n) {
			since = 0;
			tries = 0;
		}
		r = delete_backoff(s, &since, tries);
		char **t = a;
		a = b;
		b = t;
		n = nretry;
	}
	free(a);
	free(b);
	return r;
}

void s3_objects_free(s3_object *objs, size_t n)
{
	for (size_t i = 0; objs && i < n; i++)
		free(objs[i].key);
	free(objs);
}

/* "2026-12-01T04:49:34.758Z" -> seconds since the epoch. */
static int parse_time(const char *t, time_t *out)
{
	struct tm tm = {0};
	const char *end = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return -EIO;
	*out = timegm(&tm);
	return 0;
}

/* A listing's <Size>: decimal digits only, within 64 bits.  (strtoull
 * alone takes "-5" for 2^64 - 5, " 7" and "+7", and saturates on
 * overflow.) */
static int parse_size(const char *t, uint64_t *out)
{
	if (!t || !*t || strspn(t, "0123456789") != strlen(t))
		return -EIO;
	errno = 0;
	unsigned long long v = strtoull(t, NULL, 10);
	if (errno)
		return -EIO;
	*out = v;
	return 0;
}

static char *child_text(xmlNodePtr n, const char *name)
{
	for (xmlNodePtr c = n->children; c; c = c->next) {
		if (c->type == XML_ELEMENT_NODE && !xmlStrcmp(c->name, BAD_CAST name)) {
			xmlChar *t = xmlNodeGetContent(c);
			char *r = t ? strdup((char *)t) : NULL;
			xmlFree(t);
			return r;
		}
	}
	return NULL;
}

/* A listing's cursor (s3_list_page's *token) is the server's continuation
 * token with what catches a listing that never ends:
 * - the last key listed: S3 lists keys in ascending byte order, so every
 *   key of a page must come after it.  A server whose tokens cycle (A ->
 *   B -> A) or that goes back otherwise would make a caller list forever
 *   (only a token repeated on the very next page is caught by comparing
 *   tokens).
 * - for a run of empty truncated pages, which add no key to compare: how
 *   many since the last key, and the token of the one whose place in the
 *   run is a power of two.  Tokens in a cycle come back to that token once
 *   the run is twice as long as the cycle (Brent's cycle detection), in
 *   constant space; a sane server never repeats a token.
 * Written "<len>/<last key><empty pages>/<len>/<kept token><token>". */
struct cursor {
	char *last;     /* "" before the first key */
	uint64_t empty; /* empty truncated pages since the last key */
	char *kept;     /* "" when none */
	char *token;
};

static void cursor_free(struct cursor *c)
{
	free(c->last);
	free(c->kept);
	free(c->token);
	*c = (struct cursor){0};
}

static int cursor_make(const struct cursor *c, char **out)
{
	if (asprintf(out, "%zu/%s%" PRIu64 "/%zu/%s%s", strlen(c->last), c->last, c->empty,
		     strlen(c->kept), c->kept, c->token) < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Reads "<len>/<len bytes>" at *p into a new string; NULL when malformed
 * (*p moved past it otherwise). */
static char *cursor_field(const char **p)
{
	char *end;
	errno = 0;
	unsigned long long len = strtoull(*p, &end, 10);
	if (errno || end == *p || *end != '/' || len > strlen(end + 1))
		return NULL;
	*p = end + 1 + len;
	return strndup(end + 1, len);
}

/* Splits a cursor made by cursor_make into c (new strings). */
static int cursor_split(s3_t *s, const char *cursor, struct cursor *c)
{
	*c = (struct cursor){0};
	const char *p = cursor;
	char *end = NULL;
	c->last = cursor_field(&p);
	if (c->last) {
		errno = 0;
		c->empty = strtoull(p, &end, 10);
	}
	if (c->last && !errno && end != p && *end == '/') {
		p = end + 1;
		c->kept = cursor_field(&p);
		c->token = c->kept ? strdup(p) : NULL;
	}
	if (!c->token) {
		cursor_free(c);
		set_err(s, "ListObjectsV2: not a listing cursor");
		return -EINVAL;
	}
	return 0;
}

/* The cursor after a page of nobjs keys (last: its last key) whose next
 * token is next: c, the cursor the page was asked with, updated.  An empty
 * page whose token is the kept one is a cycle: -EIO. */
static int cursor_advance(s3_t *s, struct cursor *c, const char *last, size_t nobjs,
			  const char *next)
{
	if (nobjs) {
		c->empty = 0;
		free(c->kept);
		c->kept = strdup("");
		free(c->last);
		c->last = strdup(last);
	} else if (c->empty++ && !strcmp(next, c->kept)) {
		set_err(s, "ListObjectsV2: empty truncated pages whose continuation tokens go "
			   "round in a cycle (token %.160s again after %" PRIu64 " empty pages)",
			next, c->empty);
		return -EIO;
	}
	if (c->empty && !(c->empty & (c->empty - 1))) { /* a power of two */
		free(c->kept);
		c->kept = strdup(next);
	}
	free(c->token);
	c->token = strdup(next);
	return c->last && c->kept && c->token ? 0 : -ENOMEM;
}

/* Parses a page asked for with token sent (NULL: the first) after the key
 * last (NULL: none); *next: the next page's token, NULL after the last
 * page. */
static int parse_list(s3_t *s, const buf_t *body, const char *sent, const char *last,
		      char **next, s3_object **objs, size_t *nobjs)
{
	*next = NULL;
	xmlDocPtr doc = parse_answer(body);
	if (!doc) {
		set_err(s, "ListObjectsV2: answer is not XML, or has a DTD");
		return -EIO;
	}
	if (!answer_is(s, doc, "ListObjectsV2", "ListBucketResult")) {
		xmlFreeDoc(doc);
		return -EIO;
	}
	xmlNodePtr root = xmlDocGetRootElement(doc);
	size_t cap = 0, n = 0;
	s3_object *v = NULL;
	bool truncated = false, back = false;
	int r = 0;
	/* (Past a key that went back, the rest of the page is read for its
	 * token, not its keys.) */
	for (xmlNodePtr c = root ? root->children : NULL; c && (!r || back); c = c->next) {
		if (c->type != XML_ELEMENT_NODE)
			continue;
		if (!xmlStrcmp(c->name, BAD_CAST "IsTruncated")) {
			char *t = child_text(c->parent, "IsTruncated");
			truncated = t && !strcmp(t, "true");
			free(t);
		} else if (!xmlStrcmp(c->name, BAD_CAST "NextContinuationToken")) {
			free(*next);
			xmlChar *t = xmlNodeGetContent(c);
			*next = t ? strdup((char *)t) : NULL;
			xmlFree(t);
		} else if (!xmlStrcmp(c->name, BAD_CAST "Contents") && !back) {
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				s3_object *nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					r = -ENOMEM;
					break;
				}
				v = nv;
			}
			char *key = child_text(c, "Key"), *lm = child_text(c, "LastModified"),
			     *sz = child_text(c, "Size");
			v[n] = (s3_object){.key = key};
			const char *prev = n ? v[n - 1].key : last;
			if (!key || !lm || parse_time(lm, &v[n].mtime) < 0) {
				set_err(s, "ListObjectsV2: entry without Key or LastModified");
				r = -EIO;
			} else if (parse_size(sz, &v[n].size) < 0) {
				set_err(s, "ListObjectsV2: key %.160s: <Size> %.40s%s is not a byte count",
					key, sz ? sz : "(none)", sz && strlen(sz) > 40 ? "..." : "");
				r = -EIO;
			} else if (prev && strcmp(key, prev) <= 0) {
				/* Ascending, each key once: a listing that goes back
				 * (tokens in a cycle) would never end. */
				set_err(s, "ListObjectsV2: key %.160s is out of order (not after %.160s): "
					   "the listing went back",
					key, prev);
				r = -EIO;
				back = true;
			}
			free(lm);
			free(sz);
			n++;
		}
	}
	xmlFreeDoc(doc);
	if (!truncated) {
		free(*next);
		*next = NULL;
	} else if (!*next && !r) {
		set_err(s, "ListObjectsV2: truncated page without a continuation token");
		r = -EIO;
	} else if (sent && !strcmp(sent, *next) && (!r || back)) {
		/* The same page again and again: a broken server, not a listing
		 * (said as such rather than as the key that went back). */
		set_err(s, "ListObjectsV2: the continuation token did not advance");
		r = -EIO;
	}
	if (r < 0) {
		free(*next);
		*next = NULL;
		s3_objects_free(v, n);
		return r;
	}
	*objs = v;
	*nobjs = n;
	return 0;
}

int s3_list_page(s3_t *s, const char *prefix, char **token, s3_object **objs, size_t *nobjs)
{
	*objs = NULL;
	*nobjs = 0;
	struct cursor c = {0};
	int r = *token ? cursor_split(s, *token, &c) : 0;
	if (r < 0)
		return r;
	const char *sent = c.token, *last = c.last;
	/* Parameters in byte order, values encoded: SigV4's canonical query. */
	buf_t qs = {0};
	if (sent) {
		r = buf_append(&qs, "continuation-token=", 19);
		if (!r)
			r = append_encoded(&qs, sent, false);
		if (!r)
			r = buf_append(&qs, "&", 1);
	}
	if (!r)
		r = buf_append(&qs, "list-type=2&max-keys=1000&prefix=", 33);
	if (!r)
		r = append_encoded(&qs, prefix ? prefix : "", false);
	if (!r)
		r = buf_append(&qs, "", 1);
	struct req q = {.method = "GET", .kind = K_LIST};
	if (!r)
		q.url = make_url(s, NULL, (char *)qs.data);
	buf_free(&qs);
	if (!q.url) {
		cursor_free(&c);
		return -ENOMEM;
	}
	r = run(s, &q, 1);
	if (!r)
		r = q.result;
	char *next = NULL;
	if (!r)
		r = parse_list(s, q.out, sent, last && *last ? last : NULL, &next, objs, nobjs);
	req_free(&q, 1);
	if (!r) {
		free(*token);
		*token = NULL;
		if (!c.last)
			c = (struct cursor){.last = strdup(""), .kept = strdup("")};
		if (next)
			r = cursor_advance(s, &c, *nobjs ? (*objs)[*nobjs - 1].key : "", *nobjs, next);
		if (!r && next)
			r = cursor_make(&c, token);
		if (r < 0) {
			s3_objects_free(*objs, *nobjs);
			*objs = NULL;
			*nobjs = 0;
		}
	}
	free(next);
	cursor_free(&c);
	return r;
}
