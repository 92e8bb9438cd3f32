/*
 * launch.c -- see launch.h.
 *
 * One poll loop over the W sockets. Every message from a rank is a phase
 * change, a collective contribution, a result, a failure or "done". A phase
 * change re-arms that rank's deadline with the budget of the phase's kind.
 * The first failure (a FAIL message, a rank that exits without DONE, or an
 * expired deadline) decides the outcome; the other ranks get grace_s to
 * report their own view, then every rank's process group is SIGKILLed.
 */
#define _GNU_SOURCE
#include "launch.h"
#include "proto.h"   /* defines: proto_send, proto_reader */
#include "sandbox.h"   /* defines: sandbox_env_build, SANDBOX_EXIT */
#include "util.h"    /* defines: xmalloc, now_ns, error */
#include "wire.h"    /* defines: wire_job_address */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Budgets, in seconds, from phases.h (which says what each bounds). */
#define PKB_PHASE_BUDGET_(id, name, secs, help) [PH_##id] = secs,
static const double default_deadline[PH_KIND_COUNT] = { PKB_PHASES(PKB_PHASE_BUDGET_) };
#undef PKB_PHASE_BUDGET_

int phase_kind_parse(const char *s)
{
	for (int k = 0; k < PH_KIND_COUNT; k++)
		if (!strcmp(s, phase_kind_name((enum phase_kind)k)))
			return k;
	return -1;
}

void launch_opts_init(struct launch_opts *o, int world)
{
	memset(o, 0, sizeof *o);
	o->world = world;
	o->grace_s = 2.0;
	memcpy(o->deadline_s, default_deadline, sizeof default_deadline);
}

struct rank_slot {
	int fd;
	struct proto_reader rd;
	uint64_t deadline;     /* ns, monotonic */
	uint64_t phase_t0;
	int kind;              /* of the current phase, -1 unknown or none */
	double budget;
	int closed;
	char *coll;            /* this rank's pending collective contribution */
	size_t coll_len;
	int coll_pending;
};

struct launch {
	const struct launch_opts *o;
	struct launch_result *res;
	struct rank_slot *slot;
	uint64_t fail_time;    /* 0 until the first failure */
};

static void fail_rank(struct launch *L, int r, enum pkb_outcome cat, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void fail_rank(struct launch *L, int r, enum pkb_outcome cat, const char *fmt, ...)
{
	struct rank_report *rr = &L->res->ranks[r];
	if (rr->failed)
		return;
	rr->failed = 1;
	snprintf(rr->category, sizeof rr->category, "%s", outcome_name(cat));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rr->message, sizeof rr->message, fmt, ap);
	va_end(ap);
	if (!L->fail_time) {
		L->fail_time = now_ns();
		L->res->outcome = cat;
		L->res->culprit = r;
	}
}

/* the phase now running on rank r ends: its time goes to its kind */
static void end_phase(struct launch *L, int r, uint64_t now)
{
	struct rank_slot *s = &L->slot[r];
	if (s->kind >= 0 && s->phase_t0)
		L->res->ranks[r].kind_s[s->kind] += (double)(now - s->phase_t0) / 1e9;
	s->kind = -1;
}

static void set_phase(struct launch *L, int r, const char *text)
{
	struct rank_slot *s = &L->slot[r];
	struct rank_report *rr = &L->res->ranks[r];
	char kind[32];
	const char *bar = strchr(text, '|');
	size_t kl = bar ? (size_t)(bar - text) : strlen(text);
	snprintf(kind, sizeof kind, "%.*s", (int)(kl < sizeof kind ? kl : sizeof kind - 1), text);
	int k = phase_kind_parse(kind);
	uint64_t now = now_ns();
	end_phase(L, r, now);
	s->kind = k;
	s->budget = k >= 0 ? L->o->deadline_s[k] : 60;
	s->phase_t0 = now;
	s->deadline = now + (uint64_t)(s->budget * 1e9);
	snprintf(rr->phase, sizeof rr->phase, "%s", bar ? bar + 1 : text);
}

