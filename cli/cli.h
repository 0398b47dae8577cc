/* cli.h - what the verbs of the cairn command share. */
#ifndef CAIRN_CLI_H
#define CAIRN_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cairn.h"

/* Exit codes: 1 = the operation failed, 2 = bad usage. */
#define EXIT_USAGE 2

typedef struct cli {
	const char *store_path; /* resolved store directory */
	bool store_default;     /* a user's default (no -s, no $CAIRN_STORE) */
	const char *verb;
	bool progress; /* stderr is a terminal */
	bool zfs;       /* invoked as zfs: zfs's texts (cli/zfs_compat.c) */
	bool no_header; /* the header is printed (over several stores in zfs mode) */
	bool help;      /* VERB -h/--help: cli_usage prints to stdout, returns 0 */
	bool defer_empty;       /* zfs mode over several stores: the caller says "no datasets" */
	unsigned long rows_out; /* rows a listing printed */
	/* -j: a document is open (json_begin), objects are in it, and it
	 * spans several stores (zfs mode: closed by the caller) */
	bool json_open, json_objects, json_multi;
} cli_t;

extern cli_t g_cli;

/* Prints "cairn: VERB: OBJECT: REASON" (object may be NULL) to stderr. */
void cli_err(const char *object, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the library's failure for err: its detail if any, else
 * cairn_strerror; returns 1 (the exit code). */
int cli_fail(cairn_store *st, const char *object, int err);
/* Usage error: prints the message and the verb's usage; returns 2. */
int cli_usage(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs the verb argv[0] with its arguments; returns its exit code. */
int cli_run_verb(int argc, char **argv);

/* Opens the selected store or explains how to create one. */
int cli_open(cairn_store **st);

/* Progress line on a terminal, nothing otherwise. */
void cli_progress(const cairn_progress *p, void *arg);
void cli_progress_done(void);
void cli_warn(const char *object, int err, void *arg);
/* Raises the soft limit on open files to the hard one: a walk holds a
 * directory fd per level, a GC flush one per directory it touches. */
void cli_raise_nofile(void);

/* 1.5M style with -p off, exact with it. */
void cli_size(char *out, size_t len, uint64_t v, bool exact);

/* Parses "name=value" into a cairn_prop pointing into s (modified). */
int cli_parse_prop(char *s, cairn_prop *out);

int cmd_init(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_set(int argc, char **argv);
int cmd_inherit(int argc, char **argv);
int cmd_rename(int argc, char **argv);
int cmd_destroy(int argc, char **argv);
int cmd_hold(int argc, char **argv);
int cmd_holds(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_bookmark(int argc, char **argv);
int cmd_prune(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_send(int argc, char **argv);
int cmd_recv(int argc, char **argv);
int cmd_sync(int argc, char **argv);
int cmd_have(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_rollback(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_load_key(int argc, char **argv);
int cmd_unload_key(int argc, char **argv);
int cmd_change_key(int argc, char **argv);

#endif
