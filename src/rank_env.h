/*
 * rank_env.h -- the state one rank process shares between its parts
 * (issue 22): rank.c is the flow (the parent link, solutions, inputs and
 * outputs, eval and run), symm.c the symmetric memory over CUDA IPC,
 * timing.c the timing engine of docs/TIMING.md. Host C linked with cudart,
 * as rank.c always was; none of it is in the unit tests (they have no GPU):
 * the timing engine's bookkeeping is in perfplan.c for that.
 */
#ifndef PKB_RANK_ENV_H
#define PKB_RANK_ENV_H

#include "exitcode.h"  /* defines: enum pkb_outcome */
#include "ncclso.h"    /* defines: struct nccl_api */
#include "phases.h"    /* defines: enum phase_kind */
#include "problem.h"   /* defines: struct pkb_problem, struct pkb_io, pkb_ctx */
#include "util.h"      /* defines: noreturn */
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
	struct solproc *proc;         /* the judge: the solution process now running */
	uint32_t *flags;              /* the judge: the go and done words it shares */
	struct perf_set *perf;        /* the judge: the timing engine's state */
	const struct nccl_api *nccl_api; /* a solution process with a communicator */
};

/* a CUDA or NCCL call whose failure ends the rank with its category */
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
			  #call, (E)->nccl_api->GetErrorString(r_), \
			  (E)->nccl_api->GetLastError(NULL)); \
} while (0)

/* ---- rank.c: talking to the parent, solutions, inputs and outputs ---- */

void phase(struct rank_env *E, enum phase_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* MSG_FAIL with the category, then exit: the parent decides the outcome */
noreturn void rank_fail(struct rank_env *E, enum pkb_outcome cat, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void send_result(struct rank_env *E, json_t *rec);     /* takes rec */
int coll_allgather(struct rank_env *E, const void *send, void *recv, size_t bytes);
void host_barrier(struct rank_env *E);
void wait_stream(struct rank_env *E, const char *who);
/* the NCCL communicator of the ranks (the solution process's, when its
 * solution gets one) */
void nccl_setup(struct rank_env *E);
/* the judge: send `cmd` (taken; NULL sends nothing) to the solution process
 * and wait for the reply `op`, relaying its all-gathers; its failure, death
 * or lie ends the rank with the verdict solproc.h gives it */
void sol_command(struct rank_env *E, json_t *cmd, const char *op);
/* the judge: CUDA IPC handles of n buffers, as a JSON array of hex strings */
json_t *ipc_handles(struct rank_env *E, void *const *bufs, int n);
void gen_inputs(struct rank_env *E, int trial, void *const *bufs);
/* the same without waiting: host-drawn tensors go through `staging`
 * (pinned, allocated on first use, one per tensor), which the caller does
 * not reuse before the stream has passed the copy */
void gen_inputs_async(struct rank_env *E, int trial, void *const *bufs, void **staging);
void copy_outputs(struct rank_env *E, void *const *dev, void **host);
/* E->host_out against E->host_ref; the mismatches appended to outs */
int compare_outputs(struct rank_env *E, json_t *outs);
/* the same into `scratch`; the records of the first comparison that fails
 * (*ok still 1) go to outs, and *ok becomes 0 */
void compare_keep_first(struct rank_env *E, json_t *scratch, json_t *outs, int *ok);
/* the problem, dims, io and device timeout of E->job (judge and solution
 * process alike) */
void describe_job(struct rank_env *E);

/* ---- symm.c: symmetric memory (CUDA IPC over NVLink) ---- */

/* one buffer of `bytes` on every rank, each mapped into every other; -1
 * with E->symm_err saying why. Collective: every rank calls it. */
int symm_make(struct rank_env *E, size_t bytes, struct symm_block *b);
void symm_free(struct rank_env *E, struct symm_block *b);
/* a device barrier's signal pads, epochs and error word, as a pkb_dev_comm */
int make_dev_comm(struct rank_env *E, struct symm_block *pads, uint32_t **epochs,
		  uint32_t **err, pkb_dev_comm *c);

/* ---- timing.c: the timing engine ---- */

/* the judge: set up the timing (perf_begin), time solution s in its process
 * (perf_solution, before its fini), send every solution's perf record
 * with the candidate's re-check (perf_end) */
void perf_begin(struct rank_env *E);
void perf_solution(struct rank_env *E, int s);
void perf_end(struct rank_env *E);

#endif
