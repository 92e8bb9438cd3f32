/*
 * rank.c -- one rank process (`pkb __rank`, started by launch.c): the judge
 * of one GPU (issue 36).
 *
 * It reads the job from fd 3, creates its CUDA context and stream, draws
 * every input, and keeps the reference's outputs, the comparison and the
 * clock. It never loads a solution: each solution of the job runs in a
 * solution process of its own (`pkb __sol`, solhost.c; the link is
 * solproc.c's), started fresh, one at a time: the candidate, then the
 * reference. The judge shares its input and output buffers with the
 * process over CUDA IPC, commands each call, and checks the outputs
 * itself once the process says the call is done.
 *
 * Every phase is announced to the parent first (MSG_PHASE), so that when a
 * deadline passes the parent can say where each rank was. Any failure is
 * sent as MSG_FAIL with its category and the process exits: the parent
 * decides the outcome and tears the other ranks down.
 *
 * An eval runs the candidate on every trial's inputs first, on poisoned
 * outputs, its input checksums checked around each call and its outputs
 * kept on the host; then the reference on the same inputs, drawn again;
 * then each output is compared (judgecmp.c, compare.c). The timing engine
 * is timing.c's and the state they share rank_env.h's; the parts call one
 * way, from here down (rank_env.h has the order): nothing calls back into
 * this file.
 */
#define _GNU_SOURCE
#include "dtype.h"     /* defines: dtype_name, dtype_is_float, dtype_stats */
#include "exitcode.h"  /* defines: enum pkb_outcome */
#include "inputs.h"    /* defines: describe_job, gen_inputs */
#include "judgecmp.h"  /* defines: copy_outputs, compare_outputs */
#include "kernels.h"   /* defines: kern_checksum */
#include "ncclso.h"    /* defines: nccl_version */
#include "phases.h"    /* defines: enum phase_kind */
#include "problem.h"   /* defines: tensor_desc_bytes, problem_params_json */
#include "proto.h"     /* defines: proto_send, proto_recv */
#include "rank_env.h"  /* defines: struct rank_env */
#include "rank_link.h" /* defines: phase, rank_fail, sol_command, sol_wait, CUDA_OR */
#include "refcache.h"  /* defines: refcache_load, refcache_store */
#include "safetensors.h"
#include "sandbox.h"   /* defines: sandbox_exit_guard */
#include "solproc.h"   /* defines: solproc_spawn, solproc_reap */
#include "timing.h"    /* defines: perf_begin, perf_solution, perf_end */
#include "util.h"

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the solution process -------------------------------------------------- */

/* The GPU as solution s's process has it, against the judge's own view
 * taken before any solution ran: the same SMs, and MPS where the job is
 * timed. The reference runs after the candidate, so a change there is the
 * candidate's doing (the MPS control socket is a pathname it can reach). */
static void check_gpu_view(struct rank_env *E, int s, json_t *ready)
{
	int sms = (int)json_integer_value(json_object_get(ready, "sms"));
	int mps = json_is_true(json_object_get(ready, "mps"));
	int after_candidate = s == 0 && E->n_sol > 1;
	if (sms != E->sms)
		rank_fail(E, after_candidate ? OUT_FLAGGED : OUT_ENV_ERROR,
			  "the %s's process may use %d SMs where the judge's has %d%s",
			  E->job.sol[s].role, sms, E->sms, after_candidate ? ": the MPS daemon's "
			  "settings changed while the candidate ran" : "");
	if (E->job.has_perf && !mps)
		rank_fail(E, after_candidate ? OUT_FLAGGED : OUT_ENV_ERROR,
			  "the %s's process is not an MPS client where the judge's is%s",
			  E->job.sol[s].role, after_candidate ? ": the MPS daemon went away while "
			  "the candidate ran" : " (docs/MPS.md)");
}

/* What a solution process says of its own set-up (its "setup" reply, sent
 * before any solution code ran), kept to SOL_STEPS' names: each a number
 * of seconds, 0 to 3600. */
static json_t *own_steps(json_t *said)
{
	static const char *const keys[SOL_STEP_COUNT] = { SOL_STEPS(SOL_STEP_NAME_) };
	json_t *o = json_object();
	for (int i = 0; i < SOL_STEP_COUNT; i++) {
		double v = json_number_value(json_object_get(said, keys[i]));
		json_object_set_new(o, keys[i], json_real(v >= 0 && v <= 3600 ? v : 0));
	}
	return o;
}

