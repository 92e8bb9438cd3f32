/*
 * 019_blocked_fp8_quantize, known-bad: quantizes its own block correctly
 * but skips the all-gather, writing its own codes and scales into every
 * rank's slot. Only slot `rank` is right.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include "pkb.h"

PKB_SOLUTION;

/* one warp per 128-element block, 4 elements a lane */
__global__ void quant_everywhere(const __nv_bfloat16 *x, uint8_t *y, float *s,
				 int64_t nblocks, int world)
{
	int lane = threadIdx.x & 31;
	int64_t b = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
	if (b >= nblocks)
		return;
	int64_t i = b * 128 + lane * 4;
	float f[4], amax = 0.f;
	for (int k = 0; k < 4; k++) {
		f[k] = __bfloat162float(x[i + k]);
		amax = fmaxf(amax, fabsf(f[k]));
	}
	for (int o = 16; o > 0; o >>= 1)
		amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
	float sc = amax / 448.0f, div = sc == 0.f ? 1.f : sc;
	for (int j = 0; j < world; j++) {
		for (int k = 0; k < 4; k++)
			y[j * nblocks * 128 + i + k] =
				__nv_cvt_float_to_fp8(f[k] / div, __NV_SATFINITE, __NV_E4M3);
		if (lane == 0)
			s[j * nblocks + b] = sc;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx) { return ctx->in[0].dtype != PKB_BF16; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	int64_t nblocks = ctx->in[0].numel / 128;
	quant_everywhere<<<(unsigned)((nblocks + 7) / 8), 256, 0, (cudaStream_t)ctx->stream>>>(
		(const __nv_bfloat16 *)ctx->in[0].data, (uint8_t *)ctx->out[0].data,
		(float *)ctx->out[1].data, nblocks, ctx->world);
	return cudaGetLastError() != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
