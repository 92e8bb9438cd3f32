/*
 * fake_rank.c -- a rank program with no GPU, for testing the parent on the
 * CPU: it speaks pkb's protocol and then behaves as $PKB_FAKE_MODE says.
 * $PKB_FAKE_RANK_ONLY=R limits the misbehaviour to rank R (others are good).
 *   ok        phases, a passing trial record per trial, done
 *   mismatch  a failing trial record (rank 0 only), done
 *   hang      enters phase "trial" and sleeps forever
 *   crash     enters phase "trial" and dies of SIGSEGV
 *   fail      reports a runtime_error and exits
 *   nogpu     reports an env_error (the machine's fault, as a missing GPU) and exits
 *   early     exits 0 without saying done
 *   coll      an allgather of the rank number; checks what comes back
 *   slow      as ok, after 0.5 s in the first trial
 *   env       as ok, after writing its whole environment and the job's
 *             seed to stderr (its log)
 *   rearm     as a candidate that stays alive past its deadline: in its
 *             trial, a phase frame "trial|..." every 0.3 s, 12 times
 *   forge     as ok, then a second timing record of the reference (the
 *             candidate writing one from pkb_fini, after the real ones)
 *   alias     a trial record in rank (rank + 1) % W's name
 *   procdup   as ok, with a second "proc" record of the first solution
 *   slowexit  as ok, then 0.4 s between its "done" and its exit
 *   litter    writes a file into its TMPDIR, names it in its log, then
 *             hangs as hang does
 *   load      as the real rank does (issue 30): the exit guard, the sandbox
 *             (unless the job says --no-sandbox), dlopen of every solution
 *             (constructors run), then the candidate's pkb_init, pkb_run per
 *             trial and pkb_fini on a context with no tensors (the
 *             reference's entry points need a GPU and are not called); a
 *             non-zero return is a runtime_error; then as ok
 * With a "perf" object in the job, every mode that gets through the trials
 * also sends a perf record per solution: the reference's calls take 10 us,
 * the candidate's 5 us (start 20 us apart). Perf-only misbehaviour:
 *   escape    the candidate's host clock is far above its events' span
 *   superbatch the candidate moves work between calls: every tenth call
 *             takes 55 us, the others 5 us (mean 10 us, the reference's)
 *   stale     the re-check of the candidate's timed outputs fails
 *   modify    a timed call modified its inputs
 * $PKB_FAKE_SAVE=DIR: a run with --save copies DIR/NNN/rank_R_inputs and
 * rank_R_outputs.safetensors (NNN the problem's id), files the test made,
 * into the save folder, as a real rank writes its own (tools/crosscheck's
 * tests).
 * A candidate can choose for itself (pkb agent's tests, where each step's
 * file must behave differently): a string "pkb-fake-mode:MODE" in its
 * shared object overrides $PKB_FAKE_MODE, "pkb-fake-us:T" sets its time
 * per call (default 5 us), "pkb-fake-look:LOOK" the look of a mismatch,
 * "pkb-fake-shape:MxN" the one base shape it passes at: at any other its
 * trials are a mismatch, as a kernel written for the announced shape alone
 * (pkb sweep's hidden shape, tests/cli/t0440).
 */
#define _GNU_SOURCE
#include "pkb.h"
#include "phases.h"
#include "proto.h"
#include "sandbox.h"
#include "util.h"
#include "wire.h"

#include <ctype.h>
#include <dlfcn.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fd;
static char phase_now[256];   /* for the exit guard, as the rank keeps it */
static int finishing;

/* the word after `key` in the candidate's shared object, or NULL */
static char *marker(const struct wire_job *job, const char *key)
{
	for (int i = 0; i < job->n_sol; i++) {
		if (strcmp(job->sol[i].role, "candidate"))
			continue;
		size_t len;
		char *so = read_file(job->sol[i].so, &len), *hit = NULL;
		for (size_t k = 0; so && k + strlen(key) < len; k++)
			if (!memcmp(so + k, key, strlen(key))) {
				const char *v = so + k + strlen(key);
				size_t n = 0;
				while (v + n < so + len && (isalnum((unsigned char)v[n]) ||
							    v[n] == '_' || v[n] == '.'))
					n++;
				hit = strndup(v, n);
				break;
			}
		free(so);
		return hit;
	}
	return NULL;
}