/* Fork and exec solution s's process, which makes its CUDA context on this
 * rank's GPU at once and then waits for sol_start's set-up: its start-up
 * runs while the judge makes its own context (the first solution) or while
 * the candidate's trials run (the reference of an untimed eval), not after
 * (issue 40). Nothing of the judge's is shared until sol_start. */
static void sol_spawn(struct rank_env *E, struct solproc *sp, int s)
{
	const struct wire_solution *w = &E->job.sol[s];
	char dev[16], err[300];
	snprintf(dev, sizeof dev, "%d", E->job.local_rank);
	const char *argv[] = { pkb_self_exe(), "__sol", dev, NULL };
	E->steps[s].mark = now_ns();   /* its spawn */
	if (solproc_spawn(sp, argv, w->role, s == 0 && !strcmp(w->role, "reference"), err,
			  sizeof err) < 0)
		rank_fail(E, OUT_ENV_ERROR, "cannot start the %s's process: %s", w->role, err);
}

/* Set solution s's process up (spawned by sol_spawn): the job as it may
 * know it (its own solution, no seed, no save folder), the trial buffers and
 * the go/done words. */
static void sol_start(struct rank_env *E, struct solproc *sp, int s)
{
	const struct wire_solution *w = &E->job.sol[s];
	phase(E, PH_LOAD, "starting the %s's process (CUDA, NCCL, load)", w->role);
	struct wire_job j = E->job;
	j.n_sol = 1;
	j.sol[0] = *w;
	j.seed = 0;
	j.seed_drawn = 0;
	j.save_dir[0] = 0;
	j.ref_cache[0] = 0;   /* the judge's store: not even its name */
	j.has_perf = 0;
	json_t *setup = json_pack("{s:o,s:o,s:o,s:o}", "job", wire_job_pack(&j),
				  "in", ipc_handles(E, E->in_dev, E->io.n_in),
				  "out", ipc_handles(E, E->out_dev, E->io.n_out),
				  "flags", ipc_handles(E, (void *const *)&E->flags, 1));
	E->proc = sp;
	struct proc_steps *st = &E->steps[s];
	st->before_setup = lap_s(&st->mark);
	if (solproc_send(sp, MSG_SOL_SETUP, setup) < 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "the %s's process is gone", w->role);
	json_t *said = sol_wait(E, NULL, "setup");
	st->setup = lap_s(&st->mark);
	st->own = own_steps(json_object_get(said, "steps"));
	json_decref(said);
	sp->trusted = 0;   /* it loads the solution next */
	json_t *ready = sol_wait(E, NULL, "ready");
	st->dlopen = lap_s(&st->mark);
	check_gpu_view(E, s, ready);
	json_decref(ready);
	phase(E, PH_INIT, "pkb_init of the %s", w->role);
	sol_command(E, json_pack("{s:s}", "op", "init"), "ok");
	st->init = lap_s(&st->mark);
}

/* The steps of solution s's process, to the parent (a "proc" record, which
 * takes its own split) */
static void send_steps(struct rank_env *E, int s)
{
	struct proc_steps *st = &E->steps[s];
	json_t *own = st->own ? st->own : json_object();
	st->own = NULL;
	send_result(E, json_pack("{s:s,s:i,s:s,s:{s:f,s:f,s:f,s:f,s:f,s:f},s:o}", "kind", "proc",
				 "rank", E->rank, "solution", E->job.sol[s].role, "seconds",
				 "before_setup", st->before_setup, "setup", st->setup, "dlopen",
				 st->dlopen, "init", st->init, "fini", st->fini, "exit", st->exit,
				 "own", own));
}

