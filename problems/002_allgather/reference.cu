/*
 * 002_allgather reference: one ncclAllGather from the input into the
 * (W, M, N) output, on the harness stream -- what
 * torch.distributed.all_gather_into_tensor does in the original.
 *
 * out[j] = x_j for j = 0 .. W-1, on every rank. Pure data movement, so the
 * call counts bytes (ncclUint8): NCCL moves bytes whatever the dtype.
 *
 * Bytes each rank must receive: (W-1) * M*N*e (the ring forwards each slab
 * W-1 times), 6 MiB at M = N = 1024, bf16, W = 4.
 */
#include "pkb_ref.cuh"

PKB_SOLUTION;

static int run(pkb_ctx *ctx, cudaStream_t st, ncclComm_t comm)
{
	const pkb_tensor *x = &ctx->in[0];
	ncclResult_t r = ncclAllGather(x->data, ctx->out[0].data, x->bytes, ncclUint8, comm, st);
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "ncclAllGather: %s", ncclGetErrorString(r));
		return 1;
	}
	return 0;
}

PKB_REF_STATELESS(pkb_ref_init_none, run)
