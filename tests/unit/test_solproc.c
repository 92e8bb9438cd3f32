/*
 * test_solproc.c -- the judge's side of the link to a solution process
 * (src/solproc.c), against fake solution processes that behave, lie, send
 * garbage, die or hang. The fake is this binary run again with
 * `--fake-sol MODE` (solproc_spawn puts the link on its fd 3).
 */
#define _GNU_SOURCE
#include "t.h"
#include "../../src/proto.h"
#include "../../src/sandbox.h"
#include "../../src/solproc.h"
#include "../../src/util.h"

#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the fake solution process ------------------------------------------- */

static void say(int type, const char *txt)
{
	proto_send(3, (enum msg_type)type, txt, strlen(txt));
}

static int fake_sol(const char *mode)
{
	enum msg_type t;
	char *buf;
	size_t len;
	if (proto_recv(3, &t, &buf, &len) < 0 || t != MSG_SOL_SETUP)
		return 9;
	free(buf);
	if (!strcmp(mode, "ok") || !strcmp(mode, "two")) {
		if (!strcmp(mode, "two")) {
			/* two replies in one write: the second must wait for the next wait */
			say(MSG_SOL_REPLY, "{\"op\":\"ready\"}");
			say(MSG_SOL_REPLY, "{\"op\":\"ok\"}");
			pause();
			return 0;
		}
		say(MSG_SOL_REPLY, "{\"op\":\"ready\"}");
		if (proto_recv(3, &t, &buf, &len) < 0)
			return 8;
		free(buf);
		say(MSG_SOL_REPLY, "{\"op\":\"ok\"}");
		return 0;
	}
	if (!strcmp(mode, "coll")) {
		uint64_t mine = 0x1122334455667788ull;
		proto_send(3, MSG_COLL, &mine, sizeof mine);
		if (proto_recv(3, &t, &buf, &len) < 0 || t != MSG_COLL || len != 2 * sizeof mine)
			return 7;
		uint64_t all[2];
		memcpy(all, buf, sizeof all);
		free(buf);
		say(MSG_SOL_REPLY, all[0] == mine && all[1] == ~mine ? "{\"op\":\"ready\"}"
		    : "{\"op\":\"wrong\"}");
		pause();
		return 0;
	}
	if (!strcmp(mode, "bigcoll")) {
		size_t n = SOLPROC_MAX_MSG + 1;
		char *big = calloc(1, n);
		proto_send(3, MSG_COLL, big, n);
		free(big);
		pause();
		return 0;
	}
	if (!strcmp(mode, "garbage")) {
		if (write(3, "GARBAGE!GARBAGE!GARBAGE!", 24) < 0)
			return 6;
		pause();
		return 0;
	}
	if (!strcmp(mode, "notjson"))
		say(MSG_SOL_REPLY, "ready, I promise");
	else if (!strcmp(mode, "noop"))
		say(MSG_SOL_REPLY, "{\"opp\":\"ready\"}");
	else if (!strcmp(mode, "outofturn"))
		say(MSG_SOL_REPLY, "{\"op\":\"synced\"}");
	else if (!strcmp(mode, "record"))
		say(MSG_RESULT, "{\"kind\":\"perf\",\"solution\":\"reference\"}");
	else if (!strcmp(mode, "phase"))
		say(MSG_PHASE, "timing|forever");
	else if (!strcmp(mode, "done"))
		say(MSG_DONE, "");
	else if (!strcmp(mode, "lie_env"))
		say(MSG_FAIL, "{\"category\":\"env_error\",\"message\":\"the GPU is broken, not me\"}");
	else if (!strcmp(mode, "lie_pass"))
		say(MSG_FAIL, "{\"category\":\"pass\",\"message\":\"all good\"}");
	else if (!strcmp(mode, "timeout"))
		say(MSG_FAIL, "{\"category\":\"timeout\",\"message\":\"a device wait gave up\"}");
	else if (!strcmp(mode, "failbad"))
		say(MSG_FAIL, "[1,2,3]");
	else if (!strcmp(mode, "die"))
		exit(3);
	else if (!strcmp(mode, "exit0"))
		_exit(0);
	else if (!strcmp(mode, "sandbox"))
		_exit(SANDBOX_EXIT);
	else if (!strcmp(mode, "sigsys") || !strcmp(mode, "segv") || !strcmp(mode, "xcpu")) {
		int sig = !strcmp(mode, "segv") ? SIGSEGV : !strcmp(mode, "xcpu") ? SIGXCPU : SIGSYS;
		signal(sig, SIG_DFL);
		raise(sig);
	} else if (!strcmp(mode, "partial")) {
		if (write(3, "PKB", 3) < 0)
			return 6;
	}
	/* hang, and whatever comes after a message: wait to be killed */
	for (;;)
		pause();
}

