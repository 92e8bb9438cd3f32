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
 * then each output is compared (compare.c). The timing engine is timing.c's
 * and the state they share rank_env.h's; symm.c serves both the judge (its
 * alignment barrier) and the solution process.
 */
#define _GNU_SOURCE
#include "compare.h"   /* defines: compare_buffers_own, compare_look */
#include "dtype.h"     /* defines: dtype_name */
#include "exitcode.h"  /* defines: enum pkb_outcome */
#include "kernels.h"   /* defines: kern_fill, kern_checksum */
#include "phases.h"    /* defines: enum phase_kind, phase_kind_name */
#include "problem.h"   /* defines: problem_find, problem_describe, tensor_desc_bytes,
			   problem_params_json */
#include "proto.h"     /* defines: proto_send, proto_recv */
#include "rank_env.h"  /* defines: struct rank_env, struct solution, symm_make, do_perf */
#include "safetensors.h"
#include "sandbox.h"   /* defines: sandbox_exit_guard */
#include "solproc.h"   /* defines: solproc_spawn, solproc_wait, solproc_kill */
#include "util.h"

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <math.h>
#include <nccl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- talking to the parent ------------------------------------------------ */

/* "kind|detail": the kind is an enum of phases.h, so only a phase the
 * parent has a budget for can be announced */
void phase(struct rank_env *E, enum phase_kind kind, const char *fmt, ...)
{
	char buf[256];
	int off = snprintf(buf, sizeof buf, "%s|", phase_kind_name(kind));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + off, sizeof buf - (size_t)off, fmt, ap);
	va_end(ap);
	if (!E->is_sol)   /* a solution process's phases are its judge's to announce */
		proto_send(E->fd, MSG_PHASE, buf, strlen(buf));
	snprintf(E->phase_now, sizeof E->phase_now, "%s", buf + off);
}

noreturn void rank_fail(struct rank_env *E, enum pkb_outcome cat, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	error("%s %d: %s: %s", E->is_sol ? "solution process of rank" : "rank", E->rank,
	      outcome_name(cat), msg);
	if (E->proc)
		solproc_kill(E->proc);
	json_t *j = json_pack("{s:s,s:s}", "category", outcome_name(cat), "message", msg);
	char *txt = json_dumps(j, JSON_COMPACT);
	proto_send(E->fd, MSG_FAIL, txt, strlen(txt));
	free(txt);
	json_decref(j);
	fflush(NULL);
	_exit(1);
}

void send_result(struct rank_env *E, json_t *rec)
{
	char *txt = json_dumps(rec, JSON_COMPACT);
	proto_send(E->fd, MSG_RESULT, txt, strlen(txt));
	free(txt);
	json_decref(rec);
}

int coll_allgather(struct rank_env *E, const void *send, void *recv, size_t bytes)
{
	if (proto_send(E->fd, MSG_COLL, send, bytes) < 0)
		return -1;
	enum msg_type t;
	char *buf;
	size_t len;
	if (proto_recv(E->fd, &t, &buf, &len) < 0 || t != MSG_COLL ||
	    len != bytes * (size_t)E->world) {
		free(len ? buf : NULL);
		return -1;
	}
	if (recv)
		memcpy(recv, buf, len);
	free(buf);
	return 0;
}

void host_barrier(struct rank_env *E)
{
	if (coll_allgather(E, NULL, NULL, 0) < 0)
		rank_fail(E, OUT_INTERNAL, "lost the parent during a barrier");
}

/* Wait for the stream, turning asynchronous CUDA and NCCL errors into a
 * runtime_error of `who`. A hang is the parent's to end (its deadline). */
void wait_stream(struct rank_env *E, const char *who)
{
	for (unsigned spins = 0;; spins++) {
		cudaError_t e = cudaStreamQuery(E->stream);
		if (e == cudaSuccess)
			break;
		if (e != cudaErrorNotReady)
			rank_fail(E, OUT_RUNTIME_ERROR, "%s: %s", who, cudaGetErrorString(e));
		if (E->nccl && (spins & 255) == 0) {
			ncclResult_t ae;
			if (E->nccl_api->CommGetAsyncError(E->nccl, &ae) == ncclSuccess &&
			    ae != ncclSuccess && ae != ncclInProgress)
				rank_fail(E, OUT_RUNTIME_ERROR, "%s: NCCL: %s", who,
					  E->nccl_api->GetErrorString(ae));
		}
		if (spins > 1000)
			usleep(50);
	}
	cudaError_t e = cudaDeviceSynchronize();   /* errors of side streams too */
	if (e != cudaSuccess)
		rank_fail(E, OUT_RUNTIME_ERROR, "%s: %s", who, cudaGetErrorString(e));
}