static void say(enum msg_type t, const char *s)
{
	proto_send(fd, t, s, s ? strlen(s) : 0);
}

/* a record packed by wire.h, as the rank sends it */
static void send_record(json_t *rec)
{
	char *txt = json_dumps(rec, JSON_COMPACT);
	say(MSG_RESULT, txt);
	free(txt);
	json_decref(rec);
}

/* "kind|detail" as the rank sends it, the kind from phases.h's table */
static void phase(enum phase_kind k, const char *detail)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s|%s", phase_kind_name(k), detail);
	say(MSG_PHASE, buf);
	snprintf(phase_now, sizeof phase_now, "%s", detail);
}

static int fail(const char *category, const char *msg)
{
	json_t *j = json_pack("{s:s,s:s}", "category", category, "message", msg);
	char *txt = json_dumps(j, JSON_COMPACT);
	say(MSG_FAIL, txt);
	free(txt);
	json_decref(j);
	return 1;
}

/* mode "load": what rank.c does from the sandbox to the last pkb_fini */
static int load_and_call(const struct wire_job *job)
{
	char err[300], msg[600];
	sandbox_exit_guard(fd, phase_now, &finishing);
	int r = job->sandbox ? sandbox_rank_enter(job, fd, err, sizeof err) : 0;
	if (r < 0) {
		snprintf(msg, sizeof msg, "cannot enter the sandbox: %s", err);
		return fail("env_error", msg);
	}
	int (*init)(pkb_ctx *) = NULL, (*run)(pkb_ctx *) = NULL, (*fini)(pkb_ctx *) = NULL;
	for (int i = 0; i < job->n_sol; i++) {
		snprintf(msg, sizeof msg, "loading the %s", job->sol[i].role);
		phase(PH_LOAD, msg);
		void *dl = dlopen(job->sol[i].so, RTLD_NOW | RTLD_LOCAL);
		if (!dl) {
			snprintf(msg, sizeof msg, "cannot load the %s: %s", job->sol[i].role, dlerror());
			return fail("load_refused", msg);
		}
		if (strcmp(job->sol[i].role, "reference")) {
			*(void **)&init = dlsym(dl, "pkb_init");
			*(void **)&run = dlsym(dl, "pkb_run");
			*(void **)&fini = dlsym(dl, "pkb_fini");
		}
	}
	if (!init || !run || !fini)
		return 0;   /* the reference alone: nothing to call */
	pkb_ctx ctx = { .abi_version = PKB_ABI_VERSION, .rank = job->rank, .world = job->world,
			.local_rank = job->local_rank };
	phase(PH_INIT, "pkb_init of the candidate");
	if ((r = init(&ctx)))
		goto bad;
	for (int k = 0; k < (job->trials > 0 ? job->trials : 1); k++) {
		snprintf(msg, sizeof msg, "trial %d: candidate", k);
		phase(PH_TRIAL, msg);
		if ((r = run(&ctx)))
			goto bad;
	}
	phase(PH_FINI, "pkb_fini of the candidate");
	if ((r = fini(&ctx)))
		goto bad;
	return 0;
bad:
	snprintf(msg, sizeof msg, "%s of the candidate returned %d", phase_now, r);
	return fail("runtime_error", msg);
}

/* $PKB_FAKE_SAVE: the test's files for this problem and rank, copied */
static void fake_save(const struct wire_job *job)
{
	phase(PH_SAVE, "saving inputs and outputs");
	const char *what[] = { "inputs", "outputs" };
	for (int i = 0; i < 2; i++) {
		char *src = xstrfmt("%s/%03d/rank_%d_%s.safetensors", getenv("PKB_FAKE_SAVE"),
				    atoi(job->problem), job->rank, what[i]);
		char *dst = xstrfmt("%s/rank_%d_%s.safetensors", job->save_dir, job->rank, what[i]);
		size_t len;
		char *buf = read_file(src, &len);
		if (buf)
			write_file_atomic(dst, buf, len);
		free(buf);
		free(src);
		free(dst);
	}
}

