/*
 * 004_reduce reference: ncclReduce (sum) of every rank's input into the
 * root's output, on the harness stream, plus a copy of the input into the
 * output on the other ranks -- what the original's clone +
 * torch.distributed.reduce(dst) leaves behind (NCCL writes the receive buffer
 * on the root only, so the non-root clones keep their input).
 *
 * root (dst, 0): out = sum_r x_r; rank r != dst: out = x_r.
 *
 * Bytes: the root receives M*N*e (ring/chain toward the root, every rank
 * receives and forwards one copy), 2 MiB at M = N = 1024, bf16.
 */
#include "pkb_ref.cuh"

PKB_SOLUTION;

static int run(pkb_ctx *ctx, cudaStream_t st, ncclComm_t comm)
{
	const pkb_tensor *x = &ctx->in[0];
	int dst = (int)pkb_param_get(ctx, "dst", 0);
	ncclDataType_t t;
	PKB_CK(pkb_ref_nccl_type(ctx, x->dtype, &t));
	PKB_CK_NCCL(ctx, ncclReduce(x->data, ctx->out[0].data, (size_t)x->numel, t, ncclSum, dst,
				    comm, st));
	if (ctx->rank != dst)
		PKB_CK_CUDA(ctx, cudaMemcpyAsync(ctx->out[0].data, x->data, x->bytes,
						 cudaMemcpyDeviceToDevice, st));
	return 0;
}

PKB_REF_STATELESS(pkb_ref_init_nccl, run)