/* ---- the judge's side ----------------------------------------------------- */

static int relayed;

/* a world of 2: this rank's contribution, then its complement */
static int relay(void *ctx, const void *send, size_t len, void **out, size_t *out_len)
{
	int fail = ctx != NULL;
	relayed++;
	if (fail)
		return -1;
	*out_len = 2 * len;
	unsigned char *o = malloc(2 * len + 1);
	memcpy(o, send, len);
	for (size_t i = 0; i < len; i++)
		o[len + i] = (unsigned char)~((const unsigned char *)send)[i];
	*out = o;
	return 0;
}

struct outcome {
	int rc;
	enum pkb_outcome cat;
	char msg[600];
	int alive_after;   /* the process still ran when the wait returned */
};

static struct outcome run_mode(const char *mode, int is_ref, const char *op, int timeout_ms,
			       int relay_fails)
{
	struct outcome o;
	memset(&o, 0, sizeof o);
	struct solproc sp;
	char err[200];
	const char *argv[] = { "/proc/self/exe", "--fake-sol", mode, NULL };
	if (solproc_spawn(&sp, argv, is_ref ? "reference" : "candidate", is_ref, err,
			  sizeof err) < 0) {
		o.rc = -2;
		snprintf(o.msg, sizeof o.msg, "%s", err);
		return o;
	}
	solproc_send(&sp, MSG_SOL_SETUP, json_pack("{s:s}", "job", "x"));
	sp.trusted = 0;   /* as after its "setup" reply: the solution is loaded */
	json_t *reply = NULL;
	o.rc = solproc_wait(&sp, op, timeout_ms, &reply, relay,
			    relay_fails ? (void *)1 : NULL, &o.cat, o.msg, sizeof o.msg);
	json_decref(reply);
	o.alive_after = sp.pid > 0 && !sp.reaped && kill(sp.pid, 0) == 0;
	if (o.rc == 0 && !strcmp(mode, "ok")) {
		/* the whole round: a command, its reply, a clean exit */
		solproc_send(&sp, MSG_SOL_CMD, json_pack("{s:s}", "op", "fini"));
		json_t *r2 = NULL;
		enum pkb_outcome c2;
		char m2[200];
		CHECK(solproc_wait(&sp, "ok", 5000, &r2, relay, NULL, &c2, m2, sizeof m2) == 0);
		json_decref(r2);
		CHECK(solproc_reap(&sp, 5000) == 0);
	}
	solproc_kill(&sp);
	CHECK(sp.fd == -1 && (sp.pid <= 0 || sp.reaped));
	return o;
}

