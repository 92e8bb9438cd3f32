/*
 * 017_rope_allgather, known-bad: no communication. The rank embeds its own
 * q and k and writes them at every rank's positions, as if all ranks held
 * the same shard; only the 1/W of the output that is its own is right.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include "pkb.h"

PKB_SOLUTION;

__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(float v) { return v; }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ __nv_bfloat16 from_f(float v) { return __float2bfloat16(v); }
template <> __device__ __forceinline__ __half from_f(float v) { return __float2half(v); }
template <> __device__ __forceinline__ float from_f(float v) { return v; }

/* one thread per output element; the source position ignores the rank */
template <typename T>
__global__ void rope_replicated(const T *q, const T *k, const T *cs, const T *sn, T *qo, T *ko,
				int64_t s, int world, int64_t out_len)
{
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < 2 * out_len;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int t = o >= out_len;
		int64_t oi = o - t * out_len;
		int64_t row = oi / 512, e = oi % 512;
		int64_t ws = s * world, b = row / ws, sp = (row % ws) % s;
		int64_t i = (b * s + sp) * 512 + e;
		const T *x = t ? k : q;
		int d = (int)(e & 63);
		int64_t c = (b * s + sp) * 64 + d;
		float rv = d < 32 ? -to_f(x[i + 32]) : to_f(x[i - 32]);
		float v = to_f(from_f<T>(to_f(x[i]) * to_f(cs[c]))) +
			  to_f(from_f<T>(rv * to_f(sn[c])));
		(t ? ko : qo)[oi] = from_f<T>(v);
	}
}

template <typename T>
static void launch(pkb_ctx *ctx)
{
	int64_t out_len = ctx->out[0].numel;
	int64_t blocks = (2 * out_len + 255) / 256;
	rope_replicated<T><<<(unsigned)(blocks > 4096 ? 4096 : blocks), 256, 0,
			     (cudaStream_t)ctx->stream>>>(
		(const T *)ctx->in[0].data, (const T *)ctx->in[1].data,
		(const T *)ctx->in[2].data, (const T *)ctx->in[3].data,
		(T *)ctx->out[0].data, (T *)ctx->out[1].data, ctx->in[0].shape[1], ctx->world,
		out_len);
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
