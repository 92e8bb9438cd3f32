/*
 * solproc.h -- the judge's side of a solution process (issue 36).
 *
 * A rank process is the judge of its GPU: it draws the inputs, keeps the
 * reference's outputs, compares and times. It never loads a solution.
 * Each solution (the candidate, then the reference) runs in a solution
 * process of its own (`pkb __sol`, solhost.c), started fresh by the judge,
 * which maps the judge's buffers over CUDA IPC, loads the one .so and
 * makes calls on the judge's command. The link is a socketpair on the
 * solution process's fd 3, framed as proto.h says:
 *
 *   judge -> sol   MSG_SOL_SETUP once, then MSG_SOL_CMD {"op": ...}
 *   sol -> judge   MSG_SOL_REPLY {"op": ...} per command, MSG_COLL (an
 *                  all-gather it asks the judge to make among the ranks),
 *                  MSG_FAIL {"category","message"} before it ends
 *
 * Everything a solution process sends is a request or a claim about
 * itself: the judge relays a bounded all-gather, maps a failure onto the
 * categories a solution may earn, and never forwards a record. This file
 * has no CUDA: the protocol is unit-tested with fake solution processes
 * (tests/unit/test_solproc.c) that lie, send garbage, die or hang.
 */
#ifndef PKB_SOLPROC_H
#define PKB_SOLPROC_H

#include "exitcode.h"  /* defines: enum pkb_outcome */
#include "proto.h"     /* defines: struct proto_reader */

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/* the largest message a solution process may send, a longer frame being a
 * broken protocol: an all-gather contribution (the NCCL unique id, 128 B;
 * an IPC handle, 64 B; a solution's own host_allgather, pkb.h) or a reply
 * (a few keys) */
#define SOLPROC_MAX_MSG (64u << 10)

struct solproc {
	pid_t pid;            /* -1: none */
	int fd;               /* the judge's end of the link */
	int is_ref;           /* the reference: its failures are the harness's to explain */
	int trusted;          /* no solution code has run in it yet (until the judge
				 clears it, before the dlopen): its claims stand */
	char role[16];
	int status;           /* wait status once reaped */
	int reaped;
	struct proto_reader rd;   /* what it sent past the last reply waits here */
};

/* Start `argv` (argv[0] the program) with the link on its fd 3, stdout and
 * stderr shared with the judge (its log), every other descriptor closed,
 * in the judge's process group (so the parent's kill ends it too). 0, or
 * -1 with err. */
int solproc_spawn(struct solproc *sp, const char *const *argv, const char *role, int is_ref,
		  char *err, size_t n);

/* Send a message (takes `msg`). 0, or -1 when the process is gone. */
int solproc_send(struct solproc *sp, int type, json_t *msg);

/* The judge's half of an all-gather a solution process asked for: `send`
 * of `len` bytes in, W x len bytes out (malloc'd) or -1. */
typedef int (*solproc_relay_fn)(void *ctx, const void *send, size_t len, void **out,
				size_t *out_len);

/* Wait for the reply whose "op" is `op`, relaying the all-gathers asked for
 * meanwhile. timeout_ms < 0: no limit of its own (the parent's phase
 * deadline ends a hang). 0 with *reply (caller json_decref's; may be NULL),
 * or -1 with *cat and msg: the process failed (its FAIL, mapped by
 * solproc_map_fail), died (solproc_describe_end), broke the protocol
 * (garbage, a reply out of turn, an oversized request), sent a message
 * only the judge sends (a result, a phase, done: flagged) or timed out. */
int solproc_wait(struct solproc *sp, const char *op, int timeout_ms, json_t **reply,
		 solproc_relay_fn relay, void *ctx, enum pkb_outcome *cat, char *msg, size_t n);

/* A failure a solution process claims, as a verdict. A candidate may earn
 * runtime_error, load_refused, timeout or mismatch; any other category it
 * names (internal_error, env_error, flagged, pass ...) would blame the
 * harness or the machine, or excuse itself, so it reads as runtime_error.
 * The reference's claims stand (it is trusted, and runs alone). */
enum pkb_outcome solproc_map_fail(const struct solproc *sp, const char *category);
/* (The same holds for any process while sp->trusted: before its dlopen only
 * pkb's code has run in it, and a CUDA device that fails there is the
 * machine's env_error, not the candidate's.) */

/* How a process that ended before its last reply ended, as a verdict and a
 * message: the sandbox's exit (SANDBOX_EXIT) or SIGSYS is load_refused,
 * anything else runtime_error. */
enum pkb_outcome solproc_describe_end(const struct solproc *sp, char *msg, size_t n);

/* SIGKILL if it still runs, then reap. Safe to call twice. */
void solproc_kill(struct solproc *sp);
/* wait up to timeout_ms for a clean exit after "fini"; 0 if it exited 0 */
int solproc_reap(struct solproc *sp, int timeout_ms);

#endif
