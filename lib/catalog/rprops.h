/* rprops.h - received property values inside libcairn (see props.c). */
#ifndef CAIRN_RPROPS_H
#define CAIRN_RPROPS_H

#include "store/store.h"

/* Stores props as the received values of dataset name, replacing the
 * ones an earlier receive stored (zfs: a -R/-p stream carries the full
 * set).  Local values keep overriding them.  Validated as `set` would;
 * one (possibly nested) transaction.  0, CAIRN_EBADPROP, -ENOENT, -EROFS
 * (an old store opened read-only), or a catalog error. */
int props_receive(cairn_store *st, const char *name, const cairn_prop *props, size_t n);

#endif
