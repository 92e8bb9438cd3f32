/*
 * rank.c -- one rank process (`pkb __rank`, started by launch.c).
 *
 * It owns one GPU. It reads the job from fd 3, creates the CUDA context,
 * the stream and (for references) the NCCL communicator once, loads every
 * solution of the job, and then loops over trials and timing inside this one
 * process: the original harness started torchrun twice per trial.
 *
 * Every phase is announced to the parent first (MSG_PHASE), so that when a
 * deadline passes the parent can say where each rank was. Any failure is
 * sent as MSG_FAIL with its category and the process exits: the parent
 * decides the outcome and tears the other ranks down.
 *
 * Per trial of an eval: inputs are drawn on the device, checksummed, the
 * reference runs on poisoned outputs and its outputs are copied to the host;
 * the inputs are redrawn, the candidate runs on poisoned outputs, its input
 * checksums must be unchanged, and each output is compared (compare.c).
 *
 * Symmetric memory is symm.c's and the timing engine timing.c's; the state
 * all three share is rank_env.h's.
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
#include "sandbox.h"   /* defines: sandbox_rank_enter, sandbox_exit_guard */
#include "util.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
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
	error("rank %d: %s: %s", E->rank, outcome_name(cat), msg);
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
			if (ncclCommGetAsyncError(E->nccl, &ae) == ncclSuccess &&
			    ae != ncclSuccess && ae != ncclInProgress)
				rank_fail(E, OUT_RUNTIME_ERROR, "%s: NCCL: %s", who,
					  ncclGetErrorString(ae));
		}
		if (spins > 1000)
			usleep(50);
	}
	cudaError_t e = cudaDeviceSynchronize();   /* errors of side streams too */
	if (e != cudaSuccess)
		rank_fail(E, OUT_RUNTIME_ERROR, "%s: %s", who, cudaGetErrorString(e));
}

/* ---- services handed to solutions ----------------------------------------- */

static struct solution *sol_of(pkb_ctx *ctx)
{
	/* ctx is the first member of struct solution */
	struct solution *s = (struct solution *)ctx;
	if (!ctx || s->env == NULL || (s != &s->env->sol[0] && s != &s->env->sol[1]))
		return NULL;
	return s;
}

static int svc_symm_alloc(pkb_ctx *ctx, size_t bytes, pkb_symm *out)
{
	struct solution *s = sol_of(ctx);
	if (!s || !s->in_setup || s->n_symm >= MAX_SYMM || !out)
		return -1;
	struct symm_block *b = &s->symm[s->n_symm];
	if (symm_make(s->env, bytes, b) < 0) {
		/* into this rank's log, which is kept when init then fails */
		warning("symm_alloc of %zu bytes for the %s failed: %s", bytes,
			s->role, s->env->symm_err);
		return -1;
	}
	s->n_symm++;
	out->local = b->local;
	out->peers = b->peers;
	out->peers_dev = b->peers_dev;
	out->bytes = bytes;
	return 0;
}

static int svc_host_barrier(pkb_ctx *ctx)
{
	struct solution *s = sol_of(ctx);
	if (!s || !s->in_setup)
		return -1;
	host_barrier(s->env);
	return 0;
}

static int svc_host_allgather(pkb_ctx *ctx, const void *send, void *recv, size_t bytes)
{
	struct solution *s = sol_of(ctx);
	if (!s || !s->in_setup)
		return -1;
	return coll_allgather(s->env, send, recv, bytes);
}

