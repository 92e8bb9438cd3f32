/*
 * solhost.c -- a solution process (`pkb __sol`, started by its judge through
 * solproc.c): the only process that loads a solution's code (issue 36).
 *
 * It reads MSG_SOL_SETUP on fd 3: the job as the judge tells it (one
 * solution, no seed: the inputs are the judge's to draw) and the CUDA IPC
 * handles of the judge's trial buffers and flag words. It makes its own
 * CUDA context and stream on the judge's GPU, maps those buffers, makes
 * the NCCL communicator if its solution gets one, enters the sandbox
 * (sandbox.h), and only then loads the solution. From then on it does
 * what the judge commands, one MSG_SOL_CMD at a time:
 *
 *   init    pkb_init (its symm_alloc, host_barrier and host_allgather are
 *           all-gathers the judge relays among the ranks)
 *   call    one pkb_run on the trial buffers or on a timing group and
 *           output set, waited for, then "ok"
 *   perf    map the timing's input groups and output sets (graph mode:
 *           capture one call per group)
 *   block   enqueue a block of timed calls, each behind a wait on the
 *           judge's "go" word and followed by a write of its "done" word
 *           (timing.c holds the clock), then "enqueued"; wait; "synced"
 *   fini    pkb_fini, free, exit 0
 *
 * It never sees the seed, the reference's outputs, the comparison or the
 * events, and what it sends are replies the judge checks (solproc.h).
 */
#define _GNU_SOURCE
#include "kernels.h"   /* defines: kern_wait_geq, kern_write_u32 */
#include "phases.h"
#include "problem.h"   /* defines: problem_find, problem_describe, tensor_desc_bytes */
#include "proto.h"     /* defines: proto_send, proto_recv, MSG_SOL_* */
#include "inputs.h"    /* defines: describe_job */
#include "rank_env.h"  /* defines: struct rank_env, struct solution */
#include "rank_link.h" /* defines: phase, rank_fail, nccl_setup, coll_allgather, CUDA_OR */
#include "symm.h"      /* defines: symm_make, make_dev_comm */
#include "sandbox.h"   /* defines: sandbox_rank_enter_with, sandbox_exit_guard */
#include "build.h"     /* defines: build_python_path */
#include "dtype.h"     /* defines: dtype_name */
#include "pybridge.h"  /* defines: pybridge_probe, pybridge_start, pybridge_call */
#include "util.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <jansson.h>
#include <nccl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SOL_MAX_GROUPS 65

struct sol_perf {
	int groups, sets, graph;
	void *in[SOL_MAX_GROUPS][PKB_MAX_TENSORS];
	void *out[SOL_MAX_GROUPS][PKB_MAX_TENSORS];
	cudaGraphExec_t exec[SOL_MAX_GROUPS];
};

static uint32_t *flags;          /* the judge's words: [0] go, [1] done */
static struct sol_perf perf;

/* ---- a Python solution (the triton backend, docs/BACKENDS.md) -------------------
 * Its "object" is the .py file itself (build.c keeps it in the cache under
 * its key). Before the sandbox this process starts the user's Python
 * (pybridge.c) with pkb's python/pkb_triton.py, which imports torch and
 * Triton; after it, that module imports the candidate and calls its
 * solution() for pkb_run. Its symmetric memory, barriers and failures are
 * served here, through these callbacks. */
static struct {
	int on;                  /* this process hosts a Python solution */
	int may_alloc;           /* init and checked calls: symmetric memory may be made */
	struct rank_env *E;
	char *scratch;           /* its own folder: Triton's cache, TMPDIR */
	struct pybridge_probe probe;
} py;

static int is_python(const char *so)
{
	size_t n = strlen(so);
	return n > 3 && !strcmp(so + n - 3, ".py");
}

/* ---- replies ------------------------------------------------------------- */

static void reply(struct rank_env *E, json_t *j)
{
	char *txt = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (proto_send(E->fd, MSG_SOL_REPLY, txt, strlen(txt)) < 0) {
		free(txt);
		_exit(1);   /* the judge is gone: nothing to tell anyone */
	}
	free(txt);
}

