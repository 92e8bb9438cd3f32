/*
 * 020_blocked_fp8_dequantize, known-bad: dequantizes correctly but skips
 * the all-to-all: out[j] = this rank's own chunk j instead of rank j's
 * chunk r. Only out[rank] is right.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "pkb.h"

PKB_SOLUTION;

__global__ void dequant_local(const __nv_bfloat16 *y, const __nv_bfloat16 *s, float *out,
			      int64_t n, int bs)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		out[i] = __bfloat162float(y[i]) * __bfloat162float(s[i / bs]);
}

extern "C" int pkb_init(pkb_ctx *ctx) { return ctx->in[0].dtype != PKB_BF16; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	int bs = (int)pkb_param_get(ctx, "block_size", 128);
	dequant_local<<<264, 256, 0, (cudaStream_t)ctx->stream>>>(
		(const __nv_bfloat16 *)ctx->in[0].data, (const __nv_bfloat16 *)ctx->in[1].data,
		(float *)ctx->out[0].data, ctx->in[0].numel, bs);
	return cudaGetLastError() != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