static void sol_stop(struct rank_env *E, int s)
{
	phase(E, PH_FINI, "pkb_fini of the %s", E->job.sol[s].role);
	int before = perf_heat_mark(E);
	struct proc_steps *st = &E->steps[s];
	st->mark = now_ns();
	/* In eval the reference's process ends without its pkb_fini and the
	 * communicator's destroy: every output of it has been read, and what
	 * they free, the exit frees (they took 0.75 s median a launch at
	 * W = 2, 0.99 s at W = 4, on 4x H200, 2026-11-28). `pkb run` of the
	 * reference still calls its pkb_fini, so the suite checks it. */
	int quick = E->job.mode == WIRE_EVAL && !strcmp(E->job.sol[s].role, "reference");
	/* and not before every rank's reference has finished its last call:
	 * NCCL's kernels read peers' buffers (P2P read over NVLink), which
	 * an exit frees. Untimed, ref_trials' allgather after each trial is
	 * that point; timed, the last timed call ends on each rank alone. */
	if (quick && E->job.has_perf)
		host_barrier(E);
	sol_command(E, json_pack("{s:s}", "op", quick ? "exit" : "fini"), "ok");
	st->fini = lap_s(&st->mark);
	solproc_reap(E->proc, 5000);
	st->exit = lap_s(&st->mark);
	E->proc = NULL;
	send_steps(E, s);
	perf_heat_fini(E, s, before);
	if (strcmp(E->job.sol[s].role, "candidate"))
		return;
	/* Under MPS a fatal fault reaches every client of the GPU: work the
	 * candidate's process left running as it ended (a thread's queued
	 * calls reading a peer's mapping that is gone) kills this judge's
	 * context too. Look now, so that the verdict names the candidate, not
	 * whatever CUDA call of the judge's came next (2026-11-28, 4x H100:
	 * 001 bad_late_host_thread read "cudaIpcGetMemHandle: an illegal memory
	 * access" at the reference's start). */
	cudaError_t e = cudaDeviceSynchronize();
	if (e == cudaSuccess)
		e = cudaGetLastError();
	if (e != cudaSuccess)
		rank_fail(E, OUT_RUNTIME_ERROR,
			  "the GPU faulted as the candidate's process ended (%s): work it left "
			  "running outlived it (under MPS a fault reaches every process on the "
			  "GPU, the judge's too)", cudaGetErrorString(e));
}

/* ---- inputs and outputs --------------------------------------------------- */

static void checksum_inputs(struct rank_env *E, void *const *bufs, uint64_t *sums)
{
	for (int i = 0; i < E->io.n_in; i++) {
		if (kern_checksum(bufs[i], tensor_desc_bytes(&E->io.in[i]), E->dev_sum,
				  (struct CUstream_st *)E->stream))
			rank_fail(E, OUT_RUNTIME_ERROR, "input checksum failed");
		CUDA_OR(E, OUT_RUNTIME_ERROR,
			cudaMemcpyAsync(&sums[i], E->dev_sum, 8, cudaMemcpyDeviceToHost, E->stream));
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
	}
}

/* 0xFF bytes: NaN in every float format, -1 in integers */
static void poison_outputs(struct rank_env *E, void *const *bufs)
{
	for (int i = 0; i < E->io.n_out; i++)
		CUDA_OR(E, OUT_RUNTIME_ERROR,
			cudaMemsetAsync(bufs[i], 0xff, tensor_desc_bytes(&E->io.out[i]), E->stream));
}

/* ---- eval and run ---------------------------------------------------------- */

static void alloc_io(struct rank_env *E)
{
	for (int i = 0; i < E->io.n_in; i++)
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMalloc(&E->in_dev[i], tensor_desc_bytes(&E->io.in[i]) + 16));
	for (int i = 0; i < E->io.n_out; i++) {
		size_t b = tensor_desc_bytes(&E->io.out[i]);
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMalloc(&E->out_dev[i], b + 16));
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMallocHost(&E->host_ref[i], b + 16));
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMallocHost(&E->host_out[i], b + 16));
	}
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMalloc((void **)&E->dev_sum, 8));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMalloc((void **)&E->flags, 256));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemset(E->flags, 0, 256));
}

/* Solution s (in its process) on trial `trial`'s inputs into E->out_dev,
 * outputs copied to `host`. Fails the rank if the solution changed an input. */
static void checked_call(struct rank_env *E, int s, int trial, void **host)
{
	const char *role = E->job.sol[s].role;
	uint64_t before[PKB_MAX_TENSORS], after[PKB_MAX_TENSORS];
	phase(E, PH_TRIAL, "trial %d: %s", trial, role);
	gen_inputs(E, trial, E->in_dev);
	checksum_inputs(E, E->in_dev, before);
	poison_outputs(E, E->out_dev);
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
	host_barrier(E);
	sol_command(E, json_pack("{s:s,s:i,s:i}", "op", "call", "group", -1, "set", -1), "ok");
	checksum_inputs(E, E->in_dev, after);
	for (int i = 0; i < E->io.n_in; i++)
		if (before[i] != after[i])
			rank_fail(E, !strcmp(role, "reference") ? OUT_INTERNAL : OUT_MISMATCH,
				  "the %s modified its input '%s' (inputs are read-only)", role,
				  E->io.in[i].name);
	copy_outputs(E, E->out_dev, host);
}

