/*
 * rank_link.h -- what every part of a rank process stands on (issue 39):
 * its links (to the parent: phases, results, all-gathers; the judge's to its
 * solution process: commands and IPC handles), the wait for its stream, the
 * NCCL communicator, and its one way to fail: rank_fail sends MSG_FAIL with
 * the category and exits, and the parent decides the outcome (rank.c's
 * header says why). rank.c, timing.c, symm.c, inputs.c, judgecmp.c and
 * solhost.c call down into it; it calls none of them.
 */
#ifndef PKB_RANK_LINK_H
#define PKB_RANK_LINK_H

#include "exitcode.h"  /* defines: enum pkb_outcome */
#include "phases.h"    /* defines: enum phase_kind */
#include "rank_env.h"  /* defines: struct rank_env */
#include "util.h"      /* defines: noreturn */

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <stddef.h>

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
 * or lie ends the rank with the verdict solproc.h gives it. sol_wait returns
 * the reply (the caller's), sol_command drops it. */
json_t *sol_wait(struct rank_env *E, json_t *cmd, const char *op);
void sol_command(struct rank_env *E, json_t *cmd, const char *op);
/* the judge: CUDA IPC handles of n buffers, as a JSON array of hex strings */
json_t *ipc_handles(struct rank_env *E, void *const *bufs, int n);

#endif
