/*
 * 034_ulysses_all_gather_into_tensor_primitive reference: one ncclAllGather
 * of x into out -- what all_gather_into_tensor does (rank j's rows land at
 * rows [j*M, (j+1)*M), contiguous, so no rearrangement after it).
 *
 * Bytes each rank must receive: (W-1) * M*N*e, 6 MiB at M = N = 1024, bf16,
 * W = 4.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

static int run(pkb_ctx *ctx, cudaStream_t st, ncclComm_t comm)
{
	PKB_CK_NCCL(ctx, ncclAllGather(ctx->in[0].data, ctx->out[0].data, ctx->in[0].bytes,
				       ncclUint8, comm, st));
	return 0;
}

PKB_REF_STATELESS(pkb_ref_init_none, run)