/* the candidate's outputs of every trial, kept on the host */
static void **run_trials(struct rank_env *E, int s)
{
	int n = E->job.trials, no = E->io.n_out;
	void **keep = xcalloc((size_t)n * (size_t)no, sizeof *keep);
	for (int t = 0; t < n; t++) {
		checked_call(E, s, E->job.trial0 + t, E->host_out);
		for (int i = 0; i < no; i++) {
			size_t b = tensor_desc_bytes(&E->io.out[i]);
			keep[t * no + i] = xmalloc(b + 1);
			memcpy(keep[t * no + i], E->host_out[i], b);
		}
	}
	return keep;
}

static void free_trials(struct rank_env *E, void **keep)
{
	for (int i = 0; keep && i < E->job.trials * E->io.n_out; i++)
		free(keep[i]);
	free(keep);
}

/* ---- the reference's outputs kept across evaluations (refcache.h) --------- */

/* what this rank's reference outputs of `trial` depend on; 0, or -1 when
 * the reference's object cannot be read (then nothing is kept) */
static int ref_id(struct rank_env *E, int trial, struct refcache_id *id)
{
	/* all but the trial, once a process: the digests read whole files */
	static struct refcache_id base;
	static int have;
	if (!have) {
		/* pkb itself draws the inputs (problem.c) and sizes the outputs:
		 * its own bytes, not its version string, name them */
		int rt = 0, drv = 0;
		if (sha256_file_hex(E->job.sol[0].so, base.object_sha) < 0 ||
		    sha256_file_hex(pkb_self_exe(), base.pkb_sha) < 0 ||
		    cudaRuntimeGetVersion(&rt) != cudaSuccess ||
		    cudaDriverGetVersion(&drv) != cudaSuccess)
			return -1;
		snprintf(base.gpu, sizeof base.gpu, "%s", E->gpu);   /* setup's */
		snprintf(base.versions, sizeof base.versions, "pkb %s, CUDA %d/%d, NCCL %d",
			 PKB_VERSION, rt, drv, nccl_version());
		snprintf(base.dtype, sizeof base.dtype, "%s", dtype_name(E->job.dtype));
		base.problem = E->p->id;
		base.world = E->world;
		base.rank = E->rank;
		base.m = E->job.m;
		base.n = E->job.n;
		base.seed = (uint64_t)E->seed;
		have = 1;
	}
	*id = base;
	id->trial = trial;
	return 0;
}

/* This rank's reference outputs of every trial, from --ref-cache, or NULL.
 * Only where every rank has all of its own: a rank that starts the
 * reference's process needs its peers' for the reference's NCCL, so the
 * ranks agree first. Not for a timed job, whose reference must run. */
static void **ref_cached(struct rank_env *E)
{
	if (!E->job.ref_cache[0] || E->job.has_perf)
		return NULL;
	int n = E->job.trials, no = E->io.n_out, hit = 1;
	size_t bytes[PKB_MAX_TENSORS];
	for (int i = 0; i < no; i++)
		bytes[i] = tensor_desc_bytes(&E->io.out[i]);
	void **keep = xcalloc((size_t)n * (size_t)no, sizeof *keep);
	for (int t = 0; t < n && hit; t++) {
		struct refcache_id id;
		for (int i = 0; i < no; i++)
			keep[t * no + i] = xmalloc(bytes[i] + 1);
		hit = ref_id(E, E->job.trial0 + t, &id) == 0 &&
		      refcache_load(E->job.ref_cache, &id, no, bytes, &keep[t * no]);
	}
	int *hits = xcalloc((size_t)E->world, sizeof(int));
	if (coll_allgather(E, &hit, hits, sizeof hit) < 0)
		rank_fail(E, OUT_INTERNAL, "lost the parent");
	for (int r = 0; r < E->world; r++)
		hit &= hits[r];
	free(hits);
	if (hit)
		return keep;
	free_trials(E, keep);
	return NULL;
}

