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
	default: return (ncclDataType_t)-1;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if ((int)nccl_type(ctx->in[0].dtype) < 0) {
		ctx->svc->log(ctx, "001 reference: unsupported dtype %d", ctx->in[0].dtype);
		return 1;
	}
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	const pkb_tensor *x = &ctx->in[0];
	ncclResult_t r = ncclAllReduce(x->data, ctx->out[0].data, (size_t)x->numel,
				       nccl_type(x->dtype), ncclSum,
				       (ncclComm_t)ctx->nccl_comm, (cudaStream_t)ctx->stream);
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "ncclAllReduce: %s", ncclGetErrorString(r));
		return 1;
	}
	return 0;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
