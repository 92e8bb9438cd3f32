/*
 * 045_reducescatter_fused_rmsnorm, known-bad: no communication. Each rank
 * normalises its own share of its own chunk (rs_input_1d[r*chunk ...]) as if
 * it were the reduce-scatter result; the other W-1 ranks' data is missing.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

/* a block per row, one thread per column (hidden <= 128) */
template <typename T>
__global__ void local_rmsnorm(const T *x, const T *g, T *y, int hidden, float eps)
{
	__shared__ float ss;
	int j = threadIdx.x;
	const T *row = x + (int64_t)blockIdx.x * hidden;
	if (j == 0)
		ss = 0.f;
	__syncthreads();
	float v = j < hidden ? pkb_to_float(row[j]) : 0.f;
	atomicAdd(&ss, v * v);
	__syncthreads();
	if (j < hidden)
		y[(int64_t)blockIdx.x * hidden + j] =
			pkb_from_float<T>(v * rsqrtf(ss / (float)hidden + eps) * pkb_to_float(g[j]));
}

template <typename T>
static void launch(pkb_ctx *ctx)
{
	int64_t rows = ctx->out[0].shape[0];
	int hidden = (int)ctx->out[0].shape[1];
	const T *mine = (const T *)ctx->in[0].data + (int64_t)ctx->rank * rows * hidden;
	local_rmsnorm<T><<<(unsigned)rows, 128, 0, (cudaStream_t)ctx->stream>>>(
		mine, (const T *)ctx->in[1].data, (T *)ctx->out[0].data, hidden,
		(float)pkb_param_get(ctx, "eps", 1e-5));
}

extern "C" int pkb_init(pkb_ctx *ctx) { return ctx->out[0].shape[1] > 128; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	switch (ctx->in[0].dtype) {
	case PKB_BF16: launch<__nv_bfloat16>(ctx); break;
	case PKB_FP16: launch<__half>(ctx); break;
	case PKB_FP32: launch<float>(ctx); break;
	default: return 1;
	}
	return cudaGetLastError() != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
