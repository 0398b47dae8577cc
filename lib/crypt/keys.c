/* keys.c - load-key, unload-key, change-key and key queries (cairn.h). */
#include <errno.h>
#include <stdlib.h>

#include "catalog/dataset.h"
#include "crypt/encroot.h"
#include "crypt/keyring.h"

/* Looks up name and checks it is an encryption root. */
static int root_lookup(cairn_store *st, const char *name, ds_row_t *root)
{
	int r = dataset_lookup(st, name, root);
	if (r < 0)
		return r;
	r = encroot_is_root(st, root);
	if (r == 0)
		r = store_err(st, -EINVAL, "%s: not an encryption root", name);
	return r < 0 ? r : 0;
}

static int key_location(cairn_store *st, const ds_row_t *root, const cairn_key_opts *ko,
			char **loc)
{
	if (ko && ko->keylocation) {
		char *norm = NULL;
		int r = dataset_prop_normalize(st, "keylocation", ko->keylocation, &norm);
		*loc = norm;
		return r;
	}
	int r = catalog_prop_get(st->cat, root->id, "keylocation", loc);
	return r < 0 ? store_err(st, CAIRN_ECORRUPT, "%s: keylocation missing", root->name) : 0;
}

/* cairn_load_key and cairn_load_key_previous, after STORE_ENTER. */
static int load_key(cairn_store *st, const char *name, const cairn_key_opts *ko, bool earlier)
{
	ds_row_t root = {0};
	char *loc = NULL;
	char desc[64];
	crypt_keys_t *k = NULL;
	int r = catalog_begin_read(st->cat);
	if (r == 0)
		r = root_lookup(st, name, &root);
	if (r == 0)
		r = encroot_desc(st, &root, desc);
	/* A stale key (for other key material) is not "loaded": it cannot
	 * open the data, and the load below replaces it. */
	if (r == 0 && !(ko && ko->noop) && (r = encroot_key_loaded(st, &root)) > 0)
		r = store_err(st, -EEXIST, "%s: key already loaded", name);
	if (r == 0)
		r = key_location(st, &root, ko, &loc);
	if (r == 0)
		r = encroot_unwrap(st, &root, loc, ko ? ko->secret : NULL, ko ? ko->secret_len : 0,
				   earlier, &k);
	catalog_end_read(st->cat);
	if (r == 0 && !(ko && ko->noop) && (r = keyring_load(desc, k, ko ? ko->timeout : 0)) < 0)
		store_err(st, r, "%s: kernel keyring: %s", name, strerror(-r));
	crypt_keys_free(k);
	free(loc);
	ds_row_clear(&root);
	return r;
}

int cairn_load_key(cairn_store *st, const char *name, const cairn_key_opts *ko)
{
	int r = STORE_ENTER(st, name);
	return r < 0 ? r : load_key(st, name, ko, false);
}

int cairn_load_key_previous(cairn_store *st, const char *name, const cairn_key_opts *ko)
{
	int r = STORE_ENTER(st, name);
	return r < 0 ? r : load_key(st, name, ko, true);
}

int cairn_key_previous_count(cairn_store *st, const char *name, size_t *n)
{
	int r = STORE_ENTER(st, name, n);
	if (r < 0)
		return r;
	*n = 0;
	ds_row_t root = {0};
	r = catalog_begin_read(st->cat);
	if (r == 0)
		r = root_lookup(st, name, &root);
	if (r == 0)
		r = encroot_earlier_count(st, &root, n);
	catalog_end_read(st->cat);
	ds_row_clear(&root);
	return r;
}

int cairn_unload_key(cairn_store *st, const char *name)
{
	int r = STORE_ENTER(st, name);
	if (r < 0)
		return r;
	ds_row_t root = {0};
	char desc[64];
	r = catalog_begin_read(st->cat);
	if (r == 0)
		r = root_lookup(st, name, &root);
	if (r == 0)
		r = encroot_desc(st, &root, desc);
	catalog_end_read(st->cat);
	if (r == 0) {
		r = encroot_key_unload(st, &root, desc);
		if (r == -ENOKEY)
			store_err(st, r, "%s: key already unloaded", name);
		else if (r < 0 && r != -EBUSY) /* busy: encroot_key_unload said who */
			store_err(st, r, "%s: kernel keyring: %s", name, strerror(-r));
	}
	ds_row_clear(&root);
	return r;
}

static const char *prop_in(const cairn_prop *props, size_t n, const char *name)
{
	const char *v = NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(props[i].name, name))
			v = props[i].value;
	return v;
}

static int change_props_check(cairn_store *st, const char *name, const cairn_prop *props,
			      size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(props[i].name, "keyformat") && strcmp(props[i].name, "keylocation"))
			return store_err(st, CAIRN_EBADPROP,
					 "%s: change-key sets only keyformat and keylocation",
					 props[i].name);
	(void)name;
	return 0;
}

