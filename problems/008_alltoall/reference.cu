/*
 * 008_alltoall reference: grouped ncclSend/ncclRecv with every peer (slab d
 * of the input to rank d, slab s of the output from rank s) -- what
 * torch.distributed.all_to_all_single does with equal splits, the slab a rank
 * keeps included (a send/recv to itself: one NCCL launch for the whole call):
 * pkb_ref.cuh's pkb_ref_all_to_all, which other references run too.
 *
 * out_r[s] = x_s[r] for s = 0 .. W-1.
 *
 * Bytes each rank must receive: (W-1) * M*N*e, 6 MiB at M = N = 1024, bf16,
 * W = 4.
 */
#include "pkb_ref.cuh"   /* pkb_ref_all_to_all, PKB_REF_STATELESS */

PKB_SOLUTION;

/* pkb_ref_all_to_all takes the stream and communicator from ctx */
static int run(pkb_ctx *ctx, cudaStream_t, ncclComm_t)
{
	return pkb_ref_all_to_all(ctx, ctx->in[0].data, ctx->out[0].data,
				  ctx->in[0].bytes / ctx->world);
}

PKB_REF_STATELESS(pkb_ref_init_none, run)
