/*
 * test_rendezvous.c -- the node agents' meeting (src/rendezvous.c) on the
 * CPU: the launchers' variables, the frames of a node link and their
 * parsers (bounds: a short frame, a rank out of range, an oversized
 * header), the hello check (which differences are fatal, which just drop a
 * stranger), the final report both ways, and a real meeting of two agents
 * over loopback TCP (fork), where node 1 adopts node 0's warmup.
 */
#define _GNU_SOURCE
#include "t.h"
#include "launch.h"
#include "rendezvous.h"
#include "util.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const vars[] = {
	"RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
	"MASTER_ADDR", "MASTER_PORT",
};

static void clear_env(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++)
		unsetenv(vars[i]);
}

static void test_env(void)
{
	struct rdv_env e;
	char err[300];
	clear_env();
	CHECK(rdv_env_read("env", &e, err, sizeof err) < 0 && strstr(err, "none of"));
	CHECK(rdv_env_read("slurm", &e, err, sizeof err) < 0 && strstr(err, "SLURM_NTASKS is not set"));
	CHECK(rdv_env_read("pbs", &e, err, sizeof err) < 0 && strstr(err, "not 'pbs'"));
	setenv("SLURM_PROCID", "1", 1);
	setenv("SLURM_NTASKS", "2", 1);
	setenv("SLURM_LOCALID", "0", 1);
	CHECK(rdv_env_read("slurm", &e, err, sizeof err) < 0 && strstr(err, "MASTER_ADDR"));
	setenv("MASTER_ADDR", "node-a", 1);
	CHECK(rdv_env_read("slurm", &e, err, sizeof err) < 0 && strstr(err, "MASTER_PORT is not set"));
	setenv("MASTER_PORT", "70000", 1);
	CHECKF(rdv_env_read("slurm", &e, err, sizeof err) < 0 && strstr(err, "from 1 to 65535"), "%s", err);
	setenv("MASTER_PORT", "29500", 1);
	CHECKF(rdv_env_read("slurm", &e, err, sizeof err) == 0, "%s", err);
	CHECK(e.node == 1 && e.nodes == 2 && e.local == 0 && e.port == 29500 &&
	      !strcmp(e.addr, "node-a") && !strcmp(e.launcher, "slurm"));
	setenv("PKB_MASTER_PORT", "29501", 1);
	CHECK(rdv_env_read("slurm", &e, err, sizeof err) == 0 && e.port == 29501);
	setenv("PKB_MASTER_PORT", "0", 1);
	CHECK(rdv_env_read("slurm", &e, err, sizeof err) < 0 && strstr(err, "PKB_MASTER_PORT='0'"));
	unsetenv("PKB_MASTER_PORT");
	/* env: torchrun inside an sbatch script is torchrun's world */
	setenv("RANK", "3", 1);
	setenv("WORLD_SIZE", "4", 1);
	CHECK(rdv_env_read("env", &e, err, sizeof err) == 0 && !strcmp(e.launcher, "torch") &&
	      e.node == 3 && e.nodes == 4);
	setenv("OMPI_COMM_WORLD_RANK", "0", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
	CHECK(rdv_env_read("env", &e, err, sizeof err) == 0 && !strcmp(e.launcher, "torch"));
	unsetenv("RANK");
	CHECK(rdv_env_read("env", &e, err, sizeof err) == 0 && !strcmp(e.launcher, "mpi") &&
	      e.nodes == 8);
	CHECK(rdv_env_read("mpi", &e, err, sizeof err) == 0 && e.node == 0);
	/* bounds: rank < world, integers only */
	setenv("RANK", "4", 1);
	CHECK(rdv_env_read("torch", &e, err, sizeof err) < 0 && strstr(err, "from 0 to 3"));
	setenv("RANK", "1x", 1);
	CHECK(rdv_env_read("torch", &e, err, sizeof err) < 0 && strstr(err, "'1x'"));
	setenv("RANK", "-1", 1);
	CHECK(rdv_env_read("torch", &e, err, sizeof err) < 0);
	setenv("WORLD_SIZE", "99999999999999999999", 1);
	setenv("RANK", "0", 1);
	CHECK(rdv_env_read("torch", &e, err, sizeof err) < 0);
	setenv("WORLD_SIZE", "0", 1);
	CHECK(rdv_env_read("torch", &e, err, sizeof err) < 0);
	/* one task: no meeting, no port */
	setenv("WORLD_SIZE", "1", 1);
	unsetenv("MASTER_PORT");
	unsetenv("MASTER_ADDR");
	CHECK(rdv_env_read("torch", &e, err, sizeof err) == 0 && e.nodes == 1);
	char *longaddr = xmalloc(400);
	memset(longaddr, 'a', 399);
	longaddr[399] = 0;
	setenv("MASTER_ADDR", longaddr, 1);
	CHECK(rdv_env_read("torch", &e, err, sizeof err) < 0 && strstr(err, "longer"));
	free(longaddr);
	clear_env();
}

static void test_frames(void)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(rdv_send_rank(sv[0], MSG_NODE_RANK, 5, MSG_PHASE, "trial|x", 7) == 0);
	enum msg_type t;
	char *buf;
	size_t len;
	CHECK(proto_recv(sv[1], &t, &buf, &len) == 0 && t == MSG_NODE_RANK && len == 15);
	int r;
	uint32_t v;
	const char *pl;
	size_t plen;
	CHECK(rdv_rank_frame(buf, len, 4, 8, &r, &v, &pl, &plen) == 0 && r == 5 && v == MSG_PHASE &&
	      plen == 7 && !memcmp(pl, "trial|x", 7));
	CHECK(rdv_rank_frame(buf, len, 6, 8, &r, &v, &pl, &plen) < 0);   /* not this agent's */
	CHECK(rdv_rank_frame(buf, len, 0, 5, &r, &v, &pl, &plen) < 0);
	CHECK(rdv_rank_frame(buf, 7, 0, 8, &r, &v, &pl, &plen) < 0);     /* shorter than the prefix */
	free(buf);
	/* rank 0xffffffff is not a negative rank that passes */
	char neg[8] = { -1, -1, -1, -1, 0, 0, 0, 0 };
	CHECK(rdv_rank_frame(neg, 8, 0, 8, &r, &v, &pl, &plen) < 0);
	/* little-endian on the wire, whatever the host */
	CHECK(rdv_send_rank(sv[0], MSG_NODE_EXIT, 258, 9, NULL, 0) == 0);
	CHECK(proto_recv(sv[1], &t, &buf, &len) == 0 && len == 8 && buf[0] == 2 && buf[1] == 1 &&
	      buf[4] == 9);
	free(buf);
	/* the payload bound holds for the prefix too */
	CHECK(proto_send_pre(sv[0], MSG_NODE_RANK, "12345678", 8, "x", 10, 16) < 0);
	CHECK(proto_send_pre(sv[0], MSG_NODE_RANK, "12345678", 8, "x", (size_t)-4, 16) < 0);
	/* a reader with a bound refuses a header that promises more */
	struct { uint32_t magic, type, len; } h = { 0x706b6231u, MSG_NODE_HELLO, 2000 };
	CHECK(write(sv[0], &h, sizeof h) == sizeof h);
	struct proto_reader rd = { .max = 1000 };
	CHECK(proto_reader_fill(&rd, sv[1]) == 0);
	CHECK(proto_reader_next(&rd, &t, &buf, &len) < 0);
	proto_reader_free(&rd);
	/* the heartbeat: a ping each second, lost after 15 s of silence */
	uint64_t now = 100000000000ull;
	struct rdv_link k = { .fd = sv[0], .heard = now - 2000000000ull, .pinged = now - 1500000000ull };
	CHECK(rdv_link_tick(&k, now) == NULL && k.pinged == now);
	CHECK(proto_recv(sv[1], &t, &buf, &len) == 0 && t == MSG_NODE_PING && len == 0);
	free(buf);
	CHECK(rdv_link_tick(&k, now + 500000000ull) == NULL && k.pinged == now);   /* not due */
	k.heard = now - 16000000000ull;
	CHECK(rdv_link_tick(&k, now) && strstr(rdv_link_tick(&k, now), "silent"));
	k.heard = now;
	k.pinged = 0;
	close(sv[1]);
	CHECK(rdv_link_tick(&k, now) && strstr(rdv_link_tick(&k, now + 2000000000ull), "broke"));
	close(sv[0]);
}

