/*
 * 001_allreduce reference: one ncclAllReduce (sum) from the input into the
 * output, on the harness stream -- what torch.distributed.all_reduce on a
 * clone does in the original.
 *
 * Bytes each rank must receive: 2 (W-1)/W * M*N*e (ring: reduce-scatter,
 * then all-gather). At M = N = 1024, bf16, W = 4 that is 3 MiB; NCCL moves
 * it in about 40 us on 4 H200s, far from the ~8 us of NVLink bandwidth: the
 * latency regime, where custom kernels win.
 */
#include "pkb_ref.cuh"

PKB_SOLUTION;

static int run(pkb_ctx *ctx, cudaStream_t st, ncclComm_t comm)
{
	const pkb_tensor *x = &ctx->in[0];
	ncclDataType_t t;
	PKB_CK(pkb_ref_nccl_type(ctx, x->dtype, &t));
	PKB_CK_NCCL(ctx, ncclAllReduce(x->data, ctx->out[0].data, (size_t)x->numel, t, ncclSum,
				       comm, st));
	return 0;
}

PKB_REF_STATELESS(pkb_ref_init_nccl, run)