static void expect(const char *mode, int is_ref, enum pkb_outcome cat, const char *needle)
{
	struct outcome o = run_mode(mode, is_ref, "ready", 3000, 0);
	CHECKF(o.rc == -1, "%s: rc %d (%s)", mode, o.rc, o.msg);
	CHECKF(o.cat == cat, "%s: got %s, want %s (%s)", mode, outcome_name(o.cat),
	       outcome_name(cat), o.msg);
	CHECKF(strstr(o.msg, needle) != NULL, "%s: '%s' lacks '%s'", mode, o.msg, needle);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--fake-sol"))
		return fake_sol(argv[2]);
	signal(SIGPIPE, SIG_IGN);

	/* a process that behaves: ready, a command, ok, exit 0 */
	struct outcome o = run_mode("ok", 0, "ready", 3000, 0);
	CHECKF(o.rc == 0, "ok: %s", o.msg);

	/* an all-gather is relayed and answered, then the reply comes */
	relayed = 0;
	o = run_mode("coll", 0, "ready", 3000, 0);
	CHECKF(o.rc == 0 && relayed == 1, "coll: rc %d relayed %d (%s)", o.rc, relayed, o.msg);
	/* ... and one the judges cannot make fails the candidate, not the harness */
	o = run_mode("coll", 0, "ready", 3000, 1);
	CHECK(o.rc == -1 && o.cat == OUT_RUNTIME_ERROR && strstr(o.msg, "all-gather"));
	o = run_mode("coll", 1, "ready", 3000, 1);
	CHECK(o.rc == -1 && o.cat == OUT_INTERNAL);

	/* two replies in one read: the second is kept for the next wait */
	{
		struct solproc sp;
		char err[200], m[200];
		const char *av[] = { "/proc/self/exe", "--fake-sol", "two", NULL };
		CHECK(solproc_spawn(&sp, av, "candidate", 0, err, sizeof err) == 0);
		solproc_send(&sp, MSG_SOL_SETUP, json_object());
		json_t *r = NULL;
		enum pkb_outcome c;
		usleep(100000);   /* both frames are in the socket before the first read */
		CHECK(solproc_wait(&sp, "ready", 3000, &r, relay, NULL, &c, m, sizeof m) == 0);
		json_decref(r);
		r = NULL;
		CHECKF(solproc_wait(&sp, "ok", 1000, &r, relay, NULL, &c, m, sizeof m) == 0,
		       "two: %s", m);
		json_decref(r);
		solproc_kill(&sp);
	}

	/* lies about its own failure: a candidate may not blame the machine or the
	 * harness, nor excuse itself; the reference's word stands */
	expect("lie_env", 0, OUT_RUNTIME_ERROR, "not me");
	expect("lie_env", 1, OUT_ENV_ERROR, "not me");
	expect("lie_pass", 0, OUT_RUNTIME_ERROR, "all good");
	expect("lie_pass", 1, OUT_INTERNAL, "all good");
	expect("timeout", 0, OUT_TIMEOUT, "device wait");
	CHECK(solproc_map_fail(&(struct solproc){ .is_ref = 0 }, "flagged") == OUT_RUNTIME_ERROR);
	CHECK(solproc_map_fail(&(struct solproc){ .is_ref = 0 }, "internal_error") ==
	      OUT_RUNTIME_ERROR);
	CHECK(solproc_map_fail(&(struct solproc){ .is_ref = 0 }, "load_refused") ==
	      OUT_LOAD_REFUSED);
	CHECK(solproc_map_fail(&(struct solproc){ .is_ref = 0 }, "mismatch") == OUT_MISMATCH);
	CHECK(solproc_map_fail(&(struct solproc){ .is_ref = 0 }, NULL) == OUT_RUNTIME_ERROR);
	/* before its dlopen only pkb's code ran in it: its env_error stands */
	CHECK(solproc_map_fail(&(struct solproc){ .trusted = 1 }, "env_error") == OUT_ENV_ERROR);
	CHECK(solproc_map_fail(&(struct solproc){ .trusted = 1 }, "pass") == OUT_INTERNAL);

	/* garbage and protocol breaks: the candidate's runtime_error, the
	 * process killed, nothing passed on */
	expect("garbage", 0, OUT_RUNTIME_ERROR, "malformed frame");
	expect("notjson", 0, OUT_RUNTIME_ERROR, "not a JSON object");
	expect("noop", 0, OUT_RUNTIME_ERROR, "not a JSON object");
	expect("outofturn", 0, OUT_RUNTIME_ERROR, "out of turn");
	/* the judge's own messages, sent by a candidate: forgery */
	expect("record", 0, OUT_FLAGGED, "forged");
	expect("phase", 0, OUT_FLAGGED, "forged");
	expect("done", 0, OUT_FLAGGED, "forged");
	expect("failbad", 0, OUT_RUNTIME_ERROR, "not {category, message}");
	expect("bigcoll", 0, OUT_RUNTIME_ERROR, "broke the judge's protocol");   /* over the frame limit */
	expect("garbage", 1, OUT_INTERNAL, "malformed frame");
	o = run_mode("outofturn", 0, "ready", 3000, 0);
	CHECK(o.rc == -1 && !o.alive_after);

	/* deaths: the exit is the verdict */
	expect("die", 0, OUT_RUNTIME_ERROR, "exited with status 3");
	expect("exit0", 0, OUT_RUNTIME_ERROR, "_exit()");
	expect("sandbox", 0, OUT_LOAD_REFUSED, "sandbox");
	expect("sigsys", 0, OUT_LOAD_REFUSED, "SIGSYS");
	expect("segv", 0, OUT_RUNTIME_ERROR, "signal 11");
	expect("xcpu", 0, OUT_RUNTIME_ERROR, "limit on CPU time");

	/* hangs: silent, or mid-frame; the wait's own limit ends them */
	o = run_mode("hang", 0, "ready", 300, 0);
	CHECK(o.rc == -1 && o.cat == OUT_TIMEOUT && !o.alive_after);
	o = run_mode("partial", 0, "ready", 300, 0);
	CHECK(o.rc == -1 && o.cat == OUT_TIMEOUT && !o.alive_after);

	/* the link reaches the process on fd 3 and nothing else of the judge's */
	{
		int keep[2];
		CHECK(pipe(keep) == 0);   /* not CLOEXEC: a careless judge's fd */
		struct solproc sp;
		char err[200], m[200];
		const char *av[] = { "/bin/sh", "-c",
				     "test -e /proc/self/fd/3 && ! test -e /proc/self/fd/4", NULL };
		CHECK(solproc_spawn(&sp, av, "candidate", 0, err, sizeof err) == 0);
		CHECK(solproc_reap(&sp, 5000) == 0);
		close(keep[0]);
		close(keep[1]);
		(void)m;
	}
	return t_done("test_solproc");
}