/* the reference's outputs of `trial`, in E->host_ref, into --ref-cache (a
 * failure to write costs only the next evaluation's time) */
static void ref_keep(struct rank_env *E, int trial)
{
	struct refcache_id id;
	size_t bytes[PKB_MAX_TENSORS];
	char err[300];
	if (!E->job.ref_cache[0] || ref_id(E, trial, &id) < 0)
		return;
	for (int i = 0; i < E->io.n_out; i++)
		bytes[i] = tensor_desc_bytes(&E->io.out[i]);
	if (refcache_store(E->job.ref_cache, &id, E->io.n_out, bytes,
			   (const void *const *)E->host_ref, err, sizeof err) < 0)
		warning("rank %d: the reference's outputs are not kept: %s", E->rank, err);
}

/* eval: the reference on the inputs of every trial the candidate ran, each
 * compared at once with the candidate's kept outputs (only the candidate's
 * wait on the host); or, with `kept`, the reference's outputs of an earlier
 * evaluation of the same instance and seed (ref_cached). Records up to the
 * first trial that fails on any rank (all ranks agree on it); the
 * reference's later trials are not run. */
static void ref_trials(struct rank_env *E, void **cand, void **kept)
{
	int no = E->io.n_out;
	for (int t = 0; t < E->job.trials; t++) {
		int trial = E->job.trial0 + t;
		if (kept) {
			phase(E, PH_TRIAL, "trial %d: reference (kept from --ref-cache)", trial);
			for (int i = 0; i < no; i++)
				memcpy(E->host_ref[i], kept[t * no + i], tensor_desc_bytes(&E->io.out[i]));
		} else {
			checked_call(E, 0, trial, E->host_ref);
			ref_keep(E, trial);
		}
		for (int i = 0; i < no; i++)
			memcpy(E->host_out[i], cand[t * no + i], tensor_desc_bytes(&E->io.out[i]));
		json_t *outs = json_array();
		int ok = compare_outputs(E, outs);
		struct wire_trial wt = { .trial = E->job.trial0 + t, .rank = E->rank, .ok = ok,
					 .outputs = outs };
		snprintf(wt.gpu, sizeof wt.gpu, "%s", E->gpu);
		send_result(E, wire_trial_pack(&wt));
		json_decref(outs);
		int *oks = xcalloc((size_t)E->world, sizeof(int));
		if (coll_allgather(E, &ok, oks, sizeof ok) < 0)
			rank_fail(E, OUT_INTERNAL, "lost the parent");
		int all = 1;
		for (int r = 0; r < E->world; r++)
			all &= oks[r];
		free(oks);
		if (!all)
			break;
	}
}

static void save_tensors(struct rank_env *E, const char *dir, const char *what,
			 const struct pkb_tensor_desc *descs, int n, void **host)
{
	struct st_tensor *t = xcalloc((size_t)n, sizeof *t);
	for (int i = 0; i < n; i++) {
		t[i].name = (char *)descs[i].name;
		t[i].dtype = descs[i].dtype;
		t[i].ndim = descs[i].ndim;
		memcpy(t[i].shape, descs[i].shape, sizeof t[i].shape);
		t[i].data = host[i];
		t[i].bytes = tensor_desc_bytes(&descs[i]);
	}
	char id[16], w[16], rk[16], m[32], nn[32], tr[16], order[1024] = "";
	snprintf(id, sizeof id, "%d", E->p->id);
	snprintf(w, sizeof w, "%d", E->world);
	snprintf(rk, sizeof rk, "%d", E->rank);
	snprintf(m, sizeof m, "%lld", (long long)E->dims.m);
	snprintf(nn, sizeof nn, "%lld", (long long)E->dims.n);
	snprintf(tr, sizeof tr, "%d", E->dims.trial);
	size_t off = 0;
	for (int i = 0; i < n && off < sizeof order; i++)
		off += (size_t)snprintf(order + off, sizeof order - off, "%s%s", i ? "," : "",
					descs[i].name);
	/* params: tools/crosscheck.py checks the original's scalars against them */
	char *params = problem_params_json(&E->io);
	const char *keys[] = { "pkb_problem", "world", "rank", "m", "n", "dtype", "trial", "order",
			       "params" };
	const char *vals[] = { id, w, rk, m, nn, dtype_name(E->dims.dtype), tr, order, params };
	char *path = xstrfmt("%s/rank_%d_%s.safetensors", dir, E->rank, what);
	if (st_write(path, t, n, keys, vals, 9) < 0)
		rank_fail(E, OUT_INTERNAL, "cannot write '%s'", path);
	free(path);
	free(params);
	free(t);
}