static void reply_op(struct rank_env *E, const char *op)
{
	reply(E, json_pack("{s:s}", "op", op));
}

/* ---- services handed to the solution -------------------------------------- */

static struct solution *sol_of(pkb_ctx *ctx)
{
	/* ctx is the first member of struct solution */
	struct solution *s = (struct solution *)ctx;
	if (!ctx || s->env == NULL || s != &s->env->sol[0])
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
		warning("symm_alloc of %zu bytes for the %s failed: %s", bytes, s->role,
			s->env->symm_err);
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

/* what python/pkb_triton.py calls back (ctypes, its function pointers in
 * setup's JSON): symmetric memory (collective; in init and checked calls
 * only: a timed block enqueues behind the judge's gate, and making memory
 * synchronises), the judges' host barrier, a device barrier of every
 * rank's stream (kern_barrier on the solution's own pads) */
static int py_symm_alloc(uint64_t bytes, uint64_t *local, uint64_t *peers, uint64_t *dev)
{
	struct solution *s = &py.E->sol[0];
	if (!py.may_alloc || s->n_symm >= MAX_SYMM) {
		warning("symm_mem.empty of %llu bytes refused: %s", (unsigned long long)bytes,
			py.may_alloc ? "too many buffers" : "symmetric memory is made in the "
			"first (checked) calls, not while timed or captured");
		return -1;
	}
	struct symm_block *b = &s->symm[s->n_symm];
	if (symm_make(py.E, bytes, b) < 0) {
		warning("symm_mem.empty of %llu bytes failed: %s", (unsigned long long)bytes,
			py.E->symm_err);
		return -1;
	}
	s->n_symm++;
	*local = (uint64_t)(uintptr_t)b->local;
	for (int r = 0; r < py.E->world; r++)
		peers[r] = (uint64_t)(uintptr_t)b->peers[r];
	*dev = (uint64_t)(uintptr_t)b->peers_dev;
	return 0;
}

static int py_host_barrier(void)
{
	host_barrier(py.E);
	return 0;
}

static int py_dev_barrier(uint64_t stream)
{
	return kern_barrier(py.E->sol[0].master.dev, (struct CUstream_st *)(uintptr_t)stream);
}

/* a call of pkb_triton, failing the process with the candidate's message
 * (its claim: runtime_error at most, solproc.c) */
static int py_do(const char *fn, json_t *arg)
{
	char *txt = json_dumps(arg, JSON_COMPACT);
	json_decref(arg);
	char err[2048];
	int rc = pybridge_call(fn, txt, err, sizeof err);
	free(txt);
	if (rc < 0)
		rank_fail(py.E, OUT_RUNTIME_ERROR, "the candidate's %s: %s",
			  !strcmp(fn, "call") ? "solution()" : fn, err);
	return 0;
}

static json_t *py_tensors(const pkb_tensor *t, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++) {
		json_t *shape = json_array();
		for (int d = 0; d < t[i].ndim; d++)
			json_array_append_new(shape, json_integer(t[i].shape[d]));
		json_array_append_new(a, json_pack("{s:s,s:I,s:o,s:s}", "name", t[i].name, "ptr",
						   (json_int_t)(uintptr_t)t[i].data, "shape", shape,
						   "dtype", dtype_name(t[i].dtype)));
	}
	return a;
}

static int py_init(pkb_ctx *ctx)
{
	(void)ctx;
	return py_do("init", json_object());
}

static int py_run(pkb_ctx *ctx)
{
	json_t *params = json_array();
	for (int i = 0; i < ctx->n_params; i++)
		json_array_append_new(params, json_pack("{s:s,s:f}", "name", ctx->params[i].name,
							"value", ctx->params[i].value));
	return py_do("call", json_pack("{s:o,s:o,s:o,s:I}", "in", py_tensors(ctx->in, ctx->n_in),
				       "out", py_tensors(ctx->out, ctx->n_out), "params", params,
				       "stream", (json_int_t)(uintptr_t)ctx->stream));
}

