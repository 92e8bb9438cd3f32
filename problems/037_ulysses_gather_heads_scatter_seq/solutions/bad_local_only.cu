/*
 * 037_ulysses_gather_heads_scatter_seq, known-bad: no communication. The
 * rank writes its own positions [r*S, (r+1)*S) (zeros past T) into every
 * rank's heads, as if every rank held its x; only heads [8r, 8r+8) are
 * right.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

/* one thread per 16-byte unit of the output (B, S, 8W, 64); pu units a
 * position of 8 heads */
__global__ void own_chunk_everywhere(const int4 *x, int4 *out, int64_t b_n, int64_t t_n,
				     int64_t s_n, int w, int rank, int64_t pu)
{
	int64_t n = b_n * s_n * w * pu;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t i = o / (w * pu), c = o % pu;
		int64_t b = i / s_n, pos = rank * s_n + (i - b * s_n);
		out[o] = pos < t_n ? x[(b * t_n + pos) * pu + c] : make_int4(0, 0, 0, 0);
	}
}

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	int64_t b = ctx->in[0].shape[0], t = ctx->in[0].shape[1], s = ctx->out[0].shape[1];
	int64_t pu = (int64_t)(ctx->in[0].bytes / 16 / (b * t));
	own_chunk_everywhere<<<1024, 256, 0, (cudaStream_t)ctx->stream>>>(
		(const int4 *)ctx->in[0].data, (int4 *)ctx->out[0].data, b, t, s, ctx->world,
		ctx->rank, pu);
	return cudaGetLastError() != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
