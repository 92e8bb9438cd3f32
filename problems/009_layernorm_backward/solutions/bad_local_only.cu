/*
 * 009_layernorm_backward, known-bad: no communication. Each rank returns the
 * column sums of its own rows only -- the answer if this rank held all the
 * rows, off by the other W-1 ranks' contributions.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

/* one thread per column: slow, and wrong anyway */
template <typename T>
__global__ void local_colsums(const T *xh, const T *dy, T *dg, T *db, int64_t m, int64_t n)
{
	int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (c >= n)
		return;
	float g = 0.f, b = 0.f;
	for (int64_t r = 0; r < m; r++) {
		float d = pkb_to_float(dy[r * n + c]);
		g += pkb_to_float(pkb_from_float<T>(d * pkb_to_float(xh[r * n + c])));
		b += d;
	}
	dg[c] = pkb_from_float<T>(g);
	db[c] = pkb_from_float<T>(b);
}

template <typename T>
static void launch(pkb_ctx *ctx)
{
	int64_t m = ctx->in[0].shape[0], n = ctx->in[0].shape[1];
	local_colsums<T><<<(unsigned)((n + 127) / 128), 128, 0, (cudaStream_t)ctx->stream>>>(
		(const T *)ctx->in[0].data, (const T *)ctx->in[1].data,
		(T *)ctx->out[0].data, (T *)ctx->out[1].data, m, n);
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
