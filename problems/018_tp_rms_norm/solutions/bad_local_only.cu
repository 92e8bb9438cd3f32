/*
 * 018_tp_rms_norm, known-bad: no communication. Each rank normalises its
 * slice by the RMS of its own N columns, as if the slice were the whole
 * hidden dimension. The local mean square deviates from the global one by
 * about 1/sqrt(N) (3% at N = 1024), so rows come out scaled by ~1.5% on
 * average and several % at worst -- far outside two bf16 roundings.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

/* a warp per row */
template <typename T>
__global__ void local_rmsnorm(const T *x, const T *w, T *out, int64_t m, int64_t n, float eps)
{
	int lane = threadIdx.x & 31;
	int64_t i = blockIdx.x * (int64_t)(blockDim.x / 32) + (threadIdx.x >> 5);
	if (i >= m)
		return;
	float acc = 0.f;
	for (int64_t j = lane; j < n; j += 32) {
		float v = pkb_to_float(x[i * n + j]);
		acc += v * v;
	}
	for (int o = 16; o > 0; o >>= 1)
		acc += __shfl_xor_sync(0xffffffffu, acc, o);
	float rs = rsqrtf(acc / (float)n + eps);
	for (int64_t j = lane; j < n; j += 32)
		out[i * n + j] = pkb_from_float<T>(pkb_to_float(w[j]) * pkb_to_float(pkb_from_float<T>(pkb_to_float(x[i * n + j]) * rs)));
}

template <typename T>
static void launch(pkb_ctx *ctx)
{
	int64_t m = ctx->in[0].shape[0], n = ctx->in[0].shape[1];
	local_rmsnorm<T><<<(unsigned)((m + 7) / 8), 256, 0, (cudaStream_t)ctx->stream>>>(
		(const T *)ctx->in[0].data, (const T *)ctx->in[1].data, (T *)ctx->out[0].data,
		m, n, (float)pkb_param_get(ctx, "variance_epsilon", 1e-5));
}

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
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
