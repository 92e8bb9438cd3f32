/*
 * 007_reducescatter reference: one ncclReduceScatter (sum) from the
 * (W*M, N) input into the (M, N) output, on the harness stream -- what
 * torch.distributed.reduce_scatter_tensor does in the original.
 *
 * out_r = sum_p x_p[r*M : (r+1)*M] (chunk r of every rank's input).
 *
 * Bytes each rank must receive: (W-1) * M*N*e, 6 MiB at M = N = 1024, bf16,
 * W = 4.
 */
#include "pkb_ref.cuh"

PKB_SOLUTION;

static int run(pkb_ctx *ctx, cudaStream_t st, ncclComm_t comm)
{
	const pkb_tensor *y = &ctx->out[0];
	ncclDataType_t t;
	PKB_CK(pkb_ref_nccl_type(ctx, y->dtype, &t));
	PKB_CK_NCCL(ctx, ncclReduceScatter(ctx->in[0].data, y->data, (size_t)y->numel, t, ncclSum,
					   comm, st));
	return 0;
}

PKB_REF_STATELESS(pkb_ref_init_nccl, run)