static json_t *a_job(const char *so, int warmup, int trials)
{
	return json_pack("{s:s,s:s,s:i,s:[{s:s,s:s,s:b}],s:{s:i,s:i,s:i,s:s}}", "mode", "eval",
			 "problem", "1", "trials", trials, "solutions", "role", "candidate", "so", so,
			 "nccl", 0, "perf", "warmup", warmup, "iters", 100, "block", 10, "mode", "warm");
}

static void test_hello(void)
{
	struct rdv_env e = { .node = 0, .nodes = 2, .port = 1 };
	json_t *mine = a_job("/a/cache/abc.so", 503, 5);
	json_t *hello = json_pack("{s:i,s:i,s:i,s:i,s:s,s:o}", "v", 1, "node", 1, "nodes", 2, "world",
				  4, "host", "b", "job", a_job("/b/other/abc.so", 510, 5));
	int node = -1, fatal = -1;
	char err[600];
	CHECKF(rdv_hello_check(hello, &e, 4, mine, &node, &fatal, err, sizeof err) == 0 && node == 1 &&
	       !fatal, "%s", err);
	/* another world */
	CHECK(rdv_hello_check(hello, &e, 6, mine, &node, &fatal, err, sizeof err) < 0 && fatal &&
	      strstr(err, "node 1 counts 2 nodes and 4 ranks, node 0 counts 2 and 6"));
	/* another job: another candidate (its hash), other trials */
	json_object_set_new(hello, "job", a_job("/b/other/def.so", 1, 5));
	CHECK(rdv_hello_check(hello, &e, 4, mine, &node, &fatal, err, sizeof err) < 0 && fatal &&
	      strstr(err, "'solutions' differs"));
	json_object_set_new(hello, "job", a_job("/a/cache/abc.so", 503, 6));
	CHECK(rdv_hello_check(hello, &e, 4, mine, &node, &fatal, err, sizeof err) < 0 && fatal &&
	      strstr(err, "'trials' differs"));
	/* node 0 is taken, node 2 of 2 does not exist */
	json_object_set_new(hello, "job", a_job("/a/cache/abc.so", 503, 5));
	json_object_set_new(hello, "node", json_integer(0));
	CHECK(rdv_hello_check(hello, &e, 4, mine, &node, &fatal, err, sizeof err) < 0 && fatal);
	json_object_set_new(hello, "node", json_integer(2));
	CHECK(rdv_hello_check(hello, &e, 4, mine, &node, &fatal, err, sizeof err) < 0 && fatal);
	json_object_set_new(hello, "node", json_integer(1));
	json_object_set_new(hello, "v", json_integer(2));
	CHECK(rdv_hello_check(hello, &e, 4, mine, &node, &fatal, err, sizeof err) < 0 && fatal &&
	      strstr(err, "protocol 2"));
	/* not a hello at all: a stranger, dropped, nobody stops */
	json_object_set_new(hello, "v", json_string("1"));
	CHECK(rdv_hello_check(hello, &e, 4, mine, &node, &fatal, err, sizeof err) < 0 && !fatal &&
	      strstr(err, "not a pkb hello"));
	json_object_set_new(hello, "v", json_integer(1));
	json_object_set_new(hello, "extra", json_true());
	CHECK(rdv_hello_check(hello, &e, 4, mine, &node, &fatal, err, sizeof err) < 0 && !fatal);
	json_t *arr = json_array();
	CHECK(rdv_hello_check(arr, &e, 4, mine, &node, &fatal, err, sizeof err) < 0 && !fatal);
	json_decref(arr);
	json_decref(hello);
	json_decref(mine);
}