/* ---- the solution process -------------------------------------------------- */

json_t *ipc_handles(struct rank_env *E, void *const *bufs, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++) {
		cudaIpcMemHandle_t h;
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaIpcGetMemHandle(&h, bufs[i]));
		char hex[2 * sizeof h + 1];
		for (size_t k = 0; k < sizeof h; k++)
			snprintf(hex + 2 * k, 3, "%02x", ((unsigned char *)&h)[k]);
		json_array_append_new(a, json_string(hex));
	}
	return a;
}

/* an all-gather the solution process asked for, made among the judges */
static int relay_coll(void *ctx, const void *send, size_t len, void **out, size_t *out_len)
{
	struct rank_env *E = ctx;
	*out_len = len * (size_t)E->world;
	*out = xmalloc(*out_len + 1);
	return coll_allgather(E, send, *out, len);
}

static json_t *sol_wait(struct rank_env *E, json_t *cmd, const char *op)
{
	if (cmd && solproc_send(E->proc, MSG_SOL_CMD, cmd) < 0) {
		char msg[400];
		enum pkb_outcome cat = solproc_describe_end(E->proc, msg, sizeof msg);
		rank_fail(E, cat, "%s", msg);
	}
	json_t *reply = NULL;
	enum pkb_outcome cat;
	char msg[1200];
	if (solproc_wait(E->proc, op, -1, &reply, relay_coll, E, &cat, msg, sizeof msg) < 0)
		rank_fail(E, cat, "%s", msg);
	return reply;
}

void sol_command(struct rank_env *E, json_t *cmd, const char *op)
{
	json_decref(sol_wait(E, cmd, op));
}

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

/* Start solution s's process: the job as it may know it (its own solution,
 * no seed, no save folder), the trial buffers and the go/done words. */
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
	j.has_perf = 0;
	json_t *setup = json_pack("{s:o,s:o,s:o,s:o}", "job", wire_job_pack(&j),
				  "in", ipc_handles(E, E->in_dev, E->io.n_in),
				  "out", ipc_handles(E, E->out_dev, E->io.n_out),
				  "flags", ipc_handles(E, (void *const *)&E->flags, 1));
	const char *argv[] = { pkb_self_exe(), "__sol", NULL };
	char err[300];
	if (solproc_spawn(sp, argv, w->role, s == 0 && !strcmp(w->role, "reference"), err,
			  sizeof err) < 0)
		rank_fail(E, OUT_ENV_ERROR, "cannot start the %s's process: %s", w->role, err);
	E->proc = sp;
	if (solproc_send(sp, MSG_SOL_SETUP, setup) < 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "the %s's process is gone", w->role);
	sol_command(E, NULL, "setup");
	sp->trusted = 0;   /* it loads the solution next */
	json_t *ready = sol_wait(E, NULL, "ready");
	check_gpu_view(E, s, ready);
	json_decref(ready);
	phase(E, PH_INIT, "pkb_init of the %s", w->role);
	sol_command(E, json_pack("{s:s}", "op", "init"), "ok");
}