static void svc_log(pkb_ctx *ctx, const char *fmt, ...)
{
	struct solution *s = sol_of(ctx);
	va_list ap;
	va_start(ap, fmt);
	/* the solution's own lines, passed on as they came (util.h's exception) */
	fprintf(stderr, "[%s rank %d] ", s ? s->role : "?", s ? s->env->rank : -1);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static const pkb_services services = {
	.symm_alloc = svc_symm_alloc,
	.host_barrier = svc_host_barrier,
	.host_allgather = svc_host_allgather,
	.log = svc_log,
};

/* ---- solutions ------------------------------------------------------------ */

static void load_solution(struct rank_env *E, struct solution *s, const char *role,
			  const char *so, int give_nccl)
{
	memset(s, 0, sizeof *s);
	s->env = E;
	s->role = role;
	phase(E, PH_LOAD, "loading the %s", role);
	/* RTLD_LOCAL: a solution's symbols cannot interpose on the harness's */
	s->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!s->dl)
		rank_fail(E, OUT_LOAD_REFUSED, "cannot load the %s: %s", role, dlerror());
	const int *abi = dlsym(s->dl, "pkb_abi_version");
	if (!abi)
		rank_fail(E, OUT_LOAD_REFUSED, "the %s has no pkb_abi_version (missing PKB_SOLUTION;)",
			  role);
	if (*abi != PKB_ABI_VERSION)
		rank_fail(E, OUT_LOAD_REFUSED, "the %s was built for ABI %d, the harness has ABI %d",
			  role, *abi, PKB_ABI_VERSION);
	*(void **)&s->init = dlsym(s->dl, "pkb_init");
	*(void **)&s->run = dlsym(s->dl, "pkb_run");
	*(void **)&s->fini = dlsym(s->dl, "pkb_fini");
	if (!s->init || !s->run || !s->fini)
		rank_fail(E, OUT_LOAD_REFUSED, "the %s lacks pkb_init, pkb_run or pkb_fini", role);

	pkb_ctx *m = &s->master;
	m->abi_version = PKB_ABI_VERSION;
	m->rank = E->rank;
	m->world = E->world;
	m->local_rank = E->local_rank;
	m->device = E->device;
	m->stream = (struct CUstream_st *)E->stream;
	m->problem_id = E->p->id;
	m->m = E->dims.m;
	m->n = E->dims.n;
	m->dtype = E->dims.dtype;
	m->n_in = E->io.n_in;
	m->n_out = E->io.n_out;
	m->n_params = E->io.n_params;
	for (int i = 0; i < E->io.n_params; i++) {
		s->params[i].name = E->io.params[i].name;
		s->params[i].value = E->io.params[i].value;
	}
	m->params = s->params;
	m->svc = &services;
	m->nccl_comm = give_nccl ? (void *)E->nccl : NULL;
	if (make_dev_comm(E, &s->pads, &s->epochs, &s->err, &m->dev) < 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "cannot allocate signal pads for the %s: %s", role,
			  E->symm_err);
}

static void fill_tensor(pkb_tensor *t, const struct pkb_tensor_desc *d, void *data)
{
	t->data = data;
	t->name = d->name;
	t->dtype = d->dtype;
	t->ndim = d->ndim;
	memcpy(t->shape, d->shape, sizeof t->shape);
	t->numel = tensor_desc_numel(d);
	t->bytes = tensor_desc_bytes(d);
}

/* Refresh everything the solution can see from the harness's copy, so that
 * a solution that scribbles on its context changes nothing for the next call. */
void refresh_ctx(struct rank_env *E, struct solution *s, void *const *in_data,
			void *const *out_data)
{
	void *user = s->ctx.user;
	s->ctx = s->master;
	s->ctx.user = user;
	for (int i = 0; i < E->io.n_in; i++)
		fill_tensor(&s->in[i], &E->io.in[i], in_data ? in_data[i] : NULL);
	for (int i = 0; i < E->io.n_out; i++)
		fill_tensor(&s->out[i], &E->io.out[i], out_data ? out_data[i] : NULL);
	s->ctx.in = s->in;
	s->ctx.out = s->out;
}

static void sol_init(struct rank_env *E, struct solution *s)
{
	phase(E, PH_INIT, "pkb_init of the %s", s->role);
	refresh_ctx(E, s, NULL, NULL);
	s->in_setup = 1;
	int rc = s->init(&s->ctx);
	s->in_setup = 0;
	if (rc != 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "pkb_init of the %s returned %d", s->role, rc);
	wait_stream(E, s->role);
	host_barrier(E);
}

static void sol_fini(struct rank_env *E, struct solution *s)
{
	phase(E, PH_FINI, "pkb_fini of the %s", s->role);
	refresh_ctx(E, s, NULL, NULL);
	s->in_setup = 1;
	int rc = s->fini(&s->ctx);
	s->in_setup = 0;
	if (rc != 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "pkb_fini of the %s returned %d", s->role, rc);
	wait_stream(E, s->role);
	host_barrier(E);   /* nobody frees memory a peer may still read */
	for (int i = 0; i < s->n_symm; i++)
		symm_free(E, &s->symm[i]);
	symm_free(E, &s->pads);
	cudaFree(s->epochs);
	cudaFree(s->err);
}

