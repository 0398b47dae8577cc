/* keyprompt.h - what the key verbs (create -o encryption, load-key,
 * unload-key, change-key) share: reading key material for
 * keylocation=prompt, and running over the encryption roots -r/-a name. */
#ifndef CAIRN_KEYPROMPT_H
#define CAIRN_KEYPROMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cairn.h"

#define KEYPROMPT_MAX 1024

/* Reads key material for root in keyformat fmt ("passphrase", "hex",
 * "raw").  From a terminal on stdin: a prompt on stderr, no echo, and
 * with confirm a second entry that must match (raw keys cannot be typed:
 * refused).  Otherwise all of stdin (up to KEYPROMPT_MAX bytes).
 * Returns 0, or 1 after printing the reason. */
int keyprompt_read(const char *root, const char *fmt, bool confirm, uint8_t buf[KEYPROMPT_MAX],
		   size_t *len);

/* Wipes buf. */
void keyprompt_wipe(uint8_t *buf, size_t len);

/* The last value -o gave for property name, or NULL (a later -o wins, as
 * in zfs).  The pointer is into props. */
const char *keyprompt_prop(const cairn_prop *props, size_t n, const char *name);

/* When loc is "prompt", reads the key of root (keyformat fmt) into buf as
 * keyprompt_read does and points ko->secret/secret_len at it; for any
 * other keylocation does nothing (the library reads key files itself).
 * Returns 0, or 1 after printing the reason.  The caller wipes buf. */
int keyprompt_for(const char *root, const char *fmt, const char *loc, bool confirm,
		  uint8_t buf[KEYPROMPT_MAX], cairn_key_opts *ko);

/* One root's work for keyroots_run: 0 done, 1 failed (reason printed),
 * 2 nothing to do (only allowed when many: -r/-a skip such roots). */
typedef int (*keyroot_fn)(cairn_store *st, const char *root, bool many, void *arg);

/* The rest of load-key/unload-key after getopt: checks the operands
 * {-a | [-r] DATASET} (argv[optind..]), opens the store and runs fn on
 * DATASET alone, or with recursive on every encryption root at or below
 * it, or with all on every root of the store; with -r/-a prints
 * "DONE / TRIED keys VERB".  Returns the command's exit code. */
int keyroots_cmd(int argc, char **argv, bool all, bool recursive, const char *usage,
		 keyroot_fn fn, void *arg, const char *verb);

#endif