/* the GPU a rank names in its records: one model, or with PKB_FAKE_MODE=
 * mixedgpu a second on the odd ranks (the parent lists each once) */
static void fake_gpu(char *dst, size_t n, const char *mode, int rank)
{
	snprintf(dst, n, "%s", !strcmp(mode, "mixedgpu") && rank % 2 ? "Fake GPU B" : "Fake GPU A");
}

int main(void)
{
	fd = atoi(getenv("PKB_FD") ? getenv("PKB_FD") : "3");
	enum msg_type t;
	char *buf;
	size_t len;
	if (proto_recv(fd, &t, &buf, &len) < 0 || t != MSG_JOB)
		return 2;
	/* the job as the real rank reads it (wire.h): a malformed one fails */
	json_t *jj = json_loadb(buf, len, 0, NULL);
	free(buf);
	struct wire_job job;
	char err[300] = "not JSON";
	if (!jj || wire_job_unpack(jj, &job, 1, err, sizeof err) < 0) {
		fprintf(stderr, "fake rank: bad job: %s\n", err);
		return 2;
	}
	json_decref(jj);
	int rank = job.rank;
	int world = job.world;
	int trials = job.trials > 0 ? job.trials : 1;
	const char *mode = getenv("PKB_FAKE_MODE") ? getenv("PKB_FAKE_MODE") : "ok";
	const char *only = getenv("PKB_FAKE_RANK_ONLY");
	char *own_mode = marker(&job, "pkb-fake-mode:");
	char *own_us = marker(&job, "pkb-fake-us:");
	char *own_look = marker(&job, "pkb-fake-look:");
	char *own_shape = marker(&job, "pkb-fake-shape:"), here[64];
	snprintf(here, sizeof here, "%lldx%lld", job.m, job.n);
	if (own_mode)
		mode = own_mode;
	if (own_shape && strcmp(own_shape, here))
		mode = "mismatch";
	if (only && atoi(only) != rank)
		mode = "ok";
	phase(PH_CUDA_INIT, "pretending");
	if (!strcmp(mode, "load") && load_and_call(&job)) {
		finishing = 1;   /* its FAIL is sent: the guard has nothing to add */
		return 1;
	}
	if (strcmp(mode, "load")) {   /* load_and_call announced them */
		phase(PH_INIT, "pkb_init of the candidate");
		phase(PH_TRIAL, "trial 0: candidate");
	}
	/* rank.c's phases when the reference's outputs come from --ref-cache:
	 * after the candidate's fini, a load (no process) and its trials;
	 * "refkept_noload" leaves the load out, as rank.c first did */
	if (!strncmp(mode, "refkept", 7)) {
		phase(PH_FINI, "pkb_fini of the candidate");
		if (strcmp(mode, "refkept_noload"))
			phase(PH_LOAD, "the reference's outputs, kept from --ref-cache");
		phase(PH_TRIAL, "trial 0: reference (kept from --ref-cache)");
	}
	if (!strcmp(mode, "rearm"))
		for (int k = 0; k < 12; k++) {
			usleep(300000);
			phase(PH_TRIAL, "trial 0: candidate (again)");
		}
	if (!strcmp(mode, "litter")) {   /* a file in its TMPDIR, named in its log */
		const char *tmp = getenv("TMPDIR");
		char *path = xstrfmt("%s/litter.%d", tmp ? tmp : "/tmp", rank);
		FILE *f = fopen(path, "w");
		if (f)
			fclose(f);
		fprintf(stderr, "litter: %s\n", path);
		free(path);
	}
	if (!strcmp(mode, "hang") || !strcmp(mode, "litter"))
		for (;;)
			pause();
	if (!strcmp(mode, "crash"))
		raise(SIGSEGV);
	if (!strcmp(mode, "slow"))
		usleep(500000);
	if (!strcmp(mode, "env")) {
		for (char **e = environ; *e; e++)
			fprintf(stderr, "env %s\n", *e);
		fprintf(stderr, "job seed %lld\n", job.seed);
		fprintf(stderr, "job ref_cache %s\n", job.ref_cache[0] ? job.ref_cache : "-");
		fprintf(stderr, "job rank %d of %d, local %d, host ranks %d + %d\n", job.rank,
			job.world, job.local_rank, job.host_first, job.host_size);
	}
	if (!strcmp(mode, "nogpu")) {   /* the machine, not the candidate: env_error */
		say(MSG_FAIL, "{\"category\":\"env_error\",\"message\":\"fake: no CUDA device\"}");
		return 1;
	}
	if (!strcmp(mode, "fail")) {
		say(MSG_FAIL, "{\"category\":\"runtime_error\",\"message\":\"fake: an illegal memory access\"}");
		return 1;
	}
	if (!strcmp(mode, "early"))
		return 0;
	if (!strcmp(mode, "coll")) {
		int mine = rank * 7, *all = xcalloc((size_t)world, sizeof(int));
		proto_send(fd, MSG_COLL, &mine, sizeof mine);
		if (proto_recv(fd, &t, &buf, &len) < 0 || t != MSG_COLL || len != sizeof(int) * (size_t)world)
			return 3;
		memcpy(all, buf, len);
		for (int r = 0; r < world; r++)
			if (all[r] != r * 7) {
				say(MSG_FAIL, "{\"category\":\"internal_error\",\"message\":\"bad allgather\"}");
				return 1;
			}
	}
	if (job.mode == WIRE_RUN) {   /* pkb run: one record of output statistics */
		struct wire_run wr = { .rank = rank, .outputs = json_pack(
			"[{s:s,s:f,s:f,s:i}]", "name", "out", "mean_abs", 0.8, "amax", 3.5,
			"nonfinite", 0) };
		fake_gpu(wr.gpu, sizeof wr.gpu, mode, rank);
		send_record(wire_run_pack(&wr));
		json_decref(wr.outputs);
		trials = 0;
	}
	for (int k = 0; k < trials; k++) {
		int ok = !(!strcmp(mode, "mismatch") && rank == 0);
		json_t *out = json_pack("{s:s,s:b,s:i,s:i,s:f,s:f,s:b}", "name", "out", "ok", ok, "n",
					100, "n_bad", ok ? 0 : 7, "l2_rel", 0.5, "l2_limit", 0.01,
					"l2_failed", !ok);
		if (!ok) {
			json_object_set_new(out, "n_bad_poison", json_integer(0));
			json_object_set_new(out, "n_bad_zero", json_integer(7));
			json_object_set_new(out, "look", own_look ? json_string(own_look) : json_null());
		}
		if (!ok)
			json_object_set_new(out, "worst", json_pack("{s:i,s:[i,i],s:f,s:f,s:f}", "index",
								    3, "coords", 0, 3, "ref", 1.5,
								    "cand", 0.0, "bound", 0.01));
		struct wire_trial wt = { .trial = job.trial0 + k, .ok = ok,
					 .rank = !strcmp(mode, "alias") ? (rank + 1) % world : rank,
					 .outputs = json_pack("[o]", out) };
		fake_gpu(wt.gpu, sizeof wt.gpu, mode, rank);
		send_record(wire_trial_pack(&wt));
		json_decref(wt.outputs);
	}
	if (job.save_dir[0] && getenv("PKB_FAKE_SAVE"))   /* as rank.c: do_run saves, then do_perf */
		fake_save(&job);
	if (job.has_perf) {
		phase(PH_TIMING, "timed calls");
		int iters = job.perf.iters;
		for (int i = 0; i < job.n_sol; i++) {
			const char *role = job.sol[i].role;
			int cand = !strcmp(role, "candidate");
			double *times = xcalloc((size_t)iters + 1, sizeof *times);
			double *starts = xcalloc((size_t)iters + 1, sizeof *starts);
			for (int k = 0; k < iters; k++) {
				times[k] = cand ? (own_us ? atof(own_us) / 1000 : 0.005) : 0.010;
				if (cand && !strcmp(mode, "superbatch"))
					times[k] = k % 10 == 9 ? 0.055 : 0.005;
				starts[k] = 0.020 * k + 0.001 * rank;
			}
			int stale = cand && !strcmp(mode, "stale");
			struct wire_perf wp = {
				.rank = rank, .n = iters, .times_ms = times, .start_ms = starts,
				.host_ms = cand && !strcmp(mode, "escape") ? 50.0 : 0.02 * iters,
				.span_ms = 0.02 * iters, .groups = 64, .block = 10,
				.inputs_modified = !strcmp(mode, "modify"), .recheck_ok = !stale,
				.recheck = json_array(),
			};
			snprintf(wp.solution, sizeof wp.solution, "%s", role);
			snprintf(wp.mode, sizeof wp.mode, "%s", perf_mode_name(job.perf.mode));
			const char *dev = getenv("PKB_FAKE_DEVICE");
			snprintf(wp.device, sizeof wp.device, "%s", dev ? dev : "NVIDIA H200");
			/* the GPU's heat as the judge reads it (therm.h); with mode
			 * hot, rank 1's GPU is still 6 C above the candidate's start
			 * when the reference's warmup begins, after the 20 s wait */
			wp.heat.read = strcmp(mode, "nothermal") != 0;
			wp.heat.temp_c[0] = 40 + rank, wp.heat.temp_c[1] = 42 + rank;
			wp.heat.sm_mhz[0] = 1980 - rank, wp.heat.sm_mhz[1] = 1970 - rank;
			if (!cand && !strcmp(mode, "hot") && rank == 1)
				wp.heat.temp_c[0] = 47, wp.heat.cool_s = 20.0, wp.heat.hot_c = 6;
			/* with heatfini, the candidate's pkb_fini raised rank 0's GPU
			 * by 9 C; every other fini by 5 C (the most allowed) or less */
			wp.heat.fini_rise_c = cand && !strcmp(mode, "heatfini") && rank == 0 ? 9
					 : cand ? 5 : -1;
			if (stale)
				json_array_append_new(wp.recheck, json_pack(
					"{s:s,s:b,s:i,s:i,s:f,s:f,s:b,s:{s:i,s:[i,i],s:f,s:f,s:f}}",
					"name", "out", "ok", 0, "n", 100, "n_bad", 100, "l2_rel", 1.0,
					"l2_limit", 0.01, "l2_failed", 1, "worst", "index", 5, "coords",
					0, 5, "ref", 2.5, "cand", -1.0, "bound", 0.01));
			send_record(wire_perf_pack(&wp));
			json_decref(wp.recheck);
			free(times);
			free(starts);
		}
	}
	if (job.has_perf && !strcmp(mode, "forge")) {   /* from the candidate's pkb_fini */
		double tm[1] = { 1000.0 }, s0[1] = { 0 };
		struct wire_perf wp = { .rank = rank, .n = 1, .times_ms = tm, .start_ms = s0,
					.host_ms = 1000.0, .span_ms = 1000.0, .groups = 64, .block = 10,
					.recheck_ok = 1, .recheck = json_array() };
		snprintf(wp.solution, sizeof wp.solution, "reference");
		snprintf(wp.mode, sizeof wp.mode, "%s", perf_mode_name(job.perf.mode));
		snprintf(wp.device, sizeof wp.device, "NVIDIA H200");
		send_record(wire_perf_pack(&wp));
		json_decref(wp.recheck);
	}
	/* each solution process's steps, as rank.c:send_steps sends them at
	 * its end; procdup sends the candidate's twice */
	for (int i = 0; i < job.n_sol; i++)
		for (int k = 0; k < 1 + (!strcmp(mode, "procdup") && i == 0); k++)
			send_record(json_pack("{s:s,s:i,s:s,s:{s:f,s:f,s:f,s:f,s:f,s:f},s:{s:f}}",
					      "kind", "proc", "rank", rank, "solution",
					      job.sol[i].role, "seconds", "before_setup", 0.5,
					      "setup", 0.1, "dlopen", 0.02, "init", 0.001, "fini",
					      0.01, "exit", 0.3, "own", "context", 0.4));
	phase(PH_FINI, "tearing down");
	say(MSG_DONE, NULL);
	finishing = 1;
	if (!strcmp(mode, "slowexit"))
		usleep(400000);
	return 0;
}
