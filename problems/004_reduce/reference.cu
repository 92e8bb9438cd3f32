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
#include <cuda_runtime.h>
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
		ctx->svc->log(ctx, "004 reference: unsupported dtype %d", ctx->in[0].dtype);
		return 1;
	}
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	const pkb_tensor *x = &ctx->in[0];
	int dst = (int)pkb_param_get(ctx, "dst", 0);
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclResult_t r = ncclReduce(x->data, ctx->out[0].data, (size_t)x->numel,
				    nccl_type(x->dtype), ncclSum, dst,
				    (ncclComm_t)ctx->nccl_comm, st);
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "ncclReduce: %s", ncclGetErrorString(r));
		return 1;
	}
	if (ctx->rank != dst &&
	    cudaMemcpyAsync(ctx->out[0].data, x->data, x->bytes, cudaMemcpyDeviceToDevice,
			    st) != cudaSuccess)
		return 1;
	return 0;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