static int py_fini(pkb_ctx *ctx)
{
	(void)ctx;
	return py_do("fini", json_object());
}

/* Python started, torch and Triton imported, before the sandbox: its
 * folders into ro[] (NULL-terminated, PYBRIDGE_MAX_DIRS + 2), the scratch
 * folder into rw[0] */
static void py_start(struct rank_env *E, const char **ro, const char **rw)
{
	char err[1024];
	py.on = 1;
	py.E = E;
	char *python = build_python_path(err, sizeof err);
	if (!python || pybridge_probe(python, &py.probe, err, sizeof err) < 0)
		rank_fail(E, OUT_ENV_ERROR, "%s", err);   /* the machine's: no code of the candidate's ran */
	const char *tmp = getenv("TMPDIR");
	py.scratch = xstrfmt("%s/pkb-sol.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(py.scratch))
		rank_fail(E, OUT_ENV_ERROR, "cannot make a scratch folder under '%s'", py.scratch);
	char *shim = xstrfmt("%s/python", pkb_root());
	json_t *setup = json_pack("{s:s,s:i,s:i,s:i,s:b,s:{s:I,s:I,s:I}}", "scratch", py.scratch,
				  "rank", E->rank, "world", E->world, "device", E->device,
				  "triton", 1, "cb",
				  "symm_alloc", (json_int_t)(uintptr_t)py_symm_alloc,
				  "host_barrier", (json_int_t)(uintptr_t)py_host_barrier,
				  "dev_barrier", (json_int_t)(uintptr_t)py_dev_barrier);
	char *txt = json_dumps(setup, JSON_COMPACT);
	json_decref(setup);
	/* pkb's code alone so far: a failure here is the machine's */
	if (pybridge_start(&py.probe, shim, txt, err, sizeof err) < 0)
		rank_fail(E, OUT_ENV_ERROR, "Python for the triton backend: %s", err);
	free(txt);
	int k = 0;
	ro[k++] = shim;   /* kept: the sandbox's rules hold the path */
	for (int i = 0; i < py.probe.n_dirs; i++)
		ro[k++] = py.probe.dirs[i];
	ro[k] = NULL;
	rw[0] = py.scratch;
	rw[1] = NULL;
	free(python);
}

/* ---- the solution --------------------------------------------------------- */

/* the solution's .so: dlopen'd, its ABI and entry points checked */
static void load_object(struct rank_env *E, struct solution *s, const char *so)
{
	/* RTLD_LOCAL: a solution's symbols cannot interpose on the harness's */
	s->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!s->dl)
		rank_fail(E, OUT_LOAD_REFUSED, "cannot load the %s: %s", s->role, dlerror());
	const int *abi = dlsym(s->dl, "pkb_abi_version");
	if (!abi)
		rank_fail(E, OUT_LOAD_REFUSED, "the %s has no pkb_abi_version (missing PKB_SOLUTION;)",
			  s->role);
	if (*abi != PKB_ABI_VERSION)
		rank_fail(E, OUT_LOAD_REFUSED, "the %s was built for ABI %d, the harness has ABI %d",
			  s->role, *abi, PKB_ABI_VERSION);
	*(void **)&s->init = dlsym(s->dl, "pkb_init");
	*(void **)&s->run = dlsym(s->dl, "pkb_run");
	*(void **)&s->fini = dlsym(s->dl, "pkb_fini");
	if (!s->init || !s->run || !s->fini)
		rank_fail(E, OUT_LOAD_REFUSED, "the %s lacks pkb_init, pkb_run or pkb_fini", s->role);
}

