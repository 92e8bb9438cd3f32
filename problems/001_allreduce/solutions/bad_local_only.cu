/*
 * 001_allreduce, known-bad: skips communication and returns the local input
 * scaled by W -- the "right" answer if every rank held the same data, which
 * the original's constant inputs almost allowed.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "pkb.h"

PKB_SOLUTION;

__global__ void scale(const __nv_bfloat16 *x, __nv_bfloat16 *y, int64_t n, float w)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		y[i] = __float2bfloat16(__bfloat162float(x[i]) * w);
}

extern "C" int pkb_init(pkb_ctx *ctx) { return ctx->in[0].dtype != PKB_BF16; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	scale<<<264, 256, 0, (cudaStream_t)ctx->stream>>>(
		(const __nv_bfloat16 *)ctx->in[0].data, (__nv_bfloat16 *)ctx->out[0].data,
		ctx->in[0].numel, (float)ctx->world);
	return cudaGetLastError() != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