int cairn_change_key(cairn_store *st, const char *name, const cairn_prop *props, size_t nprops,
		     const cairn_key_opts *ko)
{
	int r = STORE_ENTER(st, name);
	if (r == 0)
		r = store_check_props(st, __func__, "props", props, nprops);
	if (r == 0)
		r = change_props_check(st, name, props, nprops);
	if (r < 0)
		return r;
	uint64_t txg;
	r = store_txn_begin(st, &txg);
	if (r < 0)
		return r;
	ds_row_t root = {0};
	crypt_keys_t *k = NULL;
	char *fmt = NULL, *loc = NULL;
	const char *nfmt = prop_in(props, nprops, "keyformat");
	const char *nloc = prop_in(props, nprops, "keylocation");
	bool check = ko && ko->noop;
	r = root_lookup(st, name, &root);
	/* The current key proves the right to rewrap (zfs: loaded first).
	 * A check leaves it out: the caller checks it itself (it may be
	 * about to load it with -l). */
	if (r == 0 && !check)
		r = encroot_keys(st, &root, &k);
	if (r == 0)
		r = dataset_prop_normalize(st, "keyformat",
					   nfmt ? nfmt : "passphrase", &fmt);
	if (r == 0 && !nfmt) {
		free(fmt);
		fmt = NULL;
		r = catalog_prop_get(st->cat, root.id, "keyformat", &fmt);
	}
	if (r == 0) {
		if (nloc)
			r = dataset_prop_normalize(st, "keylocation", nloc, &loc);
		else
			r = catalog_prop_get(st->cat, root.id, "keylocation", &loc);
	}
	if (r == 0 && !check)
		r = encroot_rewrap_in_txn(st, &root, k, crypt_keyformat_parse(fmt), loc,
					  ko ? ko->secret : NULL, ko ? ko->secret_len : 0);
	if (check)
		store_txn_end(st, r < 0 ? r : -ECANCELED); /* nothing was changed */
	else
		r = store_txn_end(st, r);
	crypt_keys_free(k);
	free(fmt);
	free(loc);
	ds_row_clear(&root);
	return r;
}

int cairn_encryption_roots(cairn_store *st, const char *under, char ***names, size_t *n)
{
	clear_names_out(names, n);
	int r = STORE_ENTER(st, names, n);
	if (r < 0)
		return r;
	r = catalog_begin_read(st->cat);
	if (r < 0)
		return store_err(st, r, "catalog: %s", catalog_errmsg(st->cat));
	int64_t *ids = NULL;
	size_t nids = 0;
	ds_row_t top = {0};
	if (under) {
		r = dataset_lookup(st, under, &top);
		if (r == 0)
			r = catalog_ds_subtree(st->cat, top.id, &ids, &nids);
	} else {
		sqlite3_stmt *q;
		r = sqlite3_prepare_v2(catalog_db(st->cat),
				       "SELECT dataset FROM dprop WHERE name='encryption' AND "
				       "value!='off'",
				       -1, &q, NULL)
			? store_err(st, -EIO, "catalog: %s", catalog_errmsg(st->cat))
			: 0;
		while (r == 0 && sqlite3_step(q) == SQLITE_ROW) {
			int64_t *p = realloc(ids, (nids + 1) * sizeof(*p));
			if (!p) {
				r = -ENOMEM;
				break;
			}
			ids = p;
			ids[nids++] = sqlite3_column_int64(q, 0);
		}
		if (!r || r == -ENOMEM)
			sqlite3_finalize(q);
	}
	char **v = NULL;
	for (size_t i = 0; r == 0 && i < nids; i++) {
		ds_row_t ds = {0};
		r = catalog_ds_by_id(st->cat, ids[i], &ds);
		if (r < 0)
			break;
		int root = encroot_is_root(st, &ds);
		if (root > 0) {
			char **p = realloc(v, (*n + 1) * sizeof(*p));
			if (!p)
				r = -ENOMEM;
			else {
				v = p;
				v[(*n)++] = ds.name;
				ds.name = NULL;
			}
		} else if (root < 0) {
			r = root;
		}
		ds_row_clear(&ds);
	}
	catalog_end_read(st->cat);
	free(ids);
	ds_row_clear(&top);
	if (r < 0) {
		for (size_t i = 0; i < *n; i++)
			free(v[i]);
		free(v);
		*n = 0;
		return r;
	}
	/* Name order, so -a loads parents' keys before their children's. */
	for (size_t i = 1; i < *n; i++)
		for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			char *t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	*names = v;
	return 0;
}

int cairn_key_info(cairn_store *st, const char *name, char **keyformat, char **keylocation,
		   bool *loaded)
{
	clear_out(keyformat, keylocation);
	int r = STORE_ENTER(st, name, keyformat, keylocation, loaded);
	if (r < 0)
		return r;
	ds_row_t root = {0};
	char desc[64];
	r = catalog_begin_read(st->cat);
	if (r == 0)
		r = root_lookup(st, name, &root);
	if (r == 0)
		r = encroot_desc(st, &root, desc);
	if (r == 0 && catalog_prop_get(st->cat, root.id, "keyformat", keyformat) < 0)
		r = store_err(st, CAIRN_ECORRUPT, "%s: keyformat missing", name);
	if (r == 0 && catalog_prop_get(st->cat, root.id, "keylocation", keylocation) < 0)
		r = store_err(st, CAIRN_ECORRUPT, "%s: keylocation missing", name);
	int k = r == 0 ? encroot_key_loaded(st, &root) : 0;
	catalog_end_read(st->cat);
	if (r == 0)
		*loaded = k > 0;
	ds_row_clear(&root);
	if (r < 0) {
		free(*keyformat);
		free(*keylocation);
		*keyformat = *keylocation = NULL;
	}
	return r;
}