static void load_solution(struct rank_env *E, struct solution *s)
{
	const struct wire_solution *w = &E->job.sol[0];
	memset(s, 0, sizeof *s);
	s->env = E;
	s->role = w->role;
	if (py.on) {   /* pkb_triton imports the file: its top level runs now */
		py_do("load", json_pack("{s:s}", "path", w->so));
		s->init = py_init;
		s->run = py_run;
		s->fini = py_fini;
	} else {
		load_object(E, s, w->so);
	}
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
	m->nccl_comm = w->nccl ? (void *)E->nccl : NULL;
	if (make_dev_comm(E, &s->pads, &s->epochs, &s->err, &m->dev) < 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "cannot allocate signal pads for the %s: %s",
			  s->role, E->symm_err);
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

/* Refresh everything the solution can see from this process's copy, so that
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

static void check_dev_err(struct rank_env *E, struct solution *s)
{
	uint32_t err = 0;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemcpy(&err, s->err, 4, cudaMemcpyDeviceToHost));
	if (err & PKB_DEV_ERR_TIMEOUT)
		rank_fail(E, OUT_TIMEOUT, "a device-side wait of the %s gave up after %.1f s "
			  "(a peer never arrived: deadlock or missing signal)", s->role,
			  (double)E->device_timeout_ns / 1e9);
}

static void sol_setup_call(struct rank_env *E, struct solution *s, int fini)
{
	refresh_ctx(E, s, NULL, NULL);
	s->in_setup = 1;
	py.may_alloc = !fini;
	int rc = fini ? s->fini(&s->ctx) : s->init(&s->ctx);
	py.may_alloc = 0;
	s->in_setup = 0;
	if (rc != 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "%s of the %s returned %d",
			  fini ? "pkb_fini" : "pkb_init", s->role, rc);
	wait_stream(E, s->role);
	host_barrier(E);   /* nobody frees memory a peer may still read */
	if (!fini)
		return;
	for (int i = 0; i < s->n_symm; i++)
		symm_free(E, &s->symm[i]);
	symm_free(E, &s->pads);
	cudaFree(s->epochs);
	cudaFree(s->err);
}

static void sol_call(struct rank_env *E, struct solution *s, void *const *in, void *const *out)
{
	refresh_ctx(E, s, in, out);
	int rc = s->run(&s->ctx);
	if (rc != 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "pkb_run of the %s returned %d", s->role, rc);
}

/* ---- the judge's buffers --------------------------------------------------- */

static void *open_handle(struct rank_env *E, json_t *hex)
{
	cudaIpcMemHandle_t h;
	const char *s = json_string_value(hex);
	if (!s || strlen(s) != 2 * sizeof h)
		rank_fail(E, OUT_INTERNAL, "a buffer handle of the judge is malformed");
	for (size_t i = 0; i < sizeof h; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			rank_fail(E, OUT_INTERNAL, "a buffer handle of the judge is malformed");
		((unsigned char *)&h)[i] = (unsigned char)v;
	}
	void *p = NULL;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
	return p;
}

static void open_list(struct rank_env *E, json_t *arr, void **dst, int want)
{
	if (!json_is_array(arr) || (int)json_array_size(arr) != want)
		rank_fail(E, OUT_INTERNAL, "the judge sent %d buffer handles where %d were due",
			  json_is_array(arr) ? (int)json_array_size(arr) : -1, want);
	for (int i = 0; i < want; i++)
		dst[i] = open_handle(E, json_array_get(arr, (size_t)i));
}

/* ---- set-up ---------------------------------------------------------------- */

/* Where this process's start-up went, on its own clock, up to the dlopen
 * (issue 40): every figure pkb's code alone measured, so the judge may file
 * it. Seconds; a step that did not run stays 0. */
static struct {
	uint64_t mark;              /* ns: the end of the last step timed (lap_s) */
	double s[SOL_STEP_COUNT];   /* rank_env.h's SOL_STEPS */
} steps;

static json_t *steps_json(void)
{
	static const char *const names[SOL_STEP_COUNT] = { SOL_STEPS(SOL_STEP_NAME_) };
	json_t *o = json_object();
	for (int i = 0; i < SOL_STEP_COUNT; i++)
		json_object_set_new(o, names[i], json_real(steps.s[i]));
	return o;
}

