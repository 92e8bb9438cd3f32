/*
 * 046_gemv_decode, known-bad: computes its own vocabulary slice correctly
 * and writes it into its columns of logits, but skips the all-gather and
 * zero-fills the other W-1 slices.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "pkb.h"

PKB_SOLUTION;

/* one thread per (token, output column) */
__global__ void gemv_own_slice(const __nv_bfloat16 *h, const __nv_bfloat16 *w,
			       const __nv_bfloat16 *bias, __nv_bfloat16 *out, int tokens,
			       int hidden, int64_t vl, int rank, int world)
{
	int64_t vocab = vl * world;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < tokens * vocab;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t t = o / vocab, c = o % vocab, v = c - (int64_t)rank * vl;
		if (v < 0 || v >= vl) {
			out[o] = __float2bfloat16(0.f);
			continue;
		}
		float acc = 0.f;
		for (int k = 0; k < hidden; k++)
			acc += __bfloat162float(h[t * hidden + k]) * __bfloat162float(w[v * hidden + k]);
		out[o] = __float2bfloat16(__bfloat162float(__float2bfloat16(acc)) +
					  __bfloat162float(bias[v]));
	}
}

extern "C" int pkb_init(pkb_ctx *ctx) { return ctx->in[0].dtype != PKB_BF16; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	gemv_own_slice<<<132, 256, 0, (cudaStream_t)ctx->stream>>>(
		(const __nv_bfloat16 *)ctx->in[0].data, (const __nv_bfloat16 *)ctx->in[1].data,
		(const __nv_bfloat16 *)ctx->in[2].data, (__nv_bfloat16 *)ctx->out[0].data,
		(int)ctx->in[0].shape[0], (int)ctx->in[0].shape[1], ctx->in[1].shape[0],
		ctx->rank, ctx->world);
	return cudaGetLastError() != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