static void sol_stop(struct rank_env *E, int s)
{
	phase(E, PH_FINI, "pkb_fini of the %s", E->job.sol[s].role);
	sol_command(E, json_pack("{s:s}", "op", "fini"), "ok");
	solproc_reap(E->proc, 5000);
	E->proc = NULL;
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

/* The key of one tensor's draw: SHA-256 of (seed, problem, trial, rank or
 * "all", tensor), its first 8 bytes. One-way, so that a solution that
 * recovers the key of a tensor it sees (host-drawn inputs are splitmix64
 * streams of it, and splitmix64 can be run backwards) learns neither the
 * seed nor a peer's key: a chain of mix64 steps was a bijection at every
 * step, and its constants are public (issue 44: inputs regenerated instead
 * of communicated). */
static uint64_t input_key(struct rank_env *E, int trial, int tensor, int same)
{
	int64_t words[5] = { (int64_t)E->seed, E->p->id, trial, same ? -1 : E->rank, tensor };
	unsigned char md[32];
	sha256(words, sizeof words, md);
	uint64_t k = 0;
	for (int i = 0; i < 8; i++)
		k = k << 8 | md[i];
	return k;
}

void gen_inputs(struct rank_env *E, int trial, void *const *bufs)
{
	gen_inputs_async(E, trial, bufs, NULL);
}

void gen_inputs_async(struct rank_env *E, int trial, void *const *bufs, void **staging)
{
	struct pkb_dims d = E->dims;
	d.trial = trial;
	d.common_seed = input_key(E, trial, -1, 1);
	for (int i = 0; i < E->io.n_in; i++) {
		const struct pkb_tensor_desc *t = &E->io.in[i];
		size_t bytes = tensor_desc_bytes(t);
		uint64_t key = input_key(E, trial, i, t->same_on_all_ranks);
		if (t->dist.kind == PKB_DIST_HOST) {
			/* staging: pinned, the caller's, reused only once the stream
			 * has passed this copy; else a buffer of its own, waited for */
			void *h = staging ? staging[i] : xmalloc(bytes);
			if (staging && !h) {
				CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMallocHost(&h, bytes + 16));
				staging[i] = h;
			}
			if (E->p->gen_host(&d, i, key, h, bytes) != 0)
				rank_fail(E, OUT_INTERNAL, "gen_host of input '%s' failed", t->name);
			CUDA_OR(E, OUT_RUNTIME_ERROR,
				cudaMemcpyAsync(bufs[i], h, bytes, cudaMemcpyHostToDevice, E->stream));
			if (staging)
				continue;
			CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
			free(h);
		} else if (kern_fill(bufs[i], t->dtype, tensor_desc_numel(t), (int)t->dist.kind,
				     t->dist.a, t->dist.b, key, (struct CUstream_st *)E->stream)) {
			rank_fail(E, OUT_RUNTIME_ERROR, "input generation failed for '%s'", t->name);
		}
	}
}

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

void copy_outputs(struct rank_env *E, void *const *dev, void **host)
{
	for (int i = 0; i < E->io.n_out; i++)
		CUDA_OR(E, OUT_RUNTIME_ERROR,
			cudaMemcpyAsync(host[i], dev[i], tensor_desc_bytes(&E->io.out[i]),
					cudaMemcpyDeviceToHost, E->stream));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
}

static void coords_of(const struct pkb_tensor_desc *t, int64_t flat, json_t *arr)
{
	int64_t c[PKB_MAX_DIMS];
	for (int d = t->ndim - 1; d >= 0; d--) {
		int64_t ext = t->shape[d] ? t->shape[d] : 1;
		c[d] = flat % ext;
		flat /= ext;
	}
	for (int d = 0; d < t->ndim; d++)
		json_array_append_new(arr, json_integer(c[d]));
}

static json_t *num_or_str(double v)
{
	if (isnan(v))
		return json_string("nan");
	if (isinf(v))
		return json_string(v > 0 ? "inf" : "-inf");
	return json_real(v);
}

void compare_keep_first(struct rank_env *E, json_t *scratch, json_t *outs, int *ok)
{
	json_array_clear(scratch);
	if (!compare_outputs(E, scratch) && *ok) {
		*ok = 0;
		json_array_extend(outs, scratch);
	}
}