/* One call: refresh the context, call pkb_run. Does not wait. */
void sol_call(struct rank_env *E, struct solution *s, void *const *in, void *const *out)
{
	refresh_ctx(E, s, in, out);
	int rc = s->run(&s->ctx);
	if (rc != 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "pkb_run of the %s returned %d", s->role, rc);
}

void check_dev_err(struct rank_env *E, struct solution *s)
{
	uint32_t err = 0;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemcpy(&err, s->err, 4, cudaMemcpyDeviceToHost));
	if (err & PKB_DEV_ERR_TIMEOUT)
		rank_fail(E, OUT_TIMEOUT, "a device-side wait of the %s gave up after %.1f s "
			  "(a peer never arrived: deadlock or missing signal)", s->role,
			  (double)E->device_timeout_ns / 1e9);
}

/* ---- inputs and outputs --------------------------------------------------- */

static uint64_t input_key(struct rank_env *E, int trial, int tensor, int same)
{
	uint64_t k = mix64(E->seed);
	k = mix64(k ^ (uint64_t)E->p->id);
	k = mix64(k ^ (uint64_t)(uint32_t)trial);
	k = mix64(k ^ (same ? 0xffffffffull : (uint64_t)E->rank));
	return mix64(k ^ (uint64_t)tensor);
}