/* run: one solution, one trial; report output statistics; optionally save */
static void do_run(struct rank_env *E)
{
	int trial = E->job.trial0;
	E->dims.trial = trial;
	checked_call(E, 0, trial, E->host_out);
	json_t *outs = json_array();
	for (int i = 0; i < E->io.n_out; i++) {
		const struct pkb_tensor_desc *t = &E->io.out[i];
		double mean_abs, amax;
		int64_t nonfinite;
		dtype_stats(t->dtype, E->host_out[i], tensor_desc_numel(t), &mean_abs, &amax, &nonfinite);
		json_array_append_new(outs, json_pack("{s:s,s:f,s:f,s:I}", "name", t->name,
						      "mean_abs", mean_abs, "amax", amax,
						      "nonfinite", (json_int_t)nonfinite));
	}
	struct wire_run wr = { .rank = E->rank, .outputs = outs };
	snprintf(wr.gpu, sizeof wr.gpu, "%s", E->gpu);
	send_result(E, wire_run_pack(&wr));
	json_decref(outs);
	const char *dir = E->job.save_dir[0] ? E->job.save_dir : NULL;
	if (dir) {
		phase(E, PH_SAVE, "saving inputs and outputs");
		void *h_in[PKB_MAX_TENSORS];
		for (int i = 0; i < E->io.n_in; i++) {
			size_t b = tensor_desc_bytes(&E->io.in[i]);
			h_in[i] = xmalloc(b + 1);
			CUDA_OR(E, OUT_RUNTIME_ERROR,
				cudaMemcpy(h_in[i], E->in_dev[i], b, cudaMemcpyDeviceToHost));
		}
		save_tensors(E, dir, "inputs", E->io.in, E->io.n_in, h_in);
		save_tensors(E, dir, "outputs", E->io.out, E->io.n_out, E->host_out);
		for (int i = 0; i < E->io.n_in; i++)
			free(h_in[i]);
	}
}

/* ---- main ----------------------------------------------------------------- */

static void setup(struct rank_env *E)
{
	describe_job(E);
	E->seed = (uint64_t)E->job.seed;
	/* --atol/--rtol replace the problem's tolerances on float outputs */
	double atol = E->job.atol, rtol = E->job.rtol;   /* < 0: not given */
	for (int i = 0; i < E->io.n_out; i++) {
		struct pkb_tol *t = &E->io.out[i].tol;
		if (!dtype_is_float(E->io.out[i].dtype) || (atol < 0 && rtol < 0))
			continue;
		t->exact = 0;
		if (atol >= 0)
			t->atol = atol;
		if (rtol >= 0)
			t->rtol = rtol;
	}

	phase(E, PH_CUDA_INIT, "creating the CUDA context on device %d", E->local_rank);
	int ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev == 0)
		rank_fail(E, OUT_ENV_ERROR, "no CUDA device: %s",
			  e != cudaSuccess ? cudaGetErrorString(e) : "none found");
	if (E->local_rank >= ndev)
		rank_fail(E, OUT_ENV_ERROR, "needs %d GPUs on this node, found %d", E->world, ndev);
	E->device = E->local_rank;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaSetDevice(E->device));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaFree(0));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamCreateWithFlags(&E->stream, cudaStreamNonBlocking));
	CUDA_OR(E, OUT_RUNTIME_ERROR,
		cudaDeviceGetAttribute(&E->sms, cudaDevAttrMultiProcessorCount, E->device));
	struct cudaDeviceProp prop;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaGetDeviceProperties(&prop, E->device));
	snprintf(E->gpu, sizeof E->gpu, "%.95s", prop.name);
}