static void test_report(void)
{
	struct launch_result a = { .outcome = OUT_TIMEOUT, .culprit = 2, .world = 3, .wall_s = 1.5 };
	a.ranks = xcalloc(3, sizeof *a.ranks);
	snprintf(a.message, sizeof a.message, "rank 2: node 1 lost");
	snprintf(a.ranks[2].phase, sizeof a.ranks[2].phase, "trial 0: candidate");
	a.ranks[2].failed = 1;
	a.ranks[1].done = 1;
	a.ranks[1].exit_s = 0.125;
	a.ranks[2].kind_s[PH_TRIAL] = 0.25;
	snprintf(a.ranks[2].category, sizeof a.ranks[2].category, "timeout");
	json_t *j = rdv_report_pack(&a);
	struct launch_result b = { .world = 3 };
	b.ranks = xcalloc(3, sizeof *b.ranks);
	char err[300];
	CHECKF(rdv_report_unpack(j, &b, err, sizeof err) == 0, "%s", err);
	CHECK(b.outcome == OUT_TIMEOUT && b.culprit == 2 && b.wall_s == 1.5 &&
	      !strcmp(b.message, a.message) && b.ranks[2].failed && b.ranks[1].done &&
	      !strcmp(b.ranks[2].phase, "trial 0: candidate") && b.ranks[2].kind_s[PH_TRIAL] == 0.25 &&
	      b.ranks[1].exit_s == 0.125);
	/* another world's report, a culprit out of range, an unknown outcome */
	struct launch_result c = { .world = 4 };
	c.ranks = xcalloc(4, sizeof *c.ranks);
	CHECK(rdv_report_unpack(j, &c, err, sizeof err) < 0);
	json_object_set_new(j, "culprit", json_integer(3));
	CHECK(rdv_report_unpack(j, &b, err, sizeof err) < 0);
	json_object_set_new(j, "culprit", json_integer(-1));
	json_object_set_new(j, "outcome", json_string("bliss"));
	CHECK(rdv_report_unpack(j, &b, err, sizeof err) < 0);
	json_object_set_new(j, "outcome", json_string("pass"));
	json_array_set_new(json_object_get(json_array_get(json_object_get(j, "ranks"), 0), "kind_s"),
			   0, json_string("x"));
	json_object_set_new(json_array_get(json_object_get(j, "ranks"), 0), "kind_s", json_array());
	CHECK(rdv_report_unpack(j, &b, err, sizeof err) < 0 && strstr(err, "rank 0"));
	json_decref(j);
	free(a.ranks);
	free(b.ranks);
	free(c.ranks);
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof a;
	bind(fd, (struct sockaddr *)&a, sizeof a);
	getsockname(fd, (struct sockaddr *)&a, &l);
	close(fd);
	return ntohs(a.sin_port);
}

