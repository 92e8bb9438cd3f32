/*
 * launch.c -- see launch.h.
 *
 * One poll loop over the W sockets. Every message from a rank is a phase
 * change, a collective contribution, a result, a failure or "done". A phase
 * change re-arms that rank's deadline with the budget of the phase's kind.
 * The first failure (a FAIL message, a rank that exits without DONE, or an
 * expired deadline) decides the outcome; the other ranks get grace_s to
 * report their own view, then every rank's process group is SIGKILLed.
 *
 * Across nodes (docs/MULTINODE.md) node 0 runs this same loop over all W
 * ranks: those of the other agents are slots without a socket, whose
 * messages and exits come over the agent's link, and whom a kill reaches
 * through it. The other agents run relay(): start their ranks, pass every
 * message up, pass collectives, records and kills down, and end with node
 * 0's report. On a single node none of the link code runs.
 */
#define _GNU_SOURCE
#include "launch.h"
#include "proto.h"   /* defines: proto_send, proto_reader */
#include "rendezvous.h"   /* defines: struct rdv_env, rdv_link, rdv_coordinate, rdv_join */
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
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Budgets, in seconds, from phases.h (which says what each bounds). */
#define PKB_PHASE_BUDGET_(id, name, secs, help) [PH_##id] = secs,
static const double default_deadline[PH_KIND_COUNT] = { PKB_PHASES(PKB_PHASE_BUDGET_) };
#undef PKB_PHASE_BUDGET_

void launch_opts_init(struct launch_opts *o, int world)
{
	memset(o, 0, sizeof *o);
	o->world = world;
	o->grace_s = 2.0;
	o->rendezvous_s = 300;
	memcpy(o->deadline_s, default_deadline, sizeof default_deadline);
}

struct rank_slot {
	int fd;
	struct proto_reader rd;
	uint64_t deadline;     /* ns, monotonic */
	uint64_t phase_t0;
	int kind;              /* of the current phase, -1 unknown or none */
	int seen[PH_KIND_COUNT];   /* announcements of each kind */
	int last_order;        /* phase_order of the latest announcement */
	double budget;
	int closed;
	char *coll;            /* this rank's pending collective contribution */
	size_t coll_len;
	int coll_pending;
	uint64_t done_t;       /* ns: its MSG_DONE */
};