/* Compare every output; returns 1 if all pass. Appends records to `outs`. */
int compare_outputs(struct rank_env *E, json_t *outs)
{
	int all_ok = 1;
	for (int i = 0; i < E->io.n_out; i++) {
		const struct pkb_tensor_desc *t = &E->io.out[i];
		struct cmp_result c;
		/* this rank's 1/W of the flat output: right there and wrong
		 * elsewhere reads as local_only (compare_look) */
		int64_t numel = tensor_desc_numel(t);
		int64_t lo = E->world > 1 ? numel / E->world * E->rank : 0;
		int64_t hi = E->world > 1 ? numel / E->world * (E->rank + 1) : 0;
		int ok = compare_buffers_own(t->dtype, E->host_ref[i], E->host_out[i], numel,
					     t->tol, lo, hi, &c);
		all_ok &= ok;
		json_t *o = json_pack("{s:s,s:b,s:I,s:I,s:o,s:o,s:o,s:o}", "name", t->name, "ok", ok,
				      "n", (json_int_t)c.n, "n_bad", (json_int_t)c.n_bad,
				      "max_abs_err", num_or_str(c.max_abs_err),
				      "l2_rel", num_or_str(c.l2_rel), "l2_limit", json_real(c.l2_limit),
				      "amax_ref", json_real(c.amax_ref));
		json_object_set_new(o, "l2_failed", json_boolean(c.l2_failed));
		if (!ok) {
			const char *look = compare_look(&c);
			json_object_set_new(o, "n_bad_poison", json_integer(c.n_bad_poison));
			json_object_set_new(o, "n_bad_zero", json_integer(c.n_bad_zero));
			json_object_set_new(o, "look", look ? json_string(look) : json_null());
		}
		if (c.worst >= 0) {
			json_t *w = json_pack("{s:I,s:o,s:o,s:o}", "index", (json_int_t)c.worst,
					      "ref", num_or_str(c.worst_ref),
					      "cand", num_or_str(c.worst_cand),
					      "bound", json_real(c.worst_bound));
			json_t *coords = json_array();
			coords_of(t, dtype_is_complex(t->dtype) ? c.worst / 2 : c.worst, coords);
			json_object_set_new(w, "coords", coords);
			json_object_set_new(o, "worst", w);
		}
		json_array_append_new(outs, o);
	}
	return all_ok;
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

/* eval: the reference on the inputs of every trial the candidate ran, each
 * compared at once with the candidate's kept outputs (only the candidate's
 * wait on the host). Records up to the first trial that fails on any rank
 * (all ranks agree on it); the reference's later trials are not run. */
static void ref_trials(struct rank_env *E, void **cand)
{
	int no = E->io.n_out;
	for (int t = 0; t < E->job.trials; t++) {
		checked_call(E, 0, E->job.trial0 + t, E->host_ref);
		for (int i = 0; i < no; i++)
			memcpy(E->host_out[i], cand[t * no + i], tensor_desc_bytes(&E->io.out[i]));
		json_t *outs = json_array();
		int ok = compare_outputs(E, outs);
		struct wire_trial wt = { .trial = E->job.trial0 + t, .rank = E->rank, .ok = ok,
					 .outputs = outs };
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

static void free_trials(struct rank_env *E, void **keep)
{
	for (int i = 0; keep && i < E->job.trials * E->io.n_out; i++)
		free(keep[i]);
	free(keep);
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

void describe_job(struct rank_env *E)
{
	E->p = problem_find(E->job.problem);
	if (!E->p)
		rank_fail(E, OUT_INTERNAL, "unknown problem in the job");
	E->dims.world = E->world;
	E->dims.rank = E->rank;
	E->dims.m = E->job.m;
	E->dims.n = E->job.n;
	E->dims.dtype = E->job.dtype;
	E->dims.trial = E->job.trial0;
	E->device_timeout_ns = (uint64_t)E->job.device_timeout_ms * 1000000ull;
	if (!E->device_timeout_ns)
		E->device_timeout_ns = 5000000000ull;
	if (problem_describe(E->p, &E->dims, &E->io) < 0)
		rank_fail(E, OUT_INTERNAL, "%s", E->io.err);
}

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
}

void nccl_setup(struct rank_env *E)
{
	phase(E, PH_NCCL_INIT, "creating the NCCL communicator");
	char err[300];
	if (!(E->nccl_api = nccl_api(err, sizeof err)))
		rank_fail(E, OUT_ENV_ERROR, "%s", err);
	ncclUniqueId id, *all = xcalloc((size_t)E->world, sizeof id);
	memset(&id, 0, sizeof id);
	if (E->rank == 0)
		NCCL_OR(E, E->nccl_api->GetUniqueId(&id));
	if (coll_allgather(E, &id, all, sizeof id) < 0)
		rank_fail(E, OUT_INTERNAL, "lost the parent");
	NCCL_OR(E, E->nccl_api->CommInitRank(&E->nccl, E->world, all[0], E->rank));
	free(all);
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
	setup(E);
	alloc_io(E);
	E->n_sol = E->job.n_sol;
	if (E->n_sol < 1 || E->n_sol > MAX_SOL)
		rank_fail(E, OUT_INTERNAL, "a job has 1 or 2 solutions");
	if (E->job.has_perf)
		perf_begin(E);

	/* One solution process at a time, the candidate first: it never runs
	 * after the reference on this GPU, so no memory it gets can hold a
	 * reference result, and the reference computes and is timed with no
	 * candidate process alive (issue 44). Its outputs wait on the host. */
	int eval = E->job.mode == WIRE_EVAL;
	void **cand_kept = NULL;
	for (int k = 0; k < E->n_sol; k++) {
		int s = eval ? E->n_sol - 1 - k : k;
		struct solproc sp;
		sol_start(E, &sp, s);
		if (!eval)
			do_run(E);
		else if (s == 1)
			cand_kept = run_trials(E, s);
		else
			ref_trials(E, cand_kept);
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
	phase(E, PH_FINI, "tearing down");
	proto_send(E->fd, MSG_DONE, NULL, 0);
	E->finishing = 1;
	return 0;
}