static void setup(struct rank_env *E, json_t *msg, int early_device)
{
	char err[300];
	json_t *job = json_object_get(msg, "job");
	if (!job || wire_job_unpack(job, &E->job, 1, err, sizeof err) < 0)
		rank_fail(E, OUT_INTERNAL, "bad set-up from the judge: %s", job ? err : "no job");
	E->rank = E->job.rank;
	E->world = E->job.world;
	E->local_rank = E->job.local_rank;
	E->n_sol = 1;
	describe_job(E);

	E->device = E->local_rank;
	if (early_device >= 0 && early_device != E->device)
		rank_fail(E, OUT_INTERNAL, "started for GPU %d, set up for GPU %d", early_device,
			  E->device);
	CUDA_OR(E, OUT_ENV_ERROR, cudaSetDevice(E->device));
	CUDA_OR(E, OUT_ENV_ERROR, cudaFree(0));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamCreateWithFlags(&E->stream, cudaStreamNonBlocking));
	steps.s[SOL_STEP_device] = lap_s(&steps.mark);
	open_list(E, json_object_get(msg, "in"), E->in_dev, E->io.n_in);
	open_list(E, json_object_get(msg, "out"), E->out_dev, E->io.n_out);
	void *f[1];
	open_list(E, json_object_get(msg, "flags"), f, 1);
	flags = f[0];
	steps.s[SOL_STEP_open] = lap_s(&steps.mark);
	if (E->job.sol[0].nccl) {
		nccl_setup(E);
		steps.s[SOL_STEP_nccl] = lap_s(&steps.mark);
	}
	const char *py_ro[PYBRIDGE_MAX_DIRS + 2] = { NULL }, *py_rw[2] = { NULL };
	if (is_python(E->job.sol[0].so)) {
		py_start(E, py_ro, py_rw);
		steps.s[SOL_STEP_python] = lap_s(&steps.mark);
	}
	if (E->job.sandbox) {
		int r = sandbox_rank_enter_with(&E->job, E->fd, py_ro, py_rw, err, sizeof err);
		if (r < 0)
			rank_fail(E, OUT_ENV_ERROR, "cannot enter the sandbox: %s (--no-sandbox runs "
				  "trusted code without it)", err);
		if (r > 0 && E->rank == 0)
			warning("%s", err);
		steps.s[SOL_STEP_sandbox] = lap_s(&steps.mark);
	}
	/* the last word of pkb's code alone: from the dlopen on, what this
	 * process claims is the solution's (solproc.h); its start-up's steps
	 * go with it */
	reply(E, json_pack("{s:s,s:o}", "op", "setup", "steps", steps_json()));
	load_solution(E, &E->sol[0]);
}

/* ---- timing: this process's half (timing.c has the judge's) ----------------- */

static void perf_open(struct rank_env *E, json_t *cmd)
{
	struct solution *s = &E->sol[0];
	json_t *groups = json_object_get(cmd, "groups"), *sets = json_object_get(cmd, "sets");
	perf.graph = json_is_true(json_object_get(cmd, "graph"));
	if (!json_is_array(groups) || !json_is_array(sets) || json_array_size(groups) < 1 ||
	    json_array_size(groups) > SOL_MAX_GROUPS || json_array_size(sets) < 1 ||
	    json_array_size(sets) > SOL_MAX_GROUPS)
		rank_fail(E, OUT_INTERNAL, "bad timing set-up from the judge");
	perf.groups = (int)json_array_size(groups);
	perf.sets = (int)json_array_size(sets);
	for (int g = 0; g < perf.groups; g++)
		open_list(E, json_array_get(groups, (size_t)g), perf.in[g], E->io.n_in);
	for (int o = 0; o < perf.sets; o++)
		open_list(E, json_array_get(sets, (size_t)o), perf.out[o], E->io.n_out);
	if (!perf.graph)
		return;
	/* graph mode: one graph per group, each a capture of one call on that
	 * group's inputs and output set (output set = group in this mode) */
	for (int g = 0; g < perf.groups && g < perf.sets; g++) {
		cudaGraph_t graph = NULL;
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
		CUDA_OR(E, OUT_RUNTIME_ERROR,
			cudaStreamBeginCapture(E->stream, cudaStreamCaptureModeThreadLocal));
		refresh_ctx(E, s, perf.in[g], perf.out[g]);
		int rc = s->run(&s->ctx);
		cudaError_t e = cudaStreamEndCapture(E->stream, &graph);
		if (rc != 0 || e != cudaSuccess || !graph) {
			cudaGetLastError();
			rank_fail(E, OUT_RUNTIME_ERROR, "graph mode: the %s cannot be captured in a "
				  "CUDA graph (%s): work outside ctx->stream, a synchronisation, or "
				  "pkb_run returned %d", s->role,
				  e != cudaSuccess ? cudaGetErrorString(e) : "no graph", rc);
		}
		e = cudaGraphInstantiate(&perf.exec[g], graph, 0);
		cudaGraphDestroy(graph);
		if (e != cudaSuccess)
			rank_fail(E, OUT_RUNTIME_ERROR, "graph mode: cannot instantiate the %s's "
				  "graph: %s", s->role, cudaGetErrorString(e));
	}
}

