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
 */
#define _GNU_SOURCE
#include "compare.h"   /* defines: compare_buffers */
#include "dtype.h"     /* defines: dtype_name */
#include "exitcode.h"  /* defines: enum pkb_outcome */
#include "kernels.h"   /* defines: kern_fill, kern_checksum, kern_barrier, kern_l2_flush */
#include "perfplan.h"  /* defines: perf_plan_make, perf_group, perf_out_set */
#include "phases.h"    /* defines: enum phase_kind, phase_kind_name */
#include "problem.h"   /* defines: problem_find, problem_describe, tensor_desc_bytes */
#include "proto.h"     /* defines: proto_send, proto_recv */
#include "safetensors.h"
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

#define MAX_SOL 2
#define MAX_SYMM 64

struct rank_env;

struct symm_block {
	void *local;
	void **peers;        /* host table */
	void **peers_dev;    /* device table */
	size_t bytes;
};

struct solution {
	pkb_ctx ctx;                  /* handed to the solution; refreshed per call */
	struct rank_env *env;
	const char *role;             /* "reference" or "candidate" */
	void *dl;
	int (*init)(pkb_ctx *);
	int (*run)(pkb_ctx *);
	int (*fini)(pkb_ctx *);
	pkb_ctx master;               /* the harness's copy of every field */
	pkb_tensor in[PKB_MAX_TENSORS], out[PKB_MAX_TENSORS];
	pkb_param params[PKB_MAX_PARAMS];
	struct symm_block symm[MAX_SYMM];
	int n_symm;
	struct symm_block pads;
	uint32_t *epochs, *err;
	int in_setup;                 /* services are allowed (init/fini) */
};

struct rank_env {
	int fd, rank, world, local_rank, device;
	json_t *job;
	const struct pkb_problem *p;
	struct pkb_dims dims;
	struct pkb_io io;
	uint64_t seed;
	cudaStream_t stream;
	ncclComm_t nccl;
	struct solution sol[MAX_SOL];
	int n_sol;
	void *in_dev[PKB_MAX_TENSORS], *out_dev[PKB_MAX_TENSORS];
	void *host_ref[PKB_MAX_TENSORS], *host_out[PKB_MAX_TENSORS];
	uint64_t *dev_sum;            /* checksum scratch */
	struct symm_block align_pads; /* the harness's own alignment barrier */
	uint32_t *align_epochs, *align_err;
	uint64_t device_timeout_ns;
	char symm_err[200];           /* why the last symmetric allocation failed */
};

/* ---- talking to the parent ------------------------------------------------ */

/* "kind|detail": the kind is an enum of phases.h, so only a phase the
 * parent has a budget for can be announced */
static void phase(struct rank_env *E, enum phase_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void phase(struct rank_env *E, enum phase_kind kind, const char *fmt, ...)
{
	char buf[256];
	int off = snprintf(buf, sizeof buf, "%s|", phase_kind_name(kind));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + off, sizeof buf - (size_t)off, fmt, ap);
	va_end(ap);
	proto_send(E->fd, MSG_PHASE, buf, strlen(buf));
}

static noreturn void rank_fail(struct rank_env *E, enum pkb_outcome cat, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static noreturn void rank_fail(struct rank_env *E, enum pkb_outcome cat, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "rank %d: %s: %s\n", E->rank, outcome_name(cat), msg);
	json_t *j = json_pack("{s:s,s:s}", "category", outcome_name(cat), "message", msg);
	char *txt = json_dumps(j, JSON_COMPACT);
	proto_send(E->fd, MSG_FAIL, txt, strlen(txt));
	free(txt);
	json_decref(j);
	fflush(NULL);
	_exit(1);
}

static void send_result(struct rank_env *E, json_t *rec)
{
	char *txt = json_dumps(rec, JSON_COMPACT);
	proto_send(E->fd, MSG_RESULT, txt, strlen(txt));
	free(txt);
	json_decref(rec);
}

static int coll_allgather(struct rank_env *E, const void *send, void *recv, size_t bytes)
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

static void host_barrier(struct rank_env *E)
{
	if (coll_allgather(E, NULL, NULL, 0) < 0)
		rank_fail(E, OUT_INTERNAL, "lost the parent during a barrier");
}

#define CUDA_OR(E, cat, call) do { \
	cudaError_t e_ = (call); \
	if (e_ != cudaSuccess) \
		rank_fail((E), (cat), "%s:%d: %s: %s", __FILE__, __LINE__, #call, \
			  cudaGetErrorString(e_)); \
} while (0)