/* two agents on loopback: node 1 (a child) joins node 0 (here) */
static void test_meeting(void)
{
	struct rdv_env e = { .nodes = 2, .port = free_port() };
	snprintf(e.addr, sizeof e.addr, "127.0.0.1");
	json_t *job = a_job("/x/abc.so", 507, 5);
	pid_t pid = fork();
	if (pid == 0) {
		struct rdv_env e1 = e;
		e1.node = 1;
		json_t *j1 = a_job("/y/abc.so", 500, 5);
		struct rdv_link k;
		struct rdv_layout lay;
		char err[300];
		int rc = rdv_join(&e1, 4, j1, 10, &k, &lay, err, sizeof err);
		int wu = (int)json_integer_value(json_object_get(json_object_get(j1, "perf"), "warmup"));
		/* node 0's warmup; one host: ranks 0..3 */
		_exit(rc == 0 && wu == 507 && lay.host_first == 0 && lay.host_size == 4 ? 0 : 1);
	}
	struct rdv_link links[2];
	struct rdv_layout lay;
	char err[300];
	int rc = rdv_coordinate(&e, 4, job, 10, links, &lay, err, sizeof err);
	CHECKF(rc == 0, "%s", err);
	CHECK(lay.host_first == 0 && lay.host_size == 4 && links[1].first == 2 && links[1].count == 2);
	int st = -1;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (rc == 0) {
		close(links[1].fd);
		proto_reader_free(&links[1].rd);
	}
	/* nobody arrives: the deadline, and a message naming the missing node */
	uint64_t t0 = now_ns();
	e.port = free_port();
	CHECK(rdv_coordinate(&e, 4, job, 0.5, links, &lay, err, sizeof err) < 0 &&
	      strstr(err, "missing: node 1"));
	CHECK((double)(now_ns() - t0) / 1e9 < 3);
	/* and from the other side: nobody listens */
	struct rdv_env e1 = e;
	e1.node = 1;
	struct rdv_link k;
	t0 = now_ns();
	CHECK(rdv_join(&e1, 4, job, 0.5, &k, &lay, err, sizeof err) < 0 && strstr(err, "no node 0"));
	CHECK((double)(now_ns() - t0) / 1e9 < 3);
	json_decref(job);
}

