/*
 * 038_ulysses_gather_seq_scatter_heads_qkv, known-bad: no communication.
 * The rank writes its own columns [r*C, (r+1)*C) of q, k and v of its own
 * positions at every rank's positions, as if every rank held its qkv; only
 * the positions [r*T, (r+1)*T) of each sequence are right.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

/* one thread per 16-byte unit of the output (B, W*T, 3C); ru units a run of
 * C values */
__global__ void own_columns_everywhere(const int4 *x, int4 *out, int64_t b_n, int64_t t_n,
				       int w, int rank, int64_t ru)
{
	int64_t n = b_n * w * t_n * 3 * ru;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t run = o / ru, c = o - run * ru;
		int64_t pos = run / 3, q = run - pos * 3;
		int64_t b = pos / (w * t_n), t = (pos - b * w * t_n) % t_n;
		out[o] = x[(((b * t_n + t) * 3 + q) * w + rank) * ru + c];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	int64_t b = ctx->in[0].shape[0], t = ctx->in[0].shape[1];
	int64_t ru = (int64_t)(ctx->in[0].bytes / 16 / (b * t * 3 * ctx->world));
	own_columns_everywhere<<<1024, 256, 0, (cudaStream_t)ctx->stream>>>(
		(const int4 *)ctx->in[0].data, (int4 *)ctx->out[0].data, b, t, ctx->world,
		ctx->rank, ru);
	return cudaGetLastError() != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