#define NCCL_OR(E, call) do { \
	ncclResult_t r_ = (call); \
	if (r_ != ncclSuccess) \
		rank_fail((E), OUT_RUNTIME_ERROR, "%s:%d: %s: %s (%s)", __FILE__, __LINE__, \
			  #call, ncclGetErrorString(r_), ncclGetLastError(NULL)); \
} while (0)

/* Wait for the stream, turning asynchronous CUDA and NCCL errors into a
 * runtime_error of `who`. A hang is the parent's to end (its deadline). */
static void wait_stream(struct rank_env *E, const char *who)
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

/* ---- symmetric memory (CUDA IPC over NVLink) ------------------------------ */

/* a failed step of symm_make, kept for the message of whoever called it */
static int symm_fail(struct rank_env *E, const char *what, cudaError_t e)
{
	snprintf(E->symm_err, sizeof E->symm_err, "%s: %s", what,
		 e == cudaSuccess ? "the ranks could not exchange handles" : cudaGetErrorString(e));
	return -1;
}

static int symm_make(struct rank_env *E, size_t bytes, struct symm_block *b)
{
	memset(b, 0, sizeof *b);
	b->bytes = bytes;
	/* whole 2 MiB pages: a peer's copy engine wrote into an IPC-mapped 1 GiB + 5 KiB
	 * buffer at two thirds of the rate it reached into exactly 1 GiB (002
	 * ok_ce_steps, 256 MiB a rank, 4x H200: 3550 against 2251 us) */
	const size_t page = (size_t)2 << 20;
	size_t alloc = bytes ? (bytes + page - 1) / page * page : page;
	cudaError_t e;
	if ((e = cudaMalloc(&b->local, alloc)) != cudaSuccess ||
	    (e = cudaMemset(b->local, 0, alloc)) != cudaSuccess)
		return symm_fail(E, "cudaMalloc of a symmetric buffer", e);
	cudaIpcMemHandle_t mine, *all = xcalloc((size_t)E->world, sizeof *all);
	if ((e = cudaIpcGetMemHandle(&mine, b->local)) != cudaSuccess) {
		free(all);
		return symm_fail(E, "cudaIpcGetMemHandle", e);
	}
	if (coll_allgather(E, &mine, all, sizeof mine) < 0) {
		free(all);
		return symm_fail(E, "allgather of IPC handles", cudaSuccess);
	}
	b->peers = xcalloc((size_t)E->world, sizeof(void *));
	for (int r = 0; r < E->world; r++) {
		if (r == E->rank) {
			b->peers[r] = b->local;
			continue;
		}
		if ((e = cudaIpcOpenMemHandle(&b->peers[r], all[r],
					      cudaIpcMemLazyEnablePeerAccess)) != cudaSuccess) {
			free(all);
			return symm_fail(E, "cudaIpcOpenMemHandle of a peer's buffer", e);
		}
	}
	free(all);
	if ((e = cudaMalloc((void **)&b->peers_dev, (size_t)E->world * sizeof(void *))) != cudaSuccess ||
	    (e = cudaMemcpy(b->peers_dev, b->peers, (size_t)E->world * sizeof(void *),
			    cudaMemcpyHostToDevice)) != cudaSuccess)
		return symm_fail(E, "the peer table", e);
	/* every rank has mapped every buffer before anyone uses it */
	host_barrier(E);
	return 0;
}

static void symm_free(struct rank_env *E, struct symm_block *b)
{
	if (!b->peers)
		return;
	for (int r = 0; r < E->world; r++)
		if (r != E->rank && b->peers[r])
			cudaIpcCloseMemHandle(b->peers[r]);
	cudaFree(b->peers_dev);
	cudaFree(b->local);
	free(b->peers);
	memset(b, 0, sizeof *b);
}