struct launch {
	const struct launch_opts *o;
	struct launch_result *res;
	struct rank_slot *slot;
	uint64_t fail_time;    /* 0 until the first failure */
	int first, count;      /* the ranks started here: all W on one node */
	struct rdv_layout lay; /* this agent's host's ranks */
	/* across nodes: node 0 holds links[1 .. n_links-1] to the agents, an
	 * agent links[0] to node 0; n_links 0 on a single node */
	struct rdv_link *links;
	int n_links;
	int kill_sent;
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

/* the order in which a rank goes through the kinds within a solution's
 * round (rank.c; load starts the next solution's round): do_run saves
 * before perf_solution times */
static const int phase_order[PH_KIND_COUNT] = {
	[PH_START] = 0, [PH_CUDA_INIT] = 1, [PH_NCCL_INIT] = 2, [PH_LOAD] = 3, [PH_INIT] = 4,
	[PH_TRIAL] = 5, [PH_SAVE] = 6, [PH_TIMING] = 7, [PH_FINI] = 8,
};

static int phases_limited(const struct launch_opts *o)
{
	for (int k = 0; k < PH_KIND_COUNT; k++)
		if (o->phase_max[k])
			return 1;
	return 0;
}

/* 0, or -1 after failing rank r: an announcement the job does not make */
static int phase_allowed(struct launch *L, int r, int k, const char *text)
{
	struct rank_slot *s = &L->slot[r];
	if (!phases_limited(L->o))
		return 0;
	if (k < 0) {
		fail_rank(L, r, OUT_FLAGGED, "rank %d announced a phase of no known kind ('%.60s'): "
			  "a message the harness's rank does not send", r, text);
		return -1;
	}
	int max = L->o->phase_max[k] < 0 ? 0 : L->o->phase_max[k];
	if (L->o->phase_max[k] && ++s->seen[k] > max) {
		fail_rank(L, r, OUT_FLAGGED, "rank %d announced phase kind '%s' %d times; the job "
			  "has %d: a message the harness's rank does not send", r,
			  phase_kind_name((enum phase_kind)k), s->seen[k], max);
		return -1;
	}
	/* the judge starts each solution's process in turn: load begins a
	 * solution's round of load, init, trials, timing and fini again */
	if (k == PH_LOAD)
		s->last_order = phase_order[PH_LOAD];
	if (phase_order[k] < s->last_order) {
		fail_rank(L, r, OUT_FLAGGED, "rank %d announced phase '%.60s' after a later kind: a "
			  "message the harness's rank does not send", r, text);
		return -1;
	}
	s->last_order = phase_order[k];
	return 0;
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
	if (phase_allowed(L, r, k, text) < 0)
		return;
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
	for (int i = 1; i < L->n_links; i++)
		if (L->links[i].fd >= 0)
			proto_send_pre(L->links[i].fd, MSG_NODE_COLL, NULL, 0, all, total, RDV_MAX_FRAME);
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
		if (L->o->check_result && L->o->check_result(L->o->arg, r, rec, why, sizeof why) < 0) {
			fail_rank(L, r, OUT_FLAGGED, "%s", why);
			json_decref(rec);
			break;
		}
		if (L->o->on_result)
			L->o->on_result(L->o->arg, r, rec);
		json_decref(rec);
		/* every agent reports the same verdict: each gets every record */
		for (int i = 1; i < L->n_links; i++)
			if (L->links[i].fd >= 0)
				rdv_send_rank(L->links[i].fd, MSG_NODE_RECORD, r, 0, buf, len);
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
		L->slot[r].done_t = now_ns();
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
	pid_t parent = getpid();
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
	/* across nodes an agent can be killed (-9) with its ranks mid-trial:
	 * they die with it rather than hold their GPUs */
	if (o->nodes && (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent))
		_exit(127);
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
	/* the rank's number, world and host ranks travel in its job (wire.h) */
	setenv("PKB_FD", "3", 1);
	if (o->tmp_dir)
		setenv("TMPDIR", o->tmp_dir, 1);
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
	/* node 0: the other agents kill theirs */
	for (int i = 1; i < L->n_links && !L->kill_sent; i++)
		if (L->links[i].fd >= 0)
			proto_send(L->links[i].fd, MSG_NODE_KILL, NULL, 0);
	L->kill_sent |= L->n_links > 1;
}

/* rank r has exited with wait status st (reaped here, or on its agent's
 * word): after its "done", the time its teardown took */
static void mark_exited(struct launch *L, int r, int st)
{
	struct rank_report *rr = &L->res->ranks[r];
	rr->exited = 1;
	rr->status = st;
	if (rr->done && L->slot[r].done_t)
		rr->exit_s = (double)(now_ns() - L->slot[r].done_t) / 1e9;
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
				mark_exited(L, r, st);
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

/* start the ranks of this agent (all W on one node), each with its job */
static int spawn_all(struct launch *L)
{
	const struct launch_opts *o = L->o;
	int W = o->world;
	for (int r = L->first; r < L->first + L->count; r++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			return error("socketpair: %s", strerror(errno));
		int local = r - L->lay.host_first;
		L->res->ranks[r].pid = spawn_rank(o, r, sv[1]);
		close(sv[1]);
		L->slot[r].fd = sv[0];
		if (L->res->ranks[r].pid < 0)
			return error("cannot start rank %d: %s", r, strerror(errno));
		char start[64];
		snprintf(start, sizeof start, "%s|starting", phase_kind_name(PH_START));
		set_phase(L, r, start);
		json_t *job = json_deep_copy(o->job);
		wire_job_address(job, r, W, local, L->lay.host_first, L->lay.host_size);
		char *txt = json_dumps(job, JSON_COMPACT);
		proto_send(L->slot[r].fd, MSG_JOB, txt, strlen(txt));
		free(txt);
		json_decref(job);
	}
	return 0;
}

/* " (phases: rank 0: 'x'; rank 1: 'y')" after res->message[off] */
static void append_phases(struct launch_result *res, size_t off, int lo, int hi)
{
	for (int r = lo; r < hi && off < sizeof res->message; r++)
		off += (size_t)snprintf(res->message + off, sizeof res->message - off,
					"%s rank %d: '%s'", r > lo ? ";" : " (phases:", r,
					res->ranks[r].phase);
	if (off < sizeof res->message)
		snprintf(res->message + off, sizeof res->message - off, ")");
}

/* ---- node 0's links -------------------------------------------------------- */

/* every rank of agent i that has not ended ends here, as a timeout: its
 * agent is gone (killed, or silent past RDV_SILENCE_S) */
static void node_lost(struct launch *L, int i, const char *why)
{
	struct rdv_link *k = &L->links[i];
	if (k->fd < 0)
		return;
	close(k->fd);
	k->fd = -1;
	for (int r = k->first; r < k->first + k->count; r++) {
		struct rank_report *rr = &L->res->ranks[r];
		if (!rr->exited && !rr->done && !rr->failed)
			fail_rank(L, r, OUT_TIMEOUT, "rank %d: node %d (%s) lost in phase '%s': %s", r,
				  i, k->host, rr->phase, why);
		rr->exited = 1;
	}
}

/* one frame from agent i */
static int node_frame(struct launch *L, int i, enum msg_type t, char *buf, size_t len)
{
	struct rdv_link *k = &L->links[i];
	int r;
	uint32_t v;
	const char *pl;
	size_t plen;
	if (t == MSG_NODE_PING)
		return 0;
	if ((t != MSG_NODE_RANK && t != MSG_NODE_EXIT) ||
	    rdv_rank_frame(buf, len, k->first, k->first + k->count, &r, &v, &pl, &plen) < 0)
		return -1;
	if (t == MSG_NODE_EXIT) {
		mark_exited(L, r, (int)v);
		return 0;
	}
	char *msg = xmalloc(plen + 1);
	memcpy(msg, pl, plen);
	msg[plen] = 0;
	handle_msg(L, r, (enum msg_type)v, msg, plen);
	return 0;
}

/* read, ping and watch node 0's links; pfd[i] is links[i]'s */
static void links_service(struct launch *L, const struct pollfd *pfd)
{
	uint64_t now = now_ns();
	for (int i = 1; i < L->n_links; i++) {
		struct rdv_link *k = &L->links[i];
		if (k->fd < 0)
			continue;
		if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) {
			proto_reader_fill(&k->rd, k->fd);
			enum msg_type t;
			char *buf;
			size_t len;
			int got;
			while ((got = proto_reader_next(&k->rd, &t, &buf, &len)) == 1) {
				k->heard = now;
				int bad = node_frame(L, i, t, buf, len);
				free(buf);
				if (bad) {
					node_lost(L, i, "it sent a malformed frame");
					break;
				}
			}
			if (got < 0)
				node_lost(L, i, "it sent a corrupt stream");
			else if (k->rd.eof)
				node_lost(L, i, "its link closed");
		}
		const char *why = k->fd >= 0 ? rdv_link_tick(k, now) : NULL;
		if (why)
			node_lost(L, i, why);
	}
}

/* ---- an agent of node > 0 ---------------------------------------------------- */

/* pass everything rank r sent up to node 0, noting its phase here */
static int relay_drain(struct launch *L, int r)
{
	struct rank_slot *s = &L->slot[r];
	int up = L->links[0].fd;
	proto_reader_fill(&s->rd, s->fd);
	enum msg_type t;
	char *buf;
	size_t len;
	int got;
	while ((got = proto_reader_next(&s->rd, &t, &buf, &len)) == 1) {
		if (t == MSG_PHASE)
			set_phase(L, r, buf);
		if (up >= 0 && rdv_send_rank(up, MSG_NODE_RANK, r, (uint32_t)t, buf, len) < 0)
			up = -1;
		free(buf);
	}
	if (got < 0 && up >= 0) {
		char m[128];
		snprintf(m, sizeof m, "{\"category\":\"internal_error\",\"message\":"
			 "\"rank %d: corrupt message stream\"}", r);
		rdv_send_rank(up, MSG_NODE_RANK, r, MSG_FAIL, m, strlen(m));
	}
	if (s->rd.eof || got < 0) {
		s->closed = 1;
		close(s->fd);
	}
	return up;
}

/* one frame from node 0; 1 at its report, 0 else, -1 if malformed */
static int relay_frame(struct launch *L, enum msg_type t, char *buf, size_t len)
{
	int r;
	uint32_t v;
	const char *pl;
	size_t plen;
	char err[300];
	switch (t) {
	case MSG_NODE_PING:
		return 0;
	case MSG_NODE_COLL:
		for (int k = L->first; k < L->first + L->count; k++)
			if (!L->slot[k].closed)
				proto_send(L->slot[k].fd, MSG_COLL, buf, len);
		return 0;
	case MSG_NODE_KILL:
		kill_all(L);
		return 0;
	case MSG_NODE_RECORD: {
		if (rdv_rank_frame(buf, len, 0, L->o->world, &r, &v, &pl, &plen) < 0)
			return -1;
		json_t *rec = json_loadb(pl, plen, 0, NULL);
		/* node 0 checked it; the check again costs nothing and keeps
		 * on_result's promise on this side of a network */
		if (!rec || wire_record_check(rec, err, sizeof err) < 0) {
			json_decref(rec);
			return -1;
		}
		/* node 0 took it (or failed the launch for it): the same check
		 * keeps this agent's records the same as node 0's */
		if ((!L->o->check_result ||
		     L->o->check_result(L->o->arg, r, rec, err, sizeof err) == 0) && L->o->on_result)
			L->o->on_result(L->o->arg, r, rec);
		json_decref(rec);
		return 0;
	}
	case MSG_NODE_END: {
		json_t *rep = json_loadb(buf, len, 0, NULL);
		int bad = !rep || rdv_report_unpack(rep, L->res, err, sizeof err) < 0;
		json_decref(rep);
		return bad ? -1 : 1;
	}
	default:
		return -1;
	}
}

/* Start this agent's ranks and relay until node 0's report, or until
 * node 0 is lost: then every rank here is killed and the outcome is a
 * timeout naming the phase each of them was in. */
static void relay(struct launch *L, uint64_t t0)
{
	struct launch_result *res = L->res;
	struct rdv_link *up = &L->links[0];
	const struct rdv_env *e = L->o->nodes;
	int W = L->o->world, G = L->count, ended = 0;
	char lost[160] = "";
	for (int r = 0; r < W; r++)
		L->slot[r].closed = r < L->first || r >= L->first + G;
	if (spawn_all(L) < 0) {
		snprintf(lost, sizeof lost, "could not start the ranks here");
		res->outcome = OUT_INTERNAL;
	}
	struct pollfd *pfd = xcalloc((size_t)G + 1, sizeof *pfd);
	while (!lost[0] && !ended) {
		for (int k = 0; k < G; k++) {
			struct rank_slot *s = &L->slot[L->first + k];
			pfd[k] = (struct pollfd){ .fd = s->closed ? -1 : s->fd, .events = POLLIN };
		}
		pfd[G] = (struct pollfd){ .fd = up->fd, .events = POLLIN };
		poll(pfd, (nfds_t)G + 1, 20);
		for (int k = 0; k < G; k++)
			if (!L->slot[L->first + k].closed && (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
				relay_drain(L, L->first + k);
		/* exits go up after everything the rank wrote before it */
		for (int r = L->first; r < L->first + G; r++) {
			struct rank_report *rr = &res->ranks[r];
			if (rr->exited)
				continue;
			int st;
			if (waitpid(rr->pid, &st, WNOHANG) != rr->pid)
				continue;
			mark_exited(L, r, st);
			if (!L->slot[r].closed)
				relay_drain(L, r);
			if (up->fd >= 0)
				rdv_send_rank(up->fd, MSG_NODE_EXIT, r, (uint32_t)st, NULL, 0);
		}
		uint64_t now = now_ns();
		if (up->fd >= 0 && (pfd[G].revents & (POLLIN | POLLHUP | POLLERR))) {
			proto_reader_fill(&up->rd, up->fd);
			enum msg_type t;
			char *buf;
			size_t len;
			int got;
			while (!ended && (got = proto_reader_next(&up->rd, &t, &buf, &len)) == 1) {
				up->heard = now;
				int f = relay_frame(L, t, buf, len);
				free(buf);
				if (f < 0)
					snprintf(lost, sizeof lost, "it sent a malformed frame");
				if (f != 0)
					ended = 1;
			}
			if (!ended && (got < 0 || up->rd.eof))
				snprintf(lost, sizeof lost, "%s", got < 0 ? "it sent a corrupt stream"
					 : "its link closed");
		}
		const char *why = !ended && !lost[0] ? rdv_link_tick(up, now) : NULL;
		if (why)
			snprintf(lost, sizeof lost, "%s", why);
	}
	/* node 0 is gone, or has spoken (after every rank here exited, or
	 * after its kill): nothing here outlives it */
	free(pfd);
	kill_all(L);
	reap(L, 30);
	for (int r = L->first; r < L->first + G; r++)
		if (!L->slot[r].closed && L->slot[r].fd > 0)
			close(L->slot[r].fd);
	if (lost[0] && res->outcome != OUT_INTERNAL) {
		res->outcome = OUT_TIMEOUT;
		res->culprit = -1;
		size_t off = (size_t)snprintf(res->message, sizeof res->message,
					      "node %d lost node 0 at %s:%d: %s", e->node, e->addr,
					      e->port, lost);
		append_phases(res, off, L->first, L->first + G);
	} else if (lost[0]) {
		snprintf(res->message, sizeof res->message, "node %d: %s", e->node, lost);
	}
	if (!ended)
		res->wall_s = (double)(now_ns() - t0) / 1e9;
}

/* ---- the launch ----------------------------------------------------------------- */

/* Across nodes: the agents meet (rendezvous.c). Node 0 gets 0, the other
 * agents' ranks made slots without a socket, and goes on to start its own;
 * any other agent relays its ranks to node 0 until the end, and a meeting
 * that fails is an env_error: 1, the launch's work done. */
static int meet_nodes(struct launch *L, uint64_t t0)
{
	const struct launch_opts *o = L->o;
	struct launch_result *res = L->res;
	const struct rdv_env *e = o->nodes;
	int W = o->world;
	/* the agents meet; what cannot meet is this machine's environment */
	char err[sizeof res->message];
	L->n_links = e->nodes;
	L->links = xcalloc((size_t)e->nodes, sizeof *L->links);
	L->count = W / e->nodes;
	L->first = e->node * L->count;
	int met = e->node == 0
		  ? rdv_coordinate(e, W, o->job, o->rendezvous_s, L->links, &L->lay, err, sizeof err)
		  : rdv_join(e, W, o->job, o->rendezvous_s, &L->links[0], &L->lay, err, sizeof err);
	if (met < 0 || e->node > 0) {
		if (met < 0) {
			res->outcome = OUT_ENV_ERROR;
			snprintf(res->message, sizeof res->message, "%s", err);
		} else {
			relay(L, t0);
		}
		for (int r = 0; r < W; r++)
			proto_reader_free(&L->slot[r].rd);
		if (L->links[0].fd >= 0 && met == 0)
			close(L->links[0].fd);
		proto_reader_free(&L->links[0].rd);
		free(L->links);
		free(L->slot);
		if (met < 0)
			res->wall_s = (double)(now_ns() - t0) / 1e9;
		return 1;
	}
	/* node 0: the other agents' ranks are slots without a socket */
	char start[64];
	snprintf(start, sizeof start, "%s|starting", phase_kind_name(PH_START));
	for (int r = L->count; r < W; r++) {
		L->slot[r].fd = -1;
		L->slot[r].closed = 1;
		set_phase(L, r, start);
	}
	return 0;
}

/* Each rank at `now`: one that exited without its DONE or a FAIL fails
 * with what its exit says, one past its phase's deadline times out; the
 * count of those still running */
static int judge_ranks(struct launch *L, uint64_t now)
{
	struct launch_result *res = L->res;
	int running = 0;
	for (int r = 0; r < L->o->world; r++) {
		struct rank_report *rr = &res->ranks[r];
		if (rr->exited) {
			if (!rr->done && !rr->failed && WIFEXITED(rr->status)
			    && WEXITSTATUS(rr->status) == SANDBOX_EXIT) {
				/* its own FAIL message was lost: the log names the call */
				fail_rank(L, r, OUT_LOAD_REFUSED, "rank %d was ended by its "
					  "sandbox (a forbidden system call, named in its log) "
					  "in phase '%s'", r, rr->phase);
			} else if (!rr->done && !rr->failed && WIFSIGNALED(rr->status)
				   && WTERMSIG(rr->status) == SIGSYS) {
				/* the filter's trap with SIGSYS blocked: the kernel kills
				 * without running the handler that would name the call */
				fail_rank(L, r, OUT_LOAD_REFUSED, "rank %d was killed by "
					  "SIGSYS in phase '%s': a system call its sandbox "
					  "forbids, made with signals blocked (as system(), "
					  "popen() and posix_spawn() start a process), so it "
					  "cannot be named", r, rr->phase);
			} else if (!rr->done && !rr->failed) {
				char how[96];
				describe_exit(rr->status, how, sizeof how);
				fail_rank(L, r, OUT_RUNTIME_ERROR, "rank %d %s in phase '%s'%s",
					  r, how, rr->phase, WIFEXITED(rr->status)
					  && WEXITSTATUS(rr->status) == 0 ? " (an _exit() of the "
					  "solution? a rank never ends before it finishes)" : "");
			}
			continue;
		}
		running++;
		if (!rr->done && !rr->failed && now > L->slot[r].deadline)
			fail_rank(L, r, OUT_TIMEOUT,
				  "rank %d: phase '%s' passed its %.0f s deadline", r,
				  rr->phase, L->slot[r].budget);
		if (rr->done && now > L->slot[r].deadline)
			/* done but will not exit: treat as hung in teardown */
			fail_rank(L, r, OUT_TIMEOUT, "rank %d did not exit after finishing", r);
	}
	return running;
}

int launch_run(const struct launch_opts *o, struct launch_result *res)
{
	int W = o->world;
	memset(res, 0, sizeof *res);
	res->world = W;
	res->culprit = -1;
	res->ranks = xcalloc((size_t)W, sizeof *res->ranks);
	struct launch L = { .o = o, .res = res, .slot = xcalloc((size_t)W, sizeof *L.slot),
			    .first = 0, .count = W, .lay = { .host_first = 0, .host_size = W } };
	signal(SIGPIPE, SIG_IGN);
	uint64_t t0 = now_ns();

	if (o->nodes && o->nodes->nodes > 1 && meet_nodes(&L, t0))
		return 0;

	if (spawn_all(&L) < 0)
		goto fail_start;

	int NL = L.n_links > 1 ? L.n_links : 0;
	struct pollfd *pfd = xcalloc((size_t)W + (size_t)NL, sizeof *pfd);
	for (;;) {
		int live = 0;
		for (int r = 0; r < W; r++) {
			pfd[r].fd = L.slot[r].closed ? -1 : L.slot[r].fd;
			pfd[r].events = POLLIN;
			pfd[r].revents = 0;
			live += !L.slot[r].closed;
		}
		for (int i = 0; i < NL; i++)   /* [0], node 0's own, is none */
			pfd[W + i] = (struct pollfd){ .fd = i ? L.links[i].fd : -1, .events = POLLIN };
		poll(pfd, (nfds_t)(W + NL), live ? 20 : 5);
		for (int r = 0; r < W; r++)
			if (!L.slot[r].closed && (pfd[r].revents & (POLLIN | POLLHUP | POLLERR)))
				drain(&L, r);
		if (NL)
			links_service(&L, pfd + W);
		reap(&L, 0);
		/* a rank may exit between our read and the reap: what it wrote
		 * before exiting is still in its socket, read it before judging */
		for (int r = 0; r < W; r++)
			if (res->ranks[r].exited && !L.slot[r].closed)
				drain(&L, r);

		uint64_t now = now_ns();
		int running = judge_ranks(&L, now);
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
			append_phases(res, off, 0, W);
	}
	/* every agent ends with node 0's report */
	if (NL) {
		json_t *rep = rdv_report_pack(res);
		char *txt = json_dumps(rep, JSON_COMPACT);
		for (int i = 1; i < NL; i++)
			if (L.links[i].fd >= 0)
				proto_send(L.links[i].fd, MSG_NODE_END, txt, strlen(txt));
		free(txt);
		json_decref(rep);
		rdv_links_close(L.links, 1, NL);
	}
	for (int i = 0; i < L.n_links; i++)
		proto_reader_free(&L.links[i].rd);
	free(L.links);
	return 0;

fail_start:
	L.res = res;
	kill_all(&L);
	reap(&L, 10);
	for (int r = 0; r < W; r++)
		if (L.slot[r].fd > 0)
			close(L.slot[r].fd);
	for (int i = 1; i < L.n_links; i++)
		if (L.links[i].fd >= 0)
			close(L.links[i].fd);
	for (int i = 0; i < L.n_links; i++)
		proto_reader_free(&L.links[i].rd);
	free(L.links);
	free(L.slot);
	return -1;
}

void launch_result_free(struct launch_result *res)
{
	free(res->ranks);
	res->ranks = NULL;
}