/* the trial records (each solution process's "proc" record goes by too) */
static void count_record(void *arg, int rank, json_t *rec)
{
	(void)rank;
	const char *kind = json_string_value(json_object_get(rec, "kind"));
	*(int *)arg += kind && !strcmp(kind, "trial");
}

/* one launch as two agents (node 1 a child), fake ranks: node 0 sees
 * every rank, node 1 gets every record and node 0's outcome */
static struct launch_result two_agents(const char *mode, const char *only, int *recs, int *child)
{
	const char *fake = getenv("PKB_FAKE_RANK") ? getenv("PKB_FAKE_RANK") : "build/tests/fake_rank";
	setenv("PKB_FAKE_MODE", mode, 1);
	if (only)
		setenv("PKB_FAKE_RANK_ONLY", only, 1);
	else
		unsetenv("PKB_FAKE_RANK_ONLY");
	struct rdv_env e = { .nodes = 2, .port = free_port() };
	snprintf(e.addr, sizeof e.addr, "127.0.0.1");
	char dir[] = "/tmp/pkb-test-rdv.XXXXXX";
	mkdtemp(dir);
	json_t *job = json_pack("{s:s,s:s,s:I,s:I,s:s,s:I,s:i,s:i,s:i,s:[{s:s,s:s,s:b}]}", "mode",
				"eval", "problem", "1", "m", (json_int_t)64, "n", (json_int_t)64,
				"dtype", "bf16", "seed", (json_int_t)1, "trials", 2, "trial0", 0,
				"device_timeout_ms", 0, "solutions", "role", "candidate", "so",
				"/nonexistent/fake.so", "nccl", 0);
	struct launch_opts o;
	launch_opts_init(&o, 4);
	const char *argv[] = { fake, NULL };
	o.argv = argv;
	o.log_dir = dir;
	o.job = job;
	o.grace_s = 0.5;
	o.deadline_s[PH_TRIAL] = 1;
	o.rendezvous_s = 10;
	o.on_result = count_record;
	o.arg = recs;
	o.nodes = &e;
	struct launch_result r;
	pid_t pid = fork();
	if (pid == 0) {
		struct rdv_env e1 = e;
		e1.node = 1;
		o.nodes = &e1;
		int n = 0;
		o.arg = &n;
		launch_run(&o, &r);
		/* the child's view, as an exit code: outcome * 16 + records */
		_exit((int)r.outcome * 16 + (n < 15 ? n : 15));
	}
	CHECK(launch_run(&o, &r) == 0);
	int st = -1;
	waitpid(pid, &st, 0);
	*child = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	json_decref(job);
	rm_rf(dir);
	return r;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_env();
	test_frames();
	test_hello();
	test_report();
	test_meeting();

	int recs = 0, child = -1;
	struct launch_result r = two_agents("coll", NULL, &recs, &child);
	CHECKF(r.outcome == OUT_PASS && recs == 8, "two agents: %s, %d records", r.message, recs);
	CHECKF(child == OUT_PASS * 16 + 8, "node 1: %d", child);
	for (int k = 0; k < 4; k++)
		CHECK(r.ranks[k].done && r.ranks[k].exited && !r.ranks[k].failed);
	CHECK(r.ranks[0].pid > 0 && r.ranks[2].pid == 0);   /* node 1's ranks are its own */
	launch_result_free(&r);
	/* a hang on node 1: node 0's deadline, both with the timeout */
	recs = 0;
	r = two_agents("hang", "3", &recs, &child);
	CHECKF(r.outcome == OUT_TIMEOUT && r.culprit == 3 && strstr(r.message, "rank 2: 'tearing down'"),
	       "%s", r.message);
	CHECKF(child / 16 == OUT_TIMEOUT, "node 1: %d", child);
	launch_result_free(&r);
	return t_done("test_rendezvous");
}
