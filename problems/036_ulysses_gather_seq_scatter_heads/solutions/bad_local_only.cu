/*
 * 036_ulysses_gather_seq_scatter_heads, known-bad: no communication. The
 * rank writes its own head group r of its own positions at every rank's
 * positions, as if every rank held its x; only the positions [r*T, (r+1)*T)
 * of each sequence are right.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

/* one thread per 16-byte unit of the output (B, W*T, G, 64) */
__global__ void own_group_everywhere(const int4 *x, int4 *out, int64_t b_n, int64_t t_n,
				     int w, int rank, int64_t ru)
{
	int64_t n = b_n * w * t_n * ru;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t pos = o / ru, c = o - pos * ru;
		int64_t b = pos / (w * t_n), t = (pos - b * w * t_n) % t_n;
		out[o] = x[((b * t_n + t) * w + rank) * ru + c];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	int64_t b = ctx->in[0].shape[0], t = ctx->in[0].shape[1];
	int64_t ru = (int64_t)(ctx->in[0].bytes / 16 / (b * t * ctx->world));
	own_group_everywhere<<<1024, 256, 0, (cudaStream_t)ctx->stream>>>(
		(const int4 *)ctx->in[0].data, (int4 *)ctx->out[0].data, b, t, ctx->world,
		ctx->rank, ru);
	return cudaGetLastError() != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