static int make_dev_comm(struct rank_env *E, struct symm_block *pads, uint32_t **epochs,
			 uint32_t **err, pkb_dev_comm *c)
{
	size_t pad_bytes = (size_t)PKB_SIGNAL_SLOTS * (size_t)E->world * sizeof(uint32_t);
	if (symm_make(E, pad_bytes, pads) < 0 ||
	    cudaMalloc((void **)epochs, PKB_SIGNAL_SLOTS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(*epochs, 0, PKB_SIGNAL_SLOTS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc((void **)err, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(*err, 0, sizeof(uint32_t)) != cudaSuccess)
		return -1;
	c->rank = E->rank;
	c->world = E->world;
	c->pads = (uint32_t *const *)pads->peers_dev;
	c->epochs = *epochs;
	c->err = *err;
	c->timeout_ns = E->device_timeout_ns;
	return 0;
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
		fprintf(stderr, "pkb: symm_alloc of %zu bytes for the %s failed: %s\n", bytes,
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
static void refresh_ctx(struct rank_env *E, struct solution *s, void *const *in_data,
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
static void sol_call(struct rank_env *E, struct solution *s, void *const *in, void *const *out)
{
	refresh_ctx(E, s, in, out);
	int rc = s->run(&s->ctx);
	if (rc != 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "pkb_run of the %s returned %d", s->role, rc);
}

static void check_dev_err(struct rank_env *E, struct solution *s)
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

static void gen_inputs(struct rank_env *E, int trial, void *const *bufs)
{
	struct pkb_dims d = E->dims;
	d.trial = trial;
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
static void poison_outputs(struct rank_env *E, void *const *bufs)
{
	for (int i = 0; i < E->io.n_out; i++)
		CUDA_OR(E, OUT_RUNTIME_ERROR,
			cudaMemsetAsync(bufs[i], 0xff, tensor_desc_bytes(&E->io.out[i]), E->stream));
}

static void copy_outputs(struct rank_env *E, void *const *dev, void **host)
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
static int compare_outputs(struct rank_env *E, json_t *outs)
{
	int all_ok = 1;
	for (int i = 0; i < E->io.n_out; i++) {
		const struct pkb_tensor_desc *t = &E->io.out[i];
		struct cmp_result c;
		int ok = compare_buffers(t->dtype, E->host_ref[i], E->host_out[i],
					 tensor_desc_numel(t), t->tol, &c);
		all_ok &= ok;
		json_t *o = json_pack("{s:s,s:b,s:I,s:I,s:o,s:o,s:o,s:o}", "name", t->name, "ok", ok,
				      "n", (json_int_t)c.n, "n_bad", (json_int_t)c.n_bad,
				      "max_abs_err", num_or_str(c.max_abs_err),
				      "l2_rel", num_or_str(c.l2_rel), "l2_limit", json_real(c.l2_limit),
				      "amax_ref", json_real(c.amax_ref));
		json_object_set_new(o, "l2_failed", json_boolean(c.l2_failed));
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
 * after the first trial that fails on any rank (all ranks agree on it). */
static void do_eval(struct rank_env *E, struct solution *ref, struct solution *cand)
{
	int t0 = (int)json_integer_value(json_object_get(E->job, "trial0"));
	int trials = (int)json_integer_value(json_object_get(E->job, "trials"));
	for (int t = t0; t < t0 + trials; t++) {
		checked_call(E, ref, t, E->host_ref);
		checked_call(E, cand, t, E->host_out);
		json_t *outs = json_array();
		int ok = compare_outputs(E, outs);
		send_result(E, json_pack("{s:s,s:i,s:i,s:b,s:o}", "kind", "trial", "trial", t,
					 "rank", E->rank, "ok", ok, "outputs", outs));
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
	const char *keys[] = { "pkb_problem", "world", "rank", "m", "n", "dtype", "trial", "order" };
	const char *vals[] = { id, w, rk, m, nn, dtype_name(E->dims.dtype), tr, order };
	char *path = xstrfmt("%s/rank_%d_%s.safetensors", dir, E->rank, what);
	if (st_write(path, t, n, keys, vals, 8) < 0)
		rank_fail(E, OUT_INTERNAL, "cannot write '%s'", path);
	free(path);
	free(t);
}

/* run: one solution, one trial; report output statistics; optionally save */
static void do_run(struct rank_env *E, struct solution *s)
{
	int trial = (int)json_integer_value(json_object_get(E->job, "trial0"));
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
	send_result(E, json_pack("{s:s,s:i,s:o}", "kind", "run", "rank", E->rank, "outputs", outs));
	const char *dir = json_string_value(json_object_get(E->job, "save_dir"));
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

/* ---- timing (docs/TIMING.md) ---------------------------------------------- */

struct perf_set {
	struct perf_plan plan;
	void **in[PERF_MAX_GROUPS];         /* [group][tensor] */
	int gen[PERF_MAX_GROUPS];           /* the content generation each group holds */
	uint64_t *sums;                     /* device: [group][tensor] checksum of that content */
	uint64_t *now_sum;                  /* device: checksum scratch */
	uint32_t *modified;                 /* device: set when a group's content changed */
	void **out[MAX_SOL][PERF_MAX_GROUPS + 1]; /* [solution][set][tensor]: each solution
						  * has its own, so that the re-check reads
						  * what that solution wrote */
	void *chk_in[PKB_MAX_TENSORS];      /* the re-check's inputs and reference outputs */
	void *chk_out[PKB_MAX_TENSORS];
	void *flush;                        /* 2 x L2, read to leave L2 clean */
	size_t flush_bytes;
	cudaGraphExec_t graph[MAX_SOL][PERF_MAX_GROUPS];
	char device[256];                   /* the GPU's name, for the roofline */
	/* the launch gate: host memory mapped for the device */
	volatile uint32_t *gate;            /* [0] the host's release word, [1] expired */
	volatile uint32_t *gate_dev;        /* the same words, as the device sees them */
	uint32_t gate_gen;
	struct perf_gate gate_state;        /* on until it expired twice (perfplan.h) */
};

/* A block's calls are enqueued behind a gate kernel and released at once, so
 * the GPU runs them back to back and no call's events include the host's
 * enqueue time (docs/TIMING.md). A solution that synchronises inside its
 * run cannot be gated: the gate expires after GATE_NS and the block runs
 * as enqueued; after two expiries the gate is left off. */
#define GATE_NS 200000000ull

static void *dev_alloc(struct rank_env *E, size_t bytes)
{
	void *p = NULL;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMalloc(&p, bytes + 16));
	return p;
}

/* checksums of group g's tensors, as generated, into ps->sums */
static void sum_group(struct rank_env *E, struct perf_set *ps, int g, uint64_t *dst)
{
	for (int i = 0; i < E->io.n_in; i++)
		if (kern_checksum(ps->in[g][i], tensor_desc_bytes(&E->io.in[i]), dst + i,
				  (struct CUstream_st *)E->stream))
			rank_fail(E, OUT_RUNTIME_ERROR, "input checksum failed");
}

/* Group g gets content no call has seen: the next generation. Its current
 * content is checked first: a call that wrote into its inputs is caught. */
static void regen_group(struct rank_env *E, struct perf_set *ps, int g)
{
	uint64_t *want = ps->sums + (size_t)g * PKB_MAX_TENSORS;
	sum_group(E, ps, g, ps->now_sum);
	for (int i = 0; i < E->io.n_in; i++)
		if (kern_flag_if_differ(ps->now_sum + i, want + i, ps->modified,
					(struct CUstream_st *)E->stream))
			rank_fail(E, OUT_RUNTIME_ERROR, "input check failed");
	ps->gen[g]++;
	gen_inputs(E, perf_trial(g, ps->gen[g]), ps->in[g]);
	sum_group(E, ps, g, want);
}

static void flush_l2(struct rank_env *E, struct perf_set *ps)
{
	if (kern_l2_flush(ps->flush, ps->flush_bytes, (struct CUstream_st *)E->stream))
		rank_fail(E, OUT_RUNTIME_ERROR, "L2 flush launch failed");
}

static void perf_prepare(struct rank_env *E, struct perf_set *ps, enum perf_mode mode,
			 int warmup, int iters, int block)
{
	struct cudaDeviceProp prop;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaGetDeviceProperties(&prop, E->device));
	size_t in_bytes = 0;
	for (int i = 0; i < E->io.n_in; i++)
		in_bytes += tensor_desc_bytes(&E->io.in[i]);
	/* ranks may hold inputs of different sizes (a scatter's root holds W
	 * slabs): the plan must be the same everywhere, so it is made from the
	 * least and the most any rank holds */
	size_t *all = xcalloc((size_t)E->world, sizeof *all);
	if (coll_allgather(E, &in_bytes, all, sizeof in_bytes) < 0)
		rank_fail(E, OUT_INTERNAL, "the ranks could not agree on input groups");
	size_t least = in_bytes, most = in_bytes;
	for (int r = 0; r < E->world; r++) {
		least = all[r] < least ? all[r] : least;
		most = all[r] > most ? all[r] : most;
	}
	free(all);
	perf_plan_make(&ps->plan, mode, least, most, (size_t)prop.l2CacheSize, warmup, iters, block);
	snprintf(ps->device, sizeof ps->device, "%s", prop.name);

	int G = ps->plan.groups;
	ps->sums = dev_alloc(E, (size_t)G * PKB_MAX_TENSORS * sizeof(uint64_t));
	ps->now_sum = dev_alloc(E, PKB_MAX_TENSORS * sizeof(uint64_t));
	ps->modified = dev_alloc(E, sizeof(uint32_t));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemset(ps->modified, 0, sizeof(uint32_t)));
	for (int g = 0; g < G; g++) {
		ps->in[g] = xcalloc(PKB_MAX_TENSORS, sizeof(void *));
		for (int i = 0; i < E->io.n_in; i++)
			ps->in[g][i] = dev_alloc(E, tensor_desc_bytes(&E->io.in[i]));
		gen_inputs(E, perf_trial(g, 0), ps->in[g]);
		sum_group(E, ps, g, ps->sums + (size_t)g * PKB_MAX_TENSORS);
	}
	for (int s = 0; s < E->n_sol; s++)
		for (int k = 0; k < ps->plan.out_sets; k++) {
			ps->out[s][k] = xcalloc(PKB_MAX_TENSORS, sizeof(void *));
			for (int i = 0; i < E->io.n_out; i++)
				ps->out[s][k][i] = dev_alloc(E, tensor_desc_bytes(&E->io.out[i]));
		}
	for (int i = 0; i < E->io.n_in; i++)
		ps->chk_in[i] = dev_alloc(E, tensor_desc_bytes(&E->io.in[i]));
	for (int i = 0; i < E->io.n_out; i++)
		ps->chk_out[i] = dev_alloc(E, tensor_desc_bytes(&E->io.out[i]));
	void *gate = NULL;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaHostAlloc(&gate, 2 * sizeof(uint32_t), cudaHostAllocMapped));
	ps->gate = gate;
	ps->gate[0] = ps->gate[1] = 0;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaHostGetDevicePointer((void **)&ps->gate_dev, gate, 0));
	perf_gate_init(&ps->gate_state);
	ps->flush_bytes = 2 * (size_t)prop.l2CacheSize;
	ps->flush = dev_alloc(E, ps->flush_bytes);
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemset(ps->flush, 0, ps->flush_bytes));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
}

static void perf_release(struct rank_env *E, struct perf_set *ps)
{
	for (int g = 0; g < ps->plan.groups; g++) {
		for (int s = 0; s < MAX_SOL; s++)
			if (ps->graph[s][g])
				cudaGraphExecDestroy(ps->graph[s][g]);
		for (int i = 0; i < E->io.n_in; i++)
			cudaFree(ps->in[g][i]);
		free(ps->in[g]);
	}
	for (int s = 0; s < E->n_sol; s++)
		for (int k = 0; k < ps->plan.out_sets; k++) {
			for (int i = 0; i < E->io.n_out; i++)
				cudaFree(ps->out[s][k][i]);
			free(ps->out[s][k]);
		}
	for (int i = 0; i < E->io.n_in; i++)
		cudaFree(ps->chk_in[i]);
	for (int i = 0; i < E->io.n_out; i++)
		cudaFree(ps->chk_out[i]);
	cudaFree(ps->sums);
	cudaFree(ps->now_sum);
	cudaFree(ps->modified);
	cudaFree(ps->flush);
	cudaFreeHost((void *)ps->gate);
}

/* graph mode: one graph per group, each a capture of one call on that
 * group's inputs and output set (output set = group in this mode) */
static void perf_capture(struct rank_env *E, struct perf_set *ps, int s)
{
	struct solution *sol = &E->sol[s];
	for (int g = 0; g < ps->plan.groups; g++) {
		cudaGraph_t graph = NULL;
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
		CUDA_OR(E, OUT_RUNTIME_ERROR,
			cudaStreamBeginCapture(E->stream, cudaStreamCaptureModeThreadLocal));
		refresh_ctx(E, sol, ps->in[g], ps->out[s][g]);
		int rc = sol->run(&sol->ctx);
		cudaError_t e = cudaStreamEndCapture(E->stream, &graph);
		if (rc != 0 || e != cudaSuccess || !graph) {
			cudaGetLastError();
			rank_fail(E, OUT_RUNTIME_ERROR, "graph mode: the %s cannot be captured in a "
				  "CUDA graph (%s): work outside ctx->stream, a synchronisation, or "
				  "pkb_run returned %d", sol->role,
				  e != cudaSuccess ? cudaGetErrorString(e) : "no graph", rc);
		}
		e = cudaGraphInstantiate(&ps->graph[s][g], graph, 0);
		cudaGraphDestroy(graph);
		if (e != cudaSuccess)
			rank_fail(E, OUT_RUNTIME_ERROR, "graph mode: cannot instantiate the %s's "
				  "graph: %s", sol->role, cudaGetErrorString(e));
	}
}

struct perf_run {
	int s;               /* index into E->sol */
	double *ms;          /* per timed iteration, this rank */
	double *start_ms;    /* its start, from the timed phase's base event */
	int n;
	struct perf_track track; /* where its calls went (perfplan.h) */
	double host_ms;      /* host wall of all timed blocks */
	double span_ms;      /* block-start event to last end event, per block, summed */
	int gate_expired;    /* timed blocks whose launch gate expired */
};

/* `count` calls of one solution; timed ones get events. Ranks are aligned by
 * a device barrier before every call, outside the events. ev[2 * block]
 * marks where this rank's stream starts the block (past the launch gate):
 * the escape check compares the host clock with the span from there, so
 * that waiting at the first barrier for a rank that released its gate later
 * (an input group to regenerate that is larger on some ranks) is on both
 * clocks, not only the host's. Afterwards the
 * groups it used get fresh content and L2 is left clean, so every block
 * starts from the same state. */
static void perf_block(struct rank_env *E, struct perf_set *ps, struct perf_run *pr, int count,
		       int timed, pkb_dev_comm align, cudaEvent_t *ev, cudaEvent_t base)
{
	cudaEvent_t start = ev[2 * ps->plan.block];
	struct solution *sol = &E->sol[pr->s];
	const struct perf_plan *P = &ps->plan;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaDeviceSynchronize());
	int gated = ps->gate_state.on;
	if (gated && kern_gate(ps->gate_dev, ++ps->gate_gen, GATE_NS, ps->gate_dev + 1,
			       (struct CUstream_st *)E->stream))
		rank_fail(E, OUT_RUNTIME_ERROR, "launch gate failed");
	uint64_t t0 = now_ns();
	if (timed)
		cudaEventRecord(start, E->stream);
	long c0 = pr->track.call;
	for (int k = 0; k < count; k++) {
		int g, o;
		perf_next_call(P, &pr->track, ps->gen, &g, &o);
		if (P->mode == PERF_COLD)
			flush_l2(E, ps);
		if (kern_barrier(align, (struct CUstream_st *)E->stream))
			rank_fail(E, OUT_RUNTIME_ERROR, "alignment barrier launch failed");
		if (timed)
			cudaEventRecord(ev[2 * k], E->stream);
		if (P->mode == PERF_GRAPH)
			CUDA_OR(E, OUT_RUNTIME_ERROR, cudaGraphLaunch(ps->graph[pr->s][g], E->stream));
		else
			sol_call(E, sol, ps->in[g], ps->out[pr->s][o]);
		if (timed)
			cudaEventRecord(ev[2 * k + 1], E->stream);
	}
	if (gated) {
		/* the host clock starts at the release: it sees what the GPU ran */
		__atomic_store_n(&ps->gate[0], ps->gate_gen, __ATOMIC_RELEASE);
		t0 = now_ns();
	}
	wait_stream(E, sol->role);
	if (gated && ps->gate[1]) {
		ps->gate[1] = 0;
		pr->gate_expired += timed;
		perf_gate_expired(&ps->gate_state);
	}
	if (timed) {
		pr->host_ms += (double)(now_ns() - t0) / 1e6;
		float span;
		cudaEventElapsedTime(&span, start, ev[2 * count - 1]);
		pr->span_ms += span;
		for (int k = 0; k < count; k++) {
			float ms, at;
			CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventElapsedTime(&ms, ev[2 * k], ev[2 * k + 1]));
			CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventElapsedTime(&at, base, ev[2 * k]));
			pr->start_ms[pr->n] = at;
			pr->ms[pr->n++] = ms;
		}
	}
	for (long c = c0; c < pr->track.call; c++)
		regen_group(E, ps, perf_group(P, c));
	flush_l2(E, ps);
}

/* After timing: each output set holds the result of its last call, whose
 * group and generation are known. The inputs of that call are drawn again,
 * the reference computes their output, and the two must match. Every rank
 * makes the same reference calls in the same order (they are collective). */
static int perf_recheck(struct rank_env *E, struct perf_set *ps, struct perf_run *pr,
			json_t *outs)
{
	int ok = 1;
	struct solution *ref = &E->sol[0];
	json_t *one = json_array();
	for (int o = 0; o < ps->plan.out_sets; o++) {
		int g, gen;
		if (!perf_recheck_of(&ps->plan, &pr->track, o, &g, &gen))
			continue;
		void *in[PKB_MAX_TENSORS];
		memcpy(in, ps->chk_in, sizeof in);
		gen_inputs(E, perf_trial(g, gen), in);
		poison_outputs(E, ps->chk_out);
		host_barrier(E);
		sol_call(E, ref, in, ps->chk_out);
		wait_stream(E, ref->role);
		copy_outputs(E, ps->chk_out, E->host_ref);
		copy_outputs(E, ps->out[pr->s][o], E->host_out);
		json_array_clear(one);
		if (!compare_outputs(E, one) && ok) {
			ok = 0;
			json_array_extend(outs, one);
		}
	}
	json_decref(one);
	return ok;
}

static void do_perf(struct rank_env *E)
{
	json_t *perf = json_object_get(E->job, "perf");
	int warmup = (int)json_integer_value(json_object_get(perf, "warmup"));
	int iters = (int)json_integer_value(json_object_get(perf, "iters"));
	int block = (int)json_integer_value(json_object_get(perf, "block"));
	int mode = perf_mode_parse(json_string_value(json_object_get(perf, "mode")));
	if (mode < 0)
		mode = PERF_WARM;
	phase(E, PH_TIMING, "preparing %d+%d %s calls per solution", warmup, iters,
	      perf_mode_name((enum perf_mode)mode));
	struct perf_set ps;
	memset(&ps, 0, sizeof ps);
	perf_prepare(E, &ps, (enum perf_mode)mode, warmup, iters, block);
	block = ps.plan.block;
	if (mode == PERF_GRAPH)
		for (int s = 0; s < E->n_sol; s++)
			perf_capture(E, &ps, s);

	pkb_dev_comm align;
	if (make_dev_comm(E, &E->align_pads, &E->align_epochs, &E->align_err, &align) < 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "cannot allocate the alignment barrier: %s",
			  E->symm_err);
	cudaEvent_t *ev = xcalloc((size_t)(2 * block + 1), sizeof *ev), base;
	for (int k = 0; k <= 2 * block; k++)
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventCreate(&ev[k]));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventCreate(&base));

	struct perf_run pr[MAX_SOL];
	memset(pr, 0, sizeof pr);
	for (int s = 0; s < E->n_sol; s++) {
		pr[s].s = s;
		pr[s].ms = xcalloc((size_t)iters + (size_t)block, sizeof(double));
		pr[s].start_ms = xcalloc((size_t)iters + (size_t)block, sizeof(double));
	}
	/* warmup, then timed blocks interleaved ABBA so that drift of clocks or
	 * temperature hits every solution alike */
	phase(E, PH_TIMING, "warmup");
	for (int done = 0; done < warmup; done += block)
		for (int s = 0; s < E->n_sol; s++)
			perf_block(E, &ps, &pr[s], perf_block_calls(done, warmup, block), 0,
				   align, ev, base);
	phase(E, PH_TIMING, "timed calls");
	if (kern_barrier(align, (struct CUstream_st *)E->stream))
		rank_fail(E, OUT_RUNTIME_ERROR, "alignment barrier launch failed");
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventRecord(base, E->stream));
	for (int b = 0, done = 0; done < iters; b++, done += block) {
		int cnt = perf_block_calls(done, iters, block);
		for (int k = 0; k < E->n_sol; k++) {
			int s = perf_abba(b, k, E->n_sol);
			perf_block(E, &ps, &pr[s], cnt, 1, align, ev, base);
		}
	}
	uint32_t aerr = 0, modified = 0;
	cudaMemcpy(&aerr, E->align_err, 4, cudaMemcpyDeviceToHost);
	if (aerr)
		rank_fail(E, OUT_TIMEOUT, "the harness's alignment barrier gave up (a rank stalled)");
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemcpy(&modified, ps.modified, 4, cudaMemcpyDeviceToHost));

	phase(E, PH_TIMING, "re-checking the outputs of timed calls");
	for (int s = 0; s < E->n_sol; s++) {
		struct solution *sol = &E->sol[s];
		check_dev_err(E, sol);
		json_t *outs = json_array();
		/* the reference is not checked against itself, unless it is the
		 * only solution (pkb run) */
		int ok = s == 0 && E->n_sol > 1 ? 1 : perf_recheck(E, &ps, &pr[s], outs);
		json_t *times = json_array(), *starts = json_array();
		for (int i = 0; i < pr[s].n; i++) {
			json_array_append_new(times, json_real(pr[s].ms[i]));
			json_array_append_new(starts, json_real(pr[s].start_ms[i]));
		}
		json_t *rec = json_pack("{s:s,s:s,s:i,s:o,s:o,s:f,s:f,s:i,s:b,s:o}", "kind", "perf",
					"solution", sol->role, "rank", E->rank, "times_ms", times,
					"start_ms", starts, "host_ms", pr[s].host_ms, "span_ms",
					pr[s].span_ms, "groups", ps.plan.groups, "recheck_ok", ok,
					"recheck", outs);
		json_object_set_new(rec, "mode", json_string(perf_mode_name(ps.plan.mode)));
		json_object_set_new(rec, "block", json_integer(block));
		json_object_set_new(rec, "inputs_modified", json_boolean(modified != 0));
		json_object_set_new(rec, "device", json_string(ps.device));
		json_object_set_new(rec, "gate_expired", json_integer(pr[s].gate_expired));
		send_result(E, rec);
		free(pr[s].ms);
		free(pr[s].start_ms);
	}
	for (int k = 0; k <= 2 * block; k++)
		cudaEventDestroy(ev[k]);
	cudaEventDestroy(base);
	free(ev);
	perf_release(E, &ps);
	symm_free(E, &E->align_pads);
	cudaFree(E->align_epochs);
	cudaFree(E->align_err);
}

