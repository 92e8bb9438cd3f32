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
#include <nccl.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	const pkb_tensor *x = &ctx->in[0];
	ncclResult_t r = ncclAllGather(x->data, ctx->out[0].data, x->bytes, ncclUint8,
				       (ncclComm_t)ctx->nccl_comm, (cudaStream_t)ctx->stream);
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "ncclAllGather: %s", ncclGetErrorString(r));
		return 1;
	}
	return 0;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