static int index_in(json_t *v, int n)
{
	if (!json_is_integer(v))
		return -2;
	json_int_t i = json_integer_value(v);
	return i >= -1 && i < n ? (int)i : -2;
}

/* calls [[group, set], ...]: each waits for go >= base + k + 1, runs, and
 * writes done = base + k + 1 */
static void perf_block(struct rank_env *E, json_t *cmd)
{
	struct solution *s = &E->sol[0];
	json_t *calls = json_object_get(cmd, "calls");
	json_t *jb = json_object_get(cmd, "base");
	if (!json_is_array(calls) || !json_is_integer(jb) || !perf.groups)
		rank_fail(E, OUT_INTERNAL, "bad block from the judge");
	uint32_t base = (uint32_t)json_integer_value(jb);
	for (size_t k = 0; k < json_array_size(calls); k++) {
		json_t *c = json_array_get(calls, k);
		int g = index_in(json_array_get(c, 0), perf.groups);
		int o = index_in(json_array_get(c, 1), perf.sets);
		if (g < 0 || o < 0)
			rank_fail(E, OUT_INTERNAL, "bad call in a block from the judge");
		uint32_t v = base + (uint32_t)k + 1;
		if (kern_wait_geq(flags, v, (struct CUstream_st *)E->stream))
			rank_fail(E, OUT_ENV_ERROR, "cuStreamWaitValue32 failed (stream memory "
				  "operations unsupported?)");
		if (perf.graph)
			CUDA_OR(E, OUT_RUNTIME_ERROR, cudaGraphLaunch(perf.exec[g], E->stream));
		else
			sol_call(E, s, perf.in[g], perf.out[o]);
		if (kern_write_u32(flags + 1, v, (struct CUstream_st *)E->stream))
			rank_fail(E, OUT_ENV_ERROR, "cuStreamWriteValue32 failed");
	}
	reply_op(E, "enqueued");
	wait_stream(E, s->role);
	check_dev_err(E, s);
	reply_op(E, "synced");
}

/* ---- the loop -------------------------------------------------------------- */

static json_t *recv_json(struct rank_env *E, enum msg_type want)
{
	enum msg_type t;
	char *buf;
	size_t len;
	if (proto_recv(E->fd, &t, &buf, &len) < 0)
		_exit(1);   /* the judge is gone */
	json_error_t je;
	json_t *j = t == want ? json_loadb(buf, len, 0, &je) : NULL;
	free(len ? buf : NULL);
	if (!j)
		rank_fail(E, OUT_INTERNAL, "a message from the judge that is not the one due");
	return j;
}

/* "fini": the solution's pkb_fini, the communicator's destroy, and the
 * last look for its work */
