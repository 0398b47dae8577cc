/* props.h - the properties `list` and `get` show, and how they print. */
#ifndef CAIRN_CLI_PROPS_H
#define CAIRN_CLI_PROPS_H

#include <getopt.h>

#include "cli.h"

enum prop_kind { K_STR, K_NUM, K_SIZE, K_DATE, K_BOOL, K_RATIO };

typedef struct prop_def {
	const char *name, *alias;
	int types;  /* the object types that have it */
	int field;  /* cairn_field, or -1 when not a projected number */
	int kind;   /* enum prop_kind */
} prop_def_t;

/* A column: a native property, or a user property (def == NULL). */
typedef struct column {
	const prop_def_t *def;
	const char *user; /* module:name, or written@SNAP */
	bool written_at;  /* user holds "written@SNAP" */
	char header[64];
} column_t;

/* Parses "a,b,c" into columns; on an unknown name prints the usage error
 * naming it and returns -1.  "all" is not accepted by list. */
int columns_parse(const char *list, column_t **cols, size_t *n, const char *usage);
const prop_def_t *prop_find(const char *name);
const prop_def_t *prop_table(void);

/* One row's value for a column into out ("-" when the type lacks it).
 * num and has_num give the raw number for sorting.  Returns 0 or <0. */
typedef struct rowref {
	cairn_store *st;
	const cairn_list_batch *b;
	size_t i;
	uint64_t available;
} rowref_t;
int column_value(const rowref_t *r, const column_t *c, bool exact, char *out, size_t len,
		 uint64_t *num, bool *has_num);
/* The property's source for `get`/JSON: "-", "default", "local", "inherited from X". */
int column_source(const rowref_t *r, const column_t *c, char *out, size_t len);

/* The received value for get -o received: "-" when none or not settable. */
int column_received(const rowref_t *r, const column_t *c, char *out, size_t len);

const char *type_name(int type);
/* "fs,snap,..." (names and zfs's aliases, "all") into a cairn_type mask;
 * on an unknown name returns -1 with *bad naming it. */
int types_parse(const char *s, int *mask, const char **bad);
void json_str(FILE *f, const char *s);

/* zfs's -j layout, shared by list and get.  json_begin prints the
 * document's head (once per document: a zfs-mode listing over several
 * stores is one document, closed by json_end_document in zfs_compat.c);
 * json_object_sep the comma before each object but the document's first;
 * json_end the tail, unless the document spans several stores. */
void json_begin(const char *verb);
/* The long options a listing verb shares: --json ('j'), --json-int ('I')
 * and --help ('h'). */
extern const struct option json_listing_opts[];
/* The same with another name than "datasets" for the document's one
 * object (holds, config). */
void json_begin_section(const char *verb, const char *section);
/* The same head with the section an array (its items have no unique key:
 * diff's changes); the caller writes the items and then "]}\n". */
void json_begin_array(const char *verb, const char *section);
void json_object_sep(void);
void json_end(void);
/* ,"source":{"type":...,"data":...} of a get/list source string. */
void json_source(FILE *f, const char *src);
/* Whether -j --json-int prints the column as a number. */
bool json_numeric(const column_t *c);

#endif
