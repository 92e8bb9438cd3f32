/*
 * 019_blocked_fp8_quantize, known-bad: the ok_stage_pull exchange, but the
 * codes are rounded toward zero instead of to nearest even -- what a
 * hand-written fp32 -> e4m3 converter that just drops mantissa bits does.
 * Every code is within one step of the right one, so each element passes
 * its bound; about half of them are one step low in magnitude, and the
 * whole-output l2 bound (2^-7; this gives ~0.06) fails.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 512
#define MAX_BLOCKS 256
#define QBLOCK 128

struct state {
	pkb_symm stage;     /* M*N code bytes, then M*N/128 fp32 scales */
};

/* RN code, stepped one code toward zero where it rounded up in magnitude
 * (e4m3 magnitudes grow with the code, 0x00 .. 0x7e) */
__device__ __forceinline__ uint8_t fp8_round_to_zero(float v)
{
	uint8_t c = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
	__half back = __half(__nv_cvt_fp8_to_halfraw(c, __NV_E4M3));
	if (fabsf(__half2float(back)) > fabsf(v) && (c & 0x7f))
		c = (uint8_t)((c & 0x80) | ((c & 0x7f) - 1));
	return c;
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
quant_gather(pkb_dev_comm comm, const T *x, uint8_t *y_out, float *s_out,
	     uint8_t *const *stage, int64_t nblocks)
{
	int64_t per = (nblocks + gridDim.x - 1) / gridDim.x;
	int64_t g0 = min(nblocks, per * blockIdx.x), g1 = min(nblocks, g0 + per);
	int64_t mn = nblocks * QBLOCK;
	uint8_t *my_y = stage[comm.rank];
	float *my_s = (float *)(my_y + mn);
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;

	for (int64_t g = g0 + warp; g < g1; g += nwarps) {
		int64_t i = g * QBLOCK + lane * 4;
		float f[4], amax = 0.f;
		for (int k = 0; k < 4; k++) {
			f[k] = pkb_to_float(x[i + k]);
			amax = fmaxf(amax, fabsf(f[k]));
		}
		for (int o = 16; o > 0; o >>= 1)
			amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
		float sc = amax / 448.0f;
		float div = sc == 0.f ? 1.f : sc;
		uint32_t packed = 0;
		for (int k = 0; k < 4; k++)
			packed |= (uint32_t)fp8_round_to_zero(f[k] / div) << (8 * k);
		*(uint32_t *)(my_y + i) = packed;
		if (lane == 0)
			my_s[g] = sc;
	}

	if (!pkb_barrier_block(comm, blockIdx.x))
		return;

	for (int j = 0; j < comm.world; j++) {
		/* 128 code bytes per quantization block = 8 int4 */
		const int4 *src = (const int4 *)(stage[j] + g0 * QBLOCK);
		int4 *dst = (int4 *)(y_out + (int64_t)j * mn + g0 * QBLOCK);
		for (int64_t v = threadIdx.x; v < (g1 - g0) * (QBLOCK / 16); v += blockDim.x)
			dst[v] = src[v];
		const float *ss = (const float *)(stage[j] + mn);
		for (int64_t g = g0 + threadIdx.x; g < g1; g += blockDim.x)
			s_out[(int64_t)j * nblocks + g] = ss[g];
	}

	pkb_barrier_block(comm, blockIdx.x);   /* peers are done reading ours */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if ((int)pkb_param_get(ctx, "block_size", QBLOCK) != QBLOCK)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int64_t mn = ctx->in[0].numel;
	return ctx->svc->symm_alloc(ctx, (size_t)(mn + mn / QBLOCK * 4), &s->stage);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	int64_t nblocks = ctx->in[0].numel / QBLOCK;
	int blocks = (int)((nblocks + 63) / 64);
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
	quant_gather<T><<<blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (uint8_t *)ctx->out[0].data,
		(float *)ctx->out[1].data, (uint8_t *const *)s->stage.peers_dev, nblocks);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: launch<__nv_bfloat16>(ctx, s); break;
	case PKB_FP16: launch<__half>(ctx, s); break;
	case PKB_FP32: launch<float>(ctx, s); break;
	default: return 1;
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	free(ctx->user);
	return 0;
}