/* ---- main ----------------------------------------------------------------- */

static void setup(struct rank_env *E)
{
	E->p = problem_find(json_string_value(json_object_get(E->job, "problem")));
	if (!E->p)
		rank_fail(E, OUT_INTERNAL, "unknown problem in the job");
	E->dims.world = E->world;
	E->dims.rank = E->rank;
	E->dims.m = json_integer_value(json_object_get(E->job, "m"));
	E->dims.n = json_integer_value(json_object_get(E->job, "n"));
	E->dims.dtype = (pkb_dtype)dtype_parse(json_string_value(json_object_get(E->job, "dtype")));
	E->dims.trial = (int)json_integer_value(json_object_get(E->job, "trial0"));
	E->seed = (uint64_t)json_integer_value(json_object_get(E->job, "seed"));
	E->device_timeout_ns = (uint64_t)json_integer_value(json_object_get(E->job, "device_timeout_ms"))
			       * 1000000ull;
	if (!E->device_timeout_ns)
		E->device_timeout_ns = 5000000000ull;
	if (problem_describe(E->p, &E->dims, &E->io) < 0)
		rank_fail(E, OUT_INTERNAL, "%s", E->io.err);
	/* --atol/--rtol replace the problem's tolerances on float outputs */
	json_t *atol = json_object_get(E->job, "atol"), *rtol = json_object_get(E->job, "rtol");
	for (int i = 0; i < E->io.n_out; i++) {
		struct pkb_tol *t = &E->io.out[i].tol;
		if (!dtype_is_float(E->io.out[i].dtype) || (!atol && !rtol))
			continue;
		t->exact = 0;
		if (atol)
			t->atol = json_number_value(atol);
		if (rtol)
			t->rtol = json_number_value(rtol);
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
		fprintf(stderr, "pkb __rank: no job on fd %d (this command is internal)\n", E->fd);
		return PKB_EXIT_USAGE;
	}
	json_error_t je;
	E->job = json_loadb(buf, len, 0, &je);
	free(buf);
	if (!E->job)
		rank_fail(E, OUT_INTERNAL, "bad job: %s", je.text);
	E->rank = (int)json_integer_value(json_object_get(E->job, "rank"));
	E->world = (int)json_integer_value(json_object_get(E->job, "world"));
	E->local_rank = (int)json_integer_value(json_object_get(E->job, "local_rank"));
	const char *mode = json_string_value(json_object_get(E->job, "mode"));

	setup(E);
	json_t *sols = json_object_get(E->job, "solutions");
	int need_nccl = 0;
	for (size_t i = 0; i < json_array_size(sols); i++)
		need_nccl |= json_is_true(json_object_get(json_array_get(sols, i), "nccl"));
	if (need_nccl)
		nccl_setup(E);
	alloc_io(E);

	E->n_sol = (int)json_array_size(sols);
	if (E->n_sol < 1 || E->n_sol > MAX_SOL)
		rank_fail(E, OUT_INTERNAL, "a job has 1 or 2 solutions");
	for (int i = 0; i < E->n_sol; i++) {
		json_t *s = json_array_get(sols, (size_t)i);
		load_solution(E, &E->sol[i], json_string_value(json_object_get(s, "role")),
			      json_string_value(json_object_get(s, "so")),
			      json_is_true(json_object_get(s, "nccl")));
	}
	for (int i = 0; i < E->n_sol; i++)
		sol_init(E, &E->sol[i]);

	if (!strcmp(mode, "eval"))
		do_eval(E, &E->sol[0], &E->sol[1]);
	else
		do_run(E, &E->sol[0]);
	if (json_is_object(json_object_get(E->job, "perf")))
		do_perf(E);

	for (int i = E->n_sol - 1; i >= 0; i--)
		sol_fini(E, &E->sol[i]);
	phase(E, PH_FINI, "tearing down");
	if (E->nccl)
		ncclCommDestroy(E->nccl);
	proto_send(E->fd, MSG_DONE, NULL, 0);
	return 0;
}
