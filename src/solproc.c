/*
 * solproc.c -- see solproc.h. The judge's side of the link to one solution
 * process: start it, command it, wait for its replies while relaying the
 * all-gathers it asks for, and turn whatever it does instead into a
 * verdict. No CUDA here.
 */
#define _GNU_SOURCE
#include "solproc.h"
#include "proto.h"     /* defines: proto_send, proto_reader */
#include "sandbox.h"   /* defines: SANDBOX_EXIT */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int solproc_spawn(struct solproc *sp, const char *const *argv, const char *role, int is_ref,
		  char *err, size_t n)
{
	memset(sp, 0, sizeof *sp);
	sp->pid = -1;
	sp->fd = -1;
	sp->is_ref = is_ref;
	sp->trusted = 1;
	snprintf(sp->role, sizeof sp->role, "%s", role);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, n, "socketpair: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, n, "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		/* the link on fd 3 replaces the judge's own link to the parent */
		if (dup2(sv[1], 3) < 0)
			_exit(127);
		syscall(SYS_close_range, 4u, ~0u, 0u);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(sv[1]);
	sp->pid = pid;
	sp->fd = sv[0];
	return 0;
}

int solproc_send(struct solproc *sp, int type, json_t *msg)
{
	char *txt = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	json_decref(msg);
	int r = sp->fd < 0 ? -1 : proto_send(sp->fd, (enum msg_type)type, txt, txt ? strlen(txt) : 0);
	free(txt);
	return r;
}

enum pkb_outcome solproc_map_fail(const struct solproc *sp, const char *category)
{
	enum pkb_outcome c = OUT_RUNTIME_ERROR;
	for (int i = 0; i < OUT_COUNT; i++)
		if (category && !strcmp(category, outcome_name((enum pkb_outcome)i)))
			c = (enum pkb_outcome)i;
	if (sp->is_ref || sp->trusted)
		return c == OUT_PASS ? OUT_INTERNAL : c;
	switch (c) {
	case OUT_RUNTIME_ERROR:
	case OUT_LOAD_REFUSED:
	case OUT_TIMEOUT:
	case OUT_MISMATCH:
		return c;
	default:
		return OUT_RUNTIME_ERROR;
	}
}

static void reap_now(struct solproc *sp, int block)
{
	if (sp->pid <= 0 || sp->reaped)
		return;
	int st;
	pid_t r;
	while ((r = waitpid(sp->pid, &st, block ? 0 : WNOHANG)) < 0 && errno == EINTR)
		;
	if (r == sp->pid) {
		sp->status = st;
		sp->reaped = 1;
	}
}

enum pkb_outcome solproc_describe_end(const struct solproc *sp, char *msg, size_t n)
{
	int st = sp->status;
	if (!sp->reaped) {
		snprintf(msg, n, "the %s process closed its link to the judge", sp->role);
		return OUT_RUNTIME_ERROR;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == SANDBOX_EXIT) {
		snprintf(msg, n, "the %s process was ended by its sandbox (a forbidden system "
			 "call, named in the log)", sp->role);
		return OUT_LOAD_REFUSED;
	}
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) {
		snprintf(msg, n, "the %s process was killed by SIGSYS: a system call its sandbox "
			 "forbids, made with signals blocked (as system(), popen() and "
			 "posix_spawn() start a process)", sp->role);
		return OUT_LOAD_REFUSED;
	}
	if (WIFSIGNALED(st) && (WTERMSIG(st) == SIGXCPU || WTERMSIG(st) == SIGXFSZ))
		snprintf(msg, n, "the %s process was killed by signal %d (%s): it passed its "
			 "sandbox's limit on %s", sp->role, WTERMSIG(st), strsignal(WTERMSIG(st)),
			 WTERMSIG(st) == SIGXCPU ? "CPU time" : "file size");
	else if (WIFSIGNALED(st))
		snprintf(msg, n, "the %s process was killed by signal %d (%s)", sp->role,
			 WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		snprintf(msg, n, "the %s process exited with status %d before it was told to%s",
			 sp->role, WEXITSTATUS(st), WEXITSTATUS(st) == 0 ? " (an _exit() of the "
			 "solution?)" : "");
	return OUT_RUNTIME_ERROR;
}

/* the link broke or the process said nothing more: its end is the verdict */
static int ended(struct solproc *sp, enum pkb_outcome *cat, char *msg, size_t n)
{
	/* it may still be exiting: give it a moment to be reaped */
	for (int i = 0; i < 200 && !sp->reaped; i++) {
		reap_now(sp, 0);
		if (!sp->reaped)
			usleep(5000);
	}
	*cat = solproc_describe_end(sp, msg, n);
	return -1;
}

static int broke(struct solproc *sp, enum pkb_outcome *cat, char *msg, size_t n,
		 const char *fmt, const char *what)
{
	*cat = sp->is_ref ? OUT_INTERNAL : OUT_RUNTIME_ERROR;
	char why[200];
	snprintf(why, sizeof why, fmt, what);
	snprintf(msg, n, "the %s process broke the judge's protocol: %s", sp->role, why);
	solproc_kill(sp);
	return -1;
}