static void coll_complete_if_ready(struct launch *L)
{
	int W = L->o->world;
	size_t total = 0;
	for (int r = 0; r < W; r++) {
		if (!L->slot[r].coll_pending)
			return;
		total += L->slot[r].coll_len;
	}
	char *all = xmalloc(total + 1);
	size_t off = 0;
	for (int r = 0; r < W; r++) {
		memcpy(all + off, L->slot[r].coll, L->slot[r].coll_len);
		off += L->slot[r].coll_len;
		free(L->slot[r].coll);
		L->slot[r].coll = NULL;
		L->slot[r].coll_pending = 0;
	}
	for (int r = 0; r < W; r++)
		if (!L->slot[r].closed)
			proto_send(L->slot[r].fd, MSG_COLL, all, total);
	free(all);
}

static void handle_msg(struct launch *L, int r, enum msg_type type, char *buf, size_t len)
{
	struct rank_report *rr = &L->res->ranks[r];
	switch (type) {
	case MSG_PHASE:
		set_phase(L, r, buf);
		break;
	case MSG_COLL:
		if (L->slot[r].coll_pending) {
			fail_rank(L, r, OUT_INTERNAL, "rank %d joined a collective twice", r);
			break;
		}
		L->slot[r].coll = buf;
		L->slot[r].coll_len = len;
		L->slot[r].coll_pending = 1;
		coll_complete_if_ready(L);
		return;   /* buf is kept */
	case MSG_RESULT: {
		json_error_t jerr;
		json_t *rec = json_loadb(buf, len, 0, &jerr);
		if (!rec) {
			fail_rank(L, r, OUT_INTERNAL, "rank %d sent a bad result: %s", r, jerr.text);
			break;
		}
		char why[300];
		if (wire_record_check(rec, why, sizeof why) < 0) {
			fail_rank(L, r, OUT_INTERNAL, "rank %d sent a bad result: %s", r, why);
			json_decref(rec);
			break;
		}
		if (L->o->on_result)
			L->o->on_result(L->o->arg, r, rec);
		json_decref(rec);
		break;
	}
	case MSG_FAIL: {
		json_t *f = json_loadb(buf, len, 0, NULL);
		const char *cat = f ? json_string_value(json_object_get(f, "category")) : NULL;
		const char *msg = f ? json_string_value(json_object_get(f, "message")) : NULL;
		int c = cat ? outcome_parse(cat) : -1;
		fail_rank(L, r, c > 0 ? (enum pkb_outcome)c : OUT_INTERNAL, "%s",
			  msg ? msg : "(no message)");
		json_decref(f);
		break;
	}
	case MSG_DONE:
		rr->done = 1;
		rr->phase_s = (double)(now_ns() - L->slot[r].phase_t0) / 1e9;
		end_phase(L, r, now_ns());
		break;
	default:
		fail_rank(L, r, OUT_INTERNAL, "rank %d sent message type %d", r, (int)type);
	}
	free(buf);
}

/* read what rank r sent and handle every complete message */
static void drain(struct launch *L, int r)
{
	struct rank_slot *s = &L->slot[r];
	proto_reader_fill(&s->rd, s->fd);
	enum msg_type t;
	char *buf;
	size_t len;
	int got;
	while ((got = proto_reader_next(&s->rd, &t, &buf, &len)) == 1)
		handle_msg(L, r, t, buf, len);
	if (got < 0)
		fail_rank(L, r, OUT_INTERNAL, "rank %d: corrupt message stream", r);
	if (s->rd.eof) {
		s->closed = 1;
		close(s->fd);
	}
}