void gen_inputs(struct rank_env *E, int trial, void *const *bufs)
{
	struct pkb_dims d = E->dims;
	d.trial = trial;
	d.common_seed = input_key(E, trial, -1, 1);
	for (int i = 0; i < E->io.n_in; i++) {
		const struct pkb_tensor_desc *t = &E->io.in[i];
		size_t bytes = tensor_desc_bytes(t);
		uint64_t key = input_key(E, trial, i, t->same_on_all_ranks);
		if (t->dist.kind == PKB_DIST_HOST) {
			void *h = xmalloc(bytes);
			if (E->p->gen_host(&d, i, key, h, bytes) != 0)
				rank_fail(E, OUT_INTERNAL, "gen_host of input '%s' failed", t->name);
			CUDA_OR(E, OUT_RUNTIME_ERROR,
				cudaMemcpyAsync(bufs[i], h, bytes, cudaMemcpyHostToDevice, E->stream));
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
void poison_outputs(struct rank_env *E, void *const *bufs)
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
}

/* Run solution s on trial `trial`'s inputs into E->out_dev, outputs copied to
 * `host`. Fails the rank if the solution changed an input. */
static void checked_call(struct rank_env *E, struct solution *s, int trial, void **host)
{
	uint64_t before[PKB_MAX_TENSORS], after[PKB_MAX_TENSORS];
	phase(E, PH_TRIAL, "trial %d: %s", trial, s->role);
	gen_inputs(E, trial, E->in_dev);
	checksum_inputs(E, E->in_dev, before);
	poison_outputs(E, E->out_dev);
	host_barrier(E);
	sol_call(E, s, E->in_dev, E->out_dev);
	wait_stream(E, s->role);
	check_dev_err(E, s);
	checksum_inputs(E, E->in_dev, after);
	for (int i = 0; i < E->io.n_in; i++)
		if (before[i] != after[i])
			rank_fail(E, !strcmp(s->role, "reference") ? OUT_INTERNAL : OUT_MISMATCH,
				  "the %s modified its input '%s' (inputs are read-only)", s->role,
				  E->io.in[i].name);
	copy_outputs(E, E->out_dev, host);
}

/* eval: reference and candidate on identical inputs, every trial. Stops
 * after the first trial that fails on any rank (all ranks agree on it).
 * The candidate goes first (issue 44, stale memory): run after the
 * reference, it could read the reference's result where the reference
 * left it (a scratch buffer next to its own allocations, in the same
 * context); run first, it finds only the previous trial's, of other
 * inputs. */
static void do_eval(struct rank_env *E, struct solution *ref, struct solution *cand)
{
	int t0 = E->job.trial0;
	int trials = E->job.trials;
	for (int t = t0; t < t0 + trials; t++) {
		checked_call(E, cand, t, E->host_out);
		checked_call(E, ref, t, E->host_ref);
		json_t *outs = json_array();
		int ok = compare_outputs(E, outs);
		struct wire_trial wt = { .trial = t, .rank = E->rank, .ok = ok, .outputs = outs };
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
static void do_run(struct rank_env *E, struct solution *s)
{
	int trial = E->job.trial0;
	E->dims.trial = trial;
	checked_call(E, s, trial, E->host_out);
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

static void setup(struct rank_env *E)
{
	E->p = problem_find(E->job.problem);
	if (!E->p)
		rank_fail(E, OUT_INTERNAL, "unknown problem in the job");
	E->dims.world = E->world;
	E->dims.rank = E->rank;
	E->dims.m = E->job.m;
	E->dims.n = E->job.n;
	E->dims.dtype = (pkb_dtype)dtype_parse(E->job.dtype);
	E->dims.trial = E->job.trial0;
	E->seed = (uint64_t)E->job.seed;
	E->device_timeout_ns = (uint64_t)E->job.device_timeout_ms * 1000000ull;
	if (!E->device_timeout_ns)
		E->device_timeout_ns = 5000000000ull;
	if (problem_describe(E->p, &E->dims, &E->io) < 0)
		rank_fail(E, OUT_INTERNAL, "%s", E->io.err);
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
}

static void nccl_setup(struct rank_env *E)
{
	phase(E, PH_NCCL_INIT, "creating the NCCL communicator");
	ncclUniqueId id, *all = xcalloc((size_t)E->world, sizeof id);
	memset(&id, 0, sizeof id);
	if (E->rank == 0)
		NCCL_OR(E, ncclGetUniqueId(&id));
	if (coll_allgather(E, &id, all, sizeof id) < 0)
		rank_fail(E, OUT_INTERNAL, "lost the parent");
	NCCL_OR(E, ncclCommInitRank(&E->nccl, E->world, all[0], E->rank));
	free(all);
}

/* Enter the sandbox (src/sandbox.h) before the first solution is loaded:
 * its constructors run inside dlopen. */
static void enter_sandbox(struct rank_env *E)
{
	if (!E->job.sandbox)
		return;
	char err[300];
	int r = sandbox_rank_enter(&E->job, E->fd, err, sizeof err);
	if (r < 0)
		rank_fail(E, OUT_ENV_ERROR, "cannot enter the sandbox: %s (--no-sandbox runs "
			  "trusted code without it)", err);
	if (r > 0 && E->rank == 0)
		warning("%s", err);
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
	const char *mode = E->job.mode;

	/* a rank ends by returning from here after DONE (or by rank_fail's
	 * _exit): an exit() before that is a solution's, named as such */
	sandbox_exit_guard(E->fd, E->phase_now, &E->finishing);
	setup(E);
	int need_nccl = 0;
	for (int i = 0; i < E->job.n_sol; i++)
		need_nccl |= E->job.sol[i].nccl;
	if (need_nccl)
		nccl_setup(E);
	alloc_io(E);

	E->n_sol = E->job.n_sol;
	if (E->n_sol < 1 || E->n_sol > MAX_SOL)
		rank_fail(E, OUT_INTERNAL, "a job has 1 or 2 solutions");
	enter_sandbox(E);
	for (int i = 0; i < E->n_sol; i++)
		load_solution(E, &E->sol[i], E->job.sol[i].role, E->job.sol[i].so,
			      E->job.sol[i].nccl);
	for (int i = 0; i < E->n_sol; i++)
		sol_init(E, &E->sol[i]);

	if (!strcmp(mode, "eval"))
		do_eval(E, &E->sol[0], &E->sol[1]);
	else
		do_run(E, &E->sol[0]);
	if (E->job.has_perf)
		do_perf(E);

	for (int i = E->n_sol - 1; i >= 0; i--)
		sol_fini(E, &E->sol[i]);
	phase(E, PH_FINI, "tearing down");
	if (E->nccl)
		ncclCommDestroy(E->nccl);
	proto_send(E->fd, MSG_DONE, NULL, 0);
	E->finishing = 1;
	return 0;
}
