/*
 * rank_env.h -- the state one rank process shares between its parts
 * (issue 22), and nothing else: the parts have headers of their own, and
 * call one way (issue 39): rank.c (the judge's flow: solutions, trials,
 * eval and run) -> timing.c (the timing engine of docs/TIMING.md) ->
 * inputs.c (the job described, inputs drawn), judgecmp.c (outputs
 * compared), symm.c (symmetric memory over CUDA IPC) -> rank_link.c (the
 * links, the stream wait, rank_fail). solhost.c, the solution process,
 * stands on inputs.c, symm.c and rank_link.c. Host C linked with cudart;
 * none of it is in the unit tests (they have no GPU): the timing engine's
 * bookkeeping is in perfplan.c for that.
 */
#ifndef PKB_RANK_ENV_H
#define PKB_RANK_ENV_H

#include "ncclso.h"    /* defines: struct nccl_api */
#include "problem.h"   /* defines: struct pkb_problem, struct pkb_io, pkb_ctx */
#include "wire.h"      /* defines: struct wire_job */

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <nccl.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_SOL 2
#define MAX_SYMM 64

struct rank_env;
struct solproc;
struct perf_set;

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

/* The steps of its start-up a solution process times on its own clock and
 * sends in its "setup" reply, before any solution code runs (solhost.c),
 * and which the judge files (rank.c:own_steps): one list, X(name) each. */
#define SOL_STEPS(X) X(context) X(idle) X(device) X(open) X(nccl) X(python) X(sandbox)
#define SOL_STEP_ENUM_(name) SOL_STEP_##name,
enum sol_step { SOL_STEPS(SOL_STEP_ENUM_) SOL_STEP_COUNT };
#define SOL_STEP_NAME_(name) #name,

/* The judge's clock over one solution process's life (issue 40): where a
 * launch's load and fini phases go. Seconds of each step; mark in ns, the
 * end of the last step timed (its spawn first; lap_s). */
struct proc_steps {
	uint64_t mark;
	double before_setup;  /* spawned to its set-up sent: the judge's own start */
	double setup;         /* set-up sent to its "setup" reply: context, mappings, sandbox */
	double dlopen;        /* "setup" to "ready": the solution loaded */
	double init;          /* pkb_init */
	double fini;          /* pkb_fini and its last checks */
	double exit;          /* its last reply to its exit, reaped */
	json_t *own;          /* its own split of its set-up, before any solution code */
};

struct rank_env {
	int fd, rank, world, local_rank, device;
	struct wire_job job;          /* what the parent sent (wire.h) */
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
	char phase_now[256];          /* the last phase announced, for the exit hook */
	int finishing;                /* the harness's own return from rank_main */
	int is_sol;                   /* a solution process (solhost.c), not a judge */
	int sms;                      /* the judge: the SMs its context may use */
	char gpu[96];                 /* its GPU's name, as CUDA gives it */
	struct solproc *proc;         /* the judge: the solution process now running */
	struct proc_steps steps[MAX_SOL]; /* the judge: each solution process's steps */
	uint32_t *flags;              /* the judge: the go and done words it shares */
	struct perf_set *perf;        /* the judge: the timing engine's state */
	const struct nccl_api *nccl_api; /* a solution process with a communicator */
};

#endif