static pid_t spawn_rank(const struct launch_opts *o, int r, int sock)
{
	char *log = xstrfmt("%s/rank_%d.log", o->log_dir, r);
	int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	free(log);
	if (logfd < 0)
		return -1;
	pid_t pid = fork();
	if (pid != 0) {
		close(logfd);
		return pid;
	}
	/* child: own process group (killed as a whole), socket on fd 3 */
	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	dup2(logfd, 1);
	dup2(logfd, 2);
	if (sock != 3) {
		dup2(sock, 3);
	} else {
		int fl = fcntl(3, F_GETFD);
		fcntl(3, F_SETFD, fl & ~FD_CLOEXEC);
	}
	close_range(4, ~0u, 0);
	char buf[32];
	snprintf(buf, sizeof buf, "%d", r);
	setenv("PKB_RANK", buf, 1);
	setenv("PKB_LOCAL_RANK", buf, 1);
	snprintf(buf, sizeof buf, "%d", o->world);
	setenv("PKB_WORLD", buf, 1);
	setenv("PKB_FD", "3", 1);
	/* never NVLink multicast: it can take shared GPUs out of service */
	setenv("NCCL_NVLS_ENABLE", "0", 1);
	setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
	setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
	/* the rank's environment is built, not inherited: what CUDA, NCCL and
	 * pkb read, never an API key, token or credential of the parent's
	 * (src/sandbox.c, docs/PROCESS.md) */
	char **env = sandbox_env_build(environ);
	if (o->argv) {
		execve(o->argv[0], (char *const *)o->argv, env);
	} else {
		const char *argv[] = { pkb_self_exe(), "__rank", NULL };
		execve(argv[0], (char *const *)argv, env);
	}
	error("cannot exec the rank program: %s", strerror(errno));
	_exit(127);
}

static void kill_all(struct launch *L)
{
	for (int r = 0; r < L->o->world; r++) {
		struct rank_report *rr = &L->res->ranks[r];
		if (rr->pid > 0 && !rr->exited)
			kill(-rr->pid, SIGKILL);
	}
}

static void reap(struct launch *L, int block_s)
{
	uint64_t until = now_ns() + (uint64_t)block_s * 1000000000ull;
	for (;;) {
		int left = 0;
		for (int r = 0; r < L->o->world; r++) {
			struct rank_report *rr = &L->res->ranks[r];
			if (rr->pid <= 0 || rr->exited)
				continue;
			int st;
			pid_t p = waitpid(rr->pid, &st, WNOHANG);
			if (p == rr->pid) {
				rr->exited = 1;
				rr->status = st;
			} else {
				left++;
			}
		}
		if (!left || now_ns() >= until)
			return;
		usleep(5000);
	}
}

static void describe_exit(int st, char *buf, size_t n)
{
	if (WIFSIGNALED(st))
		snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		snprintf(buf, n, "exited with status %d", WEXITSTATUS(st));
}

