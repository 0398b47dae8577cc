/* sync_link.h - how sync reaches the destination: endpoints, the cairn it
 * runs there (a child, over ssh for a remote one), the child's reasons,
 * and the chunk "have" exchange a stream is sent with. */
#ifndef CAIRN_CLI_SYNC_LINK_H
#define CAIRN_CLI_SYNC_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* SOURCE or DESTINATION as typed: DATASET, /STORE:DATASET or
 * HOST:/STORE:DATASET. */
typedef struct endpoint {
	char *host;  /* NULL: local */
	char *store; /* NULL: the -s store */
	char *dataset;
} endpoint_t;

/* A `cairn have` child on the destination, asked which chunks it has. */
typedef struct remote_have {
	int to, from;
	pid_t pid;
	int errfd;   /* its stderr */
	bool broken; /* the pipe to it failed: its reason is reported */
} remote_have_t;

void endpoint_free(endpoint_t *e);

/* Splits s into e; -1 with *why set for a malformed endpoint or no
 * memory, and then e holds nothing.  A host is NAME, USER@NAME, or an IPv6
 * address in brackets, [ADDR] or USER@[ADDR] (as scp and rsync write it:
 * "::1:/store:ds" also works, read up to the first ":/"). */
int parse_endpoint(const char *s, endpoint_t *e, const char **why);

/* The program that reaches a remote destination: $CAIRN_SSH, else ssh. */
const char *ssh_program(void);

/* argv for running cairn VERB... on the destination side; NULL for no
 * memory.  Over ssh the remote command is one string, each word quoted,
 * as long as it needs to be (never cut short: a cut command line could
 * name another store or dataset). */
char **dest_argv(const endpoint_t *d, const char *const *verb);

void argv_free(char **av);

/* Spawns av with pipes: *to_child writes its stdin, *from_child (if not
 * NULL) reads its stdout; its stderr goes to errfd (-1: ours). */
pid_t spawn_piped(char **av, int *to_child, int *from_child, int errfd);

/* A child's stderr goes to an unlinked temporary file, read once it has
 * exited: its reason for failing is then reported with ours, and a child
 * that writes much to stderr can never block on a pipe nobody reads. */
int errfile_open(void);

/* The whole content of errfile fd (NUL terminated, malloc'ed); closes it. */
char *errfile_read(int fd);

/* Its exit status, or 128 + the signal that ended it; -1 on error. */
int wait_child(pid_t pid);

/* cairn_send_opts.have for a destination on this machine (arg: its store). */
int have_local(const uint8_t (*d)[32], size_t n, uint8_t *present, void *arg);

/* A dry run asks without touching: it must leave both stores as they were. */
int have_local_dry(const uint8_t (*d)[32], size_t n, uint8_t *present, void *arg);

/* ... and for one reached through a remote_have_t (arg). */
int have_remote(const uint8_t (*d)[32], size_t n, uint8_t *present, void *arg);

/* Why a child failed, from its stderr: its "cairn: VERB: " lines without
 * that prefix (joined by "; "), else its last line (ssh's, say), else how
 * it ended.  A line right after such a line, without the prefix, goes on
 * with its message (recv's "destination has snapshots (eg. X)" is followed
 * by "must destroy them to overwrite it", in zfs's words): it is part of
 * the reason, not passed on ahead of it.  With pass_on, its other lines
 * (recv -v) go to our stderr.  *kept is set when the receiver kept
 * resumable partial state.  Returns a malloc'ed string. */
char *child_reason(const char *err, int status, bool pass_on, bool *kept);

/* Whether running sync again can get past a failed receive on the
 * destination: it was killed or stopped by a signal, its link cut (ssh
 * says 255), the stream stopped short, or the disk was full or failing.
 * A refusal (the target diverged, needs -F, is encrypted otherwise...) is
 * not: the same sync would be refused the same way, so it gets no "run
 * sync again". */
bool recv_retryable(int status, const char *why);

/* Runs `cairn VERB...` on the destination and returns its stdout (NUL
 * terminated, malloc'ed), its stderr in *err if err is not NULL (else it
 * is passed on), and its exit status. */
int dest_output(const endpoint_t *d, const char *const *verb, char **out, char **err);

/* A host part that begins with '-' would reach ssh as an option. */
bool bad_host(const endpoint_t *e);

#endif
