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
#include <nccl.h>
#include "pkb.h"

PKB_SOLUTION;

static ncclDataType_t nccl_type(pkb_dtype t)
{
	switch (t) {
	case PKB_BF16: return ncclBfloat16;
	case PKB_FP16: return ncclFloat16;
	case PKB_FP32: return ncclFloat32;
	case PKB_FP64: return ncclFloat64;
	case PKB_I8: return ncclInt8;
	case PKB_U8: return ncclUint8;
	case PKB_I32: return ncclInt32;
	case PKB_I64: return ncclInt64;
	default: return (ncclDataType_t)-1;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if ((int)nccl_type(ctx->in[0].dtype) < 0) {
		ctx->svc->log(ctx, "007 reference: unsupported dtype %d", ctx->in[0].dtype);
		return 1;
	}
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	const pkb_tensor *y = &ctx->out[0];
	ncclResult_t r = ncclReduceScatter(ctx->in[0].data, y->data, (size_t)y->numel,
					   nccl_type(y->dtype), ncclSum,
					   (ncclComm_t)ctx->nccl_comm, (cudaStream_t)ctx->stream);
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "ncclReduceScatter: %s", ncclGetErrorString(r));
		return 1;
	}
	return 0;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