int launch_run(const struct launch_opts *o, struct launch_result *res)
{
	int W = o->world;
	memset(res, 0, sizeof *res);
	res->world = W;
	res->culprit = -1;
	res->ranks = xcalloc((size_t)W, sizeof *res->ranks);
	struct launch L = { .o = o, .res = res, .slot = xcalloc((size_t)W, sizeof *L.slot) };
	signal(SIGPIPE, SIG_IGN);
	uint64_t t0 = now_ns();

	for (int r = 0; r < W; r++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
			error("socketpair: %s", strerror(errno));
			goto fail_start;
		}
		res->ranks[r].pid = spawn_rank(o, r, sv[1]);
		close(sv[1]);
		L.slot[r].fd = sv[0];
		if (res->ranks[r].pid < 0) {
			error("cannot start rank %d: %s", r, strerror(errno));
			goto fail_start;
		}
		char start[64];
		snprintf(start, sizeof start, "%s|starting", phase_kind_name(PH_START));
		set_phase(&L, r, start);
		json_t *job = json_deep_copy(o->job);
		wire_job_address(job, r, W, r);
		char *txt = json_dumps(job, JSON_COMPACT);
		proto_send(L.slot[r].fd, MSG_JOB, txt, strlen(txt));
		free(txt);
		json_decref(job);
	}

	struct pollfd *pfd = xcalloc((size_t)W, sizeof *pfd);
	for (;;) {
		int live = 0;
		for (int r = 0; r < W; r++) {
			pfd[r].fd = L.slot[r].closed ? -1 : L.slot[r].fd;
			pfd[r].events = POLLIN;
			pfd[r].revents = 0;
			live += !L.slot[r].closed;
		}
		poll(pfd, (nfds_t)W, live ? 20 : 5);
		for (int r = 0; r < W; r++)
			if (!L.slot[r].closed && (pfd[r].revents & (POLLIN | POLLHUP | POLLERR)))
				drain(&L, r);
		reap(&L, 0);
		/* a rank may exit between our read and the reap: what it wrote
		 * before exiting is still in its socket, read it before judging */
		for (int r = 0; r < W; r++)
			if (res->ranks[r].exited && !L.slot[r].closed)
				drain(&L, r);

		uint64_t now = now_ns();
		int running = 0;
		for (int r = 0; r < W; r++) {
			struct rank_report *rr = &res->ranks[r];
			if (rr->exited) {
				if (!rr->done && !rr->failed && WIFEXITED(rr->status)
				    && WEXITSTATUS(rr->status) == SANDBOX_EXIT) {
					/* its own FAIL message was lost: the log names the call */
					fail_rank(&L, r, OUT_LOAD_REFUSED, "rank %d was ended by its "
						  "sandbox (a forbidden system call, named in its log) "
						  "in phase '%s'", r, rr->phase);
				} else if (!rr->done && !rr->failed && WIFSIGNALED(rr->status)
					   && WTERMSIG(rr->status) == SIGSYS) {
					/* the filter's trap with SIGSYS blocked: the kernel kills
					 * without running the handler that would name the call */
					fail_rank(&L, r, OUT_LOAD_REFUSED, "rank %d was killed by "
						  "SIGSYS in phase '%s': a system call its sandbox "
						  "forbids, made with signals blocked (as system(), "
						  "popen() and posix_spawn() start a process), so it "
						  "cannot be named", r, rr->phase);
				} else if (!rr->done && !rr->failed) {
					char how[96];
					describe_exit(rr->status, how, sizeof how);
					fail_rank(&L, r, OUT_RUNTIME_ERROR, "rank %d %s in phase '%s'%s",
						  r, how, rr->phase, WIFEXITED(rr->status)
						  && WEXITSTATUS(rr->status) == 0 ? " (an _exit() of the "
						  "solution? a rank never ends before it finishes)" : "");
				}
				continue;
			}
			running++;
			if (!rr->done && !rr->failed && now > L.slot[r].deadline)
				fail_rank(&L, r, OUT_TIMEOUT,
					  "rank %d: phase '%s' passed its %.0f s deadline", r,
					  rr->phase, L.slot[r].budget);
			if (rr->done && now > L.slot[r].deadline)
				/* done but will not exit: treat as hung in teardown */
				fail_rank(&L, r, OUT_TIMEOUT, "rank %d did not exit after finishing", r);
		}
		if (!running)
			break;
		if (L.fail_time && now - L.fail_time > (uint64_t)(o->grace_s * 1e9)) {
			kill_all(&L);
			break;
		}
	}
	free(pfd);
	kill_all(&L);   /* anything left (children of ranks included) */
	reap(&L, 30);
	for (int r = 0; r < W; r++) {
		if (!L.slot[r].closed)
			close(L.slot[r].fd);
		proto_reader_free(&L.slot[r].rd);
		free(L.slot[r].coll);
		if (!res->ranks[r].phase_s)
			res->ranks[r].phase_s = (double)(now_ns() - L.slot[r].phase_t0) / 1e9;
	}
	free(L.slot);
	res->wall_s = (double)(now_ns() - t0) / 1e9;
	if (res->culprit >= 0) {
		struct rank_report *c = &res->ranks[res->culprit];
		size_t off = (size_t)snprintf(res->message, sizeof res->message, "%s", c->message);
		if (res->outcome == OUT_TIMEOUT)
			for (int r = 0; r < W && off < sizeof res->message; r++)
				off += (size_t)snprintf(res->message + off, sizeof res->message - off,
							"%s rank %d: '%s'", r ? ";" : " (phases:",
							r, res->ranks[r].phase);
		if (res->outcome == OUT_TIMEOUT && off < sizeof res->message)
			snprintf(res->message + off, sizeof res->message - off, ")");
	}
	return 0;

fail_start:
	L.res = res;
	kill_all(&L);
	reap(&L, 10);
	for (int r = 0; r < W; r++)
		if (L.slot[r].fd > 0)
			close(L.slot[r].fd);
	free(L.slot);
	return -1;
}

void launch_result_free(struct launch_result *res)
{
	free(res->ranks);
	res->ranks = NULL;
}
