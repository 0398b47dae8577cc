/* lazy_libs.c - libcurl and libxml2 for the command, loaded on first use.
 *
 * Only a store with chunks on S3 (lib/s3.c) needs them, but linked the
 * ordinary way they and their ~35 dependencies (GnuTLS, Kerberos, LDAP,
 * ICU, libstdc++...) are mapped and relocated by every cairn process: most
 * of the fixed cost of a short command such as a listing (issue 16:
 * BENCHMARKS.md, "Listing process floor").  The command is therefore
 * linked without them and these definitions of the functions lib/s3.c
 * calls open the real libraries with dlopen() the first time one is
 * called, then forward every call.  If a library cannot be loaded, the
 * calls that create things (curl_global_init, curl_easy_init,
 * curl_multi_init, xmlReadMemory...) fail the way the real ones report
 * failure, so the S3 code gives its ordinary error.
 *
 * libcairn.a and libcairn.so keep linking the real libraries directly;
 * this file is part of the command only.
 */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>
#include <libxml/globals.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <pthread.h>
#include <stdarg.h>

static void *curl_lib, *xml_lib;
static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static void load_libs(void)
{
	curl_lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	xml_lib = dlopen("libxml2.so.2", RTLD_NOW | RTLD_LOCAL);
}

/* The real function name from lib (NULL if the library is missing). */
static void *sym(void **lib, const char *name)
{
	pthread_once(&loaded, load_libs);
	return *lib ? dlsym(*lib, name) : NULL;
}

/* FWD(lib, ret, name, fail, (params), (args)): defines name to call the
 * real one, or to return fail when it cannot be loaded.  The pointer is
 * looked up once; a race between two first calls stores the same value. */
#define FWD(lib, ret, name, fail, params, args)                               \
	ret name params                                                       \
	{                                                                     \
		static ret(*fp) params;                                       \
		ret(*f) params = __atomic_load_n(&fp, __ATOMIC_ACQUIRE);      \
		if (!f) {                                                     \
			f = (ret(*) params)sym(&lib, #name);                  \
			if (!f)                                               \
				return fail;                                  \
			__atomic_store_n(&fp, f, __ATOMIC_RELEASE);           \
		}                                                             \
		return f args;                                                \
	}
/* The same for functions without a result. */
#define FWD_VOID(lib, name, params, args)                                     \
	void name params                                                      \
	{                                                                     \
		static void(*fp) params;                                      \
		void(*f) params = __atomic_load_n(&fp, __ATOMIC_ACQUIRE);     \
		if (!f) {                                                     \
			f = (void(*) params)sym(&lib, #name);                 \
			if (!f)                                               \
				return;                                       \
			__atomic_store_n(&fp, f, __ATOMIC_RELEASE);           \
		}                                                             \
		f args;                                                       \
	}
/* One pointer-sized argument after the option (see below). */
#define FWD_OPT(ret, name, handle_t, opt_t, fail)                             \
	ret name(handle_t *h, opt_t o, ...)                                   \
	{                                                                     \
		static ret (*fp)(handle_t *, opt_t, ...);                     \
		ret (*f)(handle_t *, opt_t, ...) = __atomic_load_n(&fp, __ATOMIC_ACQUIRE); \
		if (!f) {                                                     \
			f = (ret(*)(handle_t *, opt_t, ...))sym(&curl_lib, #name); \
			if (!f)                                               \
				return fail;                                  \
			__atomic_store_n(&fp, f, __ATOMIC_RELEASE);           \
		}                                                             \
		va_list ap;                                                   \
		va_start(ap, o);                                              \
		void *arg = va_arg(ap, void *);                               \
		va_end(ap);                                                   \
		return f(h, o, arg);                                          \
	}

/* ---- libcurl ---- */

/* The variadic ones take exactly one argument after the option: a long, a
 * curl_off_t, a data pointer or a function pointer.  On the LP64 ABIs
 * cairn builds for, all of these are passed the same way (one integer
 * register or stack slot), so the argument is taken and passed on as a
 * pointer-sized value; libcurl then reads it by the option's type. */
_Static_assert(sizeof(long) == sizeof(void *) && sizeof(curl_off_t) == sizeof(void *),
	       "the variadic forwarding assumes an LP64 ABI");
FWD_OPT(CURLcode, curl_easy_setopt, CURL, CURLoption, CURLE_FAILED_INIT)
FWD_OPT(CURLcode, curl_easy_getinfo, CURL, CURLINFO, CURLE_FAILED_INIT)
FWD_OPT(CURLMcode, curl_multi_setopt, CURLM, CURLMoption, CURLM_INTERNAL_ERROR)

FWD(curl_lib, CURLcode, curl_global_init, CURLE_FAILED_INIT, (long flags), (flags))
FWD(curl_lib, CURL *, curl_easy_init, NULL, (void), ())
FWD(curl_lib, const char *, curl_easy_strerror, "libcurl could not be loaded", (CURLcode c), (c))
FWD(curl_lib, struct curl_slist *, curl_slist_append, NULL, (struct curl_slist *l, const char *s),
    (l, s))
FWD(curl_lib, CURLM *, curl_multi_init, NULL, (void), ())
FWD(curl_lib, CURLMcode, curl_multi_add_handle, CURLM_INTERNAL_ERROR, (CURLM *m, CURL *e), (m, e))
FWD(curl_lib, CURLMcode, curl_multi_remove_handle, CURLM_INTERNAL_ERROR, (CURLM *m, CURL *e),
    (m, e))
FWD(curl_lib, CURLMcode, curl_multi_perform, CURLM_INTERNAL_ERROR, (CURLM *m, int *running),
    (m, running))
FWD(curl_lib, CURLMcode, curl_multi_poll, CURLM_INTERNAL_ERROR,
    (CURLM *m, struct curl_waitfd extra[], unsigned int n, int ms, int *ret),
    (m, extra, n, ms, ret))
FWD(curl_lib, CURLMsg *, curl_multi_info_read, NULL, (CURLM *m, int *left), (m, left))
FWD(curl_lib, CURLMcode, curl_multi_cleanup, CURLM_INTERNAL_ERROR, (CURLM *m), (m))
FWD_VOID(curl_lib, curl_easy_cleanup, (CURL *h), (h))
FWD_VOID(curl_lib, curl_easy_reset, (CURL *h), (h))
FWD_VOID(curl_lib, curl_slist_free_all, (struct curl_slist *l), (l))

/* ---- libxml2 ---- */

FWD_VOID(xml_lib, xmlInitParser, (void), ())
FWD(xml_lib, xmlDocPtr, xmlReadMemory, NULL,
    (const char *buf, int size, const char *url, const char *enc, int options),
    (buf, size, url, enc, options))
FWD(xml_lib, xmlNodePtr, xmlDocGetRootElement, NULL, (const xmlDoc *doc), (doc))
FWD(xml_lib, xmlChar *, xmlNodeGetContent, NULL, (const xmlNode *cur), (cur))
FWD(xml_lib, int, xmlStrcmp, -1, (const xmlChar *a, const xmlChar *b), (a, b))
FWD_VOID(xml_lib, xmlFreeDoc, (xmlDocPtr cur), (cur))

/* xmlFree is a variable of libxml2 (a function pointer); this one frees
 * through the library's own.  Without the library nothing was allocated
 * by it, so there is nothing to free. */
static void free_via_libxml2(void *p)
{
	xmlFreeFunc *real = sym(&xml_lib, "xmlFree");
	if (real && *real)
		(*real)(p);
}
xmlFreeFunc xmlFree = free_via_libxml2;