int rank_main(void)
{
	struct rank_env *E = xcalloc(1, sizeof *E);
	const char *fd = getenv("PKB_FD");
	E->fd = fd ? atoi(fd) : 3;
	E->rank = -1;
	enum msg_type t;
	char *buf;
	size_t len;
	if (proto_recv(E->fd, &t, &buf, &len) < 0 || t != MSG_JOB) {
		error("pkb __rank: no job on fd %d (this command is internal)", E->fd);
		return PKB_EXIT_USAGE;
	}
	json_error_t je;
	char err[300];
	json_t *job = json_loadb(buf, len, 0, &je);
	free(buf);
	if (!job)
		rank_fail(E, OUT_INTERNAL, "bad job: %s", je.text);
	if (wire_job_unpack(job, &E->job, 1, err, sizeof err) < 0)
		rank_fail(E, OUT_INTERNAL, "bad job: %s", err);
	json_decref(job);
	E->rank = E->job.rank;
	E->world = E->job.world;
	E->local_rank = E->job.local_rank;

	/* a rank ends by returning from here after DONE (or by rank_fail's
	 * _exit): an exit() before that is a bug, named as such */
	sandbox_exit_guard(E->fd, E->phase_now, &E->finishing);
	/* not dumpable: a solution process of the same user cannot read this
	 * one's memory, environment or seed through /proc or ptrace */
	char why[300];
	if (sandbox_judge_harden(why, sizeof why) < 0)
		rank_fail(E, OUT_ENV_ERROR, "cannot harden the judge: %s", why);
	E->n_sol = E->job.n_sol;
	if (E->n_sol < 1 || E->n_sol > MAX_SOL)
		rank_fail(E, OUT_INTERNAL, "a job has 1 or 2 solutions");
	int eval = E->job.mode == WIRE_EVAL;
	struct solproc procs[MAX_SOL];
	int spawned[MAX_SOL] = { 0 };
	int first = eval ? E->n_sol - 1 : 0;
	sol_spawn(E, &procs[first], first);   /* its context while this one's is made */
	spawned[first] = 1;
	setup(E);
	alloc_io(E);
	if (E->job.has_perf)
		perf_begin(E);

	/* One solution process at a time, the candidate first: it never runs
	 * after the reference on this GPU, so no memory it gets can hold a
	 * reference result, and the reference computes and is timed with no
	 * candidate process alive (issue 44). Its outputs wait on the host. */
	void **cand_kept = NULL;
	/* the reference's outputs of an earlier evaluation (--ref-cache): then
	 * no reference process at all */
	void **ref_kept = eval ? ref_cached(E) : NULL;
	for (int k = 0; k < E->n_sol; k++) {
		int s = eval ? E->n_sol - 1 - k : k;
		if (eval && s == 0 && ref_kept) {
			/* the reference's round begins, as a process's would: the
			 * parent takes a trial after the candidate's fini only
			 * after a load (launch.c:phase_allowed) */
			phase(E, PH_LOAD, "the reference's outputs, kept from --ref-cache");
			ref_trials(E, cand_kept, ref_kept);
			continue;
		}
		if (!spawned[s])
			sol_spawn(E, &procs[s], s);
		spawned[s] = 1;
		sol_start(E, &procs[s], s);
		/* untimed, the reference's process makes its context while the
		 * candidate's trials run: it shares nothing of the judge's until
		 * its sol_start, after every candidate process has ended */
		if (eval && s == 1 && !ref_kept && !E->job.has_perf) {
			sol_spawn(E, &procs[0], 0);
			spawned[0] = 1;
		}
		if (!eval)
			do_run(E);
		else if (s == 1)
			cand_kept = run_trials(E, s);
		else
			ref_trials(E, cand_kept, NULL);
		if (E->job.has_perf)
			perf_solution(E, s);
		sol_stop(E, s);
		/* no reference process starts (exporting its buffers over CUDA
		 * IPC, from its judge's socket) while any rank's candidate
		 * process is alive */
		if (eval && s == 1)
			host_barrier(E);
	}
	if (E->job.has_perf)
		perf_end(E);
	free_trials(E, cand_kept);
	free_trials(E, ref_kept);
	phase(E, PH_FINI, "tearing down");
	proto_send(E->fd, MSG_DONE, NULL, 0);
	E->finishing = 1;
	/* The parent waits for this exit. The runtime's own teardown at
	 * exit() (the context, the IPC exports, the symmetric memory and
	 * the buffers, one by one) frees nothing the process's end does not
	 * free as well: a judge's "done" to its exit took 0.17 s median at
	 * W = 2 and 0.37 s at W = 4 on 4x H200 (2026-11-28, launch.ranks[]
	 * .exit_s). */
	fflush(NULL);
	_exit(0);
}