static void sol_fini(struct rank_env *E, struct solution *s)
{
	/* graphs hold the solution's kernels (NCCL's too): gone before its
	 * pkb_fini and the communicator's destroy */
	for (int g = 0; g < perf.groups; g++)
		if (perf.exec[g])
			cudaGraphExecDestroy(perf.exec[g]);
	sol_setup_call(E, s, 1);
	if (E->nccl)
		E->nccl_api->CommDestroy(E->nccl);
	/* the last look: work a thread of the solution launched after
	 * pkb_fini's own wait (the judge looks too, after the exit, for what
	 * a fault under MPS did to it) */
	cudaError_t e = cudaDeviceSynchronize();
	if (e == cudaSuccess)
		e = cudaGetLastError();
	if (e != cudaSuccess)
		rank_fail(E, OUT_RUNTIME_ERROR, "the %s's work after its pkb_fini: %s", s->role,
			  cudaGetErrorString(e));
	if (py.scratch)
		rm_rf(py.scratch);   /* Triton's cache: nothing outlives the process */
}

int solhost_main(int early_device)
{
	struct rank_env *E = xcalloc(1, sizeof *E);
	E->fd = 3;
	E->rank = -1;
	E->is_sol = 1;
	/* the context first, while the judge makes its own or runs the
	 * candidate's trials (issue 40); a failure here shows again, and is
	 * reported, when set-up makes the same calls */
	steps.mark = now_ns();
	if (early_device >= 0 && cudaSetDevice(early_device) == cudaSuccess)
		cudaFree(0);
	steps.s[SOL_STEP_context] = lap_s(&steps.mark);
	json_t *msg = recv_json(E, MSG_SOL_SETUP);
	steps.s[SOL_STEP_idle] = lap_s(&steps.mark);
	/* an exit() before "fini" is the solution's: a runtime_error naming it */
	sandbox_exit_guard(E->fd, E->phase_now, &E->finishing);
	setup(E, msg, early_device);
	json_decref(msg);
	struct solution *s = &E->sol[0];
	/* what the judge checks of the GPU as this process has it: the SMs it
	 * may use and whether MPS serves it (a candidate could change the MPS
	 * daemon's settings for the clients after it, the reference's) */
	int sms = 0, mps = 0;
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, E->device);
	cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, E->device);
	reply(E, json_pack("{s:s,s:i,s:b}", "op", "ready", "sms", sms, "mps", mps));
	for (;;) {
		json_t *cmd = recv_json(E, MSG_SOL_CMD);
		const char *op = json_string_value(json_object_get(cmd, "op"));
		if (!op)
			rank_fail(E, OUT_INTERNAL, "a command without \"op\" from the judge");
		snprintf(E->phase_now, sizeof E->phase_now, "%s of the %s", op, s->role);
		if (!strcmp(op, "init")) {
			sol_setup_call(E, s, 0);
			reply_op(E, "ok");
		} else if (!strcmp(op, "call")) {
			int g = index_in(json_object_get(cmd, "group"), perf.groups);
			int o = index_in(json_object_get(cmd, "set"), perf.sets);
			if (g < -1 || o < -1)
				rank_fail(E, OUT_INTERNAL, "bad call from the judge");
			py.may_alloc = 1;   /* a Python solution's first calls make its buffers */
			sol_call(E, s, g < 0 ? E->in_dev : perf.in[g], o < 0 ? E->out_dev : perf.out[o]);
			py.may_alloc = 0;
			wait_stream(E, s->role);
			check_dev_err(E, s);
			reply_op(E, "ok");
		} else if (!strcmp(op, "perf")) {
			perf_open(E, cmd);
			reply_op(E, "ok");
		} else if (!strcmp(op, "block")) {
			perf_block(E, cmd);
		} else if (!strcmp(op, "fini") || !strcmp(op, "exit")) {
			if (!strcmp(op, "fini"))
				sol_fini(E, s);
			else if (strcmp(s->role, "reference"))
				/* "exit" is the reference's in eval (rank.c:
				 * sol_stop); a candidate's pkb_fini always runs,
				 * and is watched */
				rank_fail(E, OUT_INTERNAL, "\"exit\" without pkb_fini for the %s",
					  s->role);
			E->finishing = 1;
			reply_op(E, "ok");
			json_decref(cmd);
			fflush(NULL);
			_exit(0);   /* what is left, the exit frees */
		} else {
			rank_fail(E, OUT_INTERNAL, "an unknown command '%.20s' from the judge", op);
		}
		json_decref(cmd);
	}
}
