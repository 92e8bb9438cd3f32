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
#include "pkb_device.cuh"

PKB_SOLUTION;

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
		float rv = d < 32 ? -pkb_to_float(x[i + 32]) : pkb_to_float(x[i - 32]);
		float v = pkb_to_float(pkb_from_float<T>(pkb_to_float(x[i]) * pkb_to_float(cs[c]))) +
			  pkb_to_float(pkb_from_float<T>(rv * pkb_to_float(sn[c])));
		(t ? ko : qo)[oi] = pkb_from_float<T>(v);
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