static int handle_fail(struct solproc *sp, const char *buf, size_t len, enum pkb_outcome *cat,
		       char *msg, size_t n)
{
	json_error_t je;
	json_t *j = json_loadb(buf, len, 0, &je);
	const char *c = NULL, *m = NULL;
	if (!j || json_unpack(j, "{s:s,s:s}", "category", &c, "message", &m) < 0) {
		json_decref(j);
		return broke(sp, cat, msg, n, "a failure message that is not {category, message}%s",
			     "");
	}
	*cat = solproc_map_fail(sp, c);
	/* its own words, marked as its own: they are a claim, not a finding */
	snprintf(msg, n, "the %s process: %s", sp->role, m);
	json_decref(j);
	reap_now(sp, 0);
	return -1;
}

int solproc_wait(struct solproc *sp, const char *op, int timeout_ms, json_t **reply,
		 solproc_relay_fn relay, void *ctx, enum pkb_outcome *cat, char *msg, size_t n)
{
	*reply = NULL;
	struct proto_reader *rd = &sp->rd;
	rd->max = SOLPROC_MAX_MSG;   /* a longer frame reads as malformed */
	uint64_t end = timeout_ms < 0 ? 0 : now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int r = -1;
	for (;;) {
		enum msg_type t;
		char *buf = NULL;
		size_t len = 0;
		int got = proto_reader_next(rd, &t, &buf, &len);
		if (got < 0) {
			r = broke(sp, cat, msg, n, "a malformed frame%s", "");
			break;
		}
		if (got == 0) {
			if (rd->eof) {
				r = ended(sp, cat, msg, n);
				break;
			}
			int wait = 100;
			if (end) {
				uint64_t now = now_ns();
				if (now >= end) {
					*cat = OUT_TIMEOUT;
					snprintf(msg, n, "the %s process did not answer '%s' within "
						 "%d ms", sp->role, op, timeout_ms);
					solproc_kill(sp);
					break;
				}
				wait = (int)((end - now) / 1000000ull) + 1;
				wait = wait > 100 ? 100 : wait;
			}
			struct pollfd p = { .fd = sp->fd, .events = POLLIN };
			if (poll(&p, 1, wait) < 0 && errno != EINTR) {
				r = ended(sp, cat, msg, n);
				break;
			}
			if (proto_reader_fill(rd, sp->fd) < 0 && !rd->eof) {
				r = ended(sp, cat, msg, n);
				break;
			}
			continue;
		}
		if (t == MSG_FAIL) {
			r = handle_fail(sp, buf, len, cat, msg, n);
			free(buf);
			break;
		}
		if (t == MSG_COLL) {
			if (!relay) {
				free(buf);
				r = broke(sp, cat, msg, n, "an all-gather while it may not ask for one%s",
					  "");
				break;
			}
			void *all = NULL;
			size_t all_len = 0;
			int rr = relay(ctx, buf, len, &all, &all_len);
			free(buf);
			if (rr < 0 || proto_send(sp->fd, MSG_COLL, all, all_len) < 0) {
				free(all);
				*cat = sp->is_ref ? OUT_INTERNAL : OUT_RUNTIME_ERROR;
				snprintf(msg, n, "the %s process's all-gather failed", sp->role);
				break;
			}
			free(all);
			continue;
		}
		if (t == MSG_RESULT || t == MSG_PHASE || t == MSG_DONE || t == MSG_JOB) {
			/* the judge's own messages: a solution has nothing to report
			 * or announce, so this is an attempt to forge one */
			free(buf);
			*cat = sp->is_ref ? OUT_INTERNAL : OUT_FLAGGED;
			snprintf(msg, n, "the %s process sent a %s message, which only the judge "
				 "sends: a forged record, phase or verdict", sp->role,
				 t == MSG_RESULT ? "result" : t == MSG_PHASE ? "phase" :
				 t == MSG_DONE ? "done" : "job");
			solproc_kill(sp);
			break;
		}
		if (t != MSG_SOL_REPLY) {
			free(buf);
			r = broke(sp, cat, msg, n, "a message of type %s where a reply was due",
				  "other than reply");
			break;
		}
		json_error_t je;
		json_t *j = json_loadb(buf, len, 0, &je);
		free(buf);
		const char *got_op = NULL;
		if (!j || json_unpack(j, "{s:s}", "op", &got_op) < 0) {
			json_decref(j);
			r = broke(sp, cat, msg, n, "a reply that is not a JSON object with \"op\"%s", "");
			break;
		}
		if (strcmp(got_op, op)) {
			char what[64];
			snprintf(what, sizeof what, "'%.20s' where '%.20s' was due", got_op, op);
			json_decref(j);
			r = broke(sp, cat, msg, n, "a reply out of turn: %s", what);
			break;
		}
		*reply = j;
		r = 0;
		break;
	}
	return r;
}

void solproc_kill(struct solproc *sp)
{
	if (sp->pid > 0 && !sp->reaped) {
		kill(sp->pid, SIGKILL);
		reap_now(sp, 1);
	}
	if (sp->fd >= 0) {
		close(sp->fd);
		sp->fd = -1;
	}
	proto_reader_free(&sp->rd);
}

int solproc_reap(struct solproc *sp, int timeout_ms)
{
	for (int waited = 0; !sp->reaped && waited <= timeout_ms; waited += 5) {
		reap_now(sp, 0);
		if (!sp->reaped)
			usleep(5000);
	}
	int clean = sp->reaped && WIFEXITED(sp->status) && WEXITSTATUS(sp->status) == 0;
	solproc_kill(sp);
	return clean ? 0 : -1;
}
