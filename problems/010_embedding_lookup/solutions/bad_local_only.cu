/*
 * 010_embedding_lookup, known-bad: no communication. Every id is looked up in
 * this rank's own shard (id % M), in query order -- right for none of the
 * rows owned by other ranks, and in the wrong order for its own.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include "pkb.h"

PKB_SOLUTION;

__global__ void lookup_local(const int64_t *idx, const char *shard, char *out, int64_t m,
			     int64_t row_bytes)
{
	for (int64_t j = blockIdx.x; j < m; j += gridDim.x) {
		int64_t l = idx[j] % m;
		for (int64_t k = threadIdx.x; k < row_bytes; k += blockDim.x)
			out[j * row_bytes + k] = shard[l * row_bytes + k];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	int64_t m = ctx->in[1].shape[0];
	int64_t row_bytes = ctx->in[1].shape[1] * (int64_t)pkb_dtype_size(ctx->in[1].dtype);
	lookup_local<<<(unsigned)(m < 4096 ? m : 4096), 256, 0, (cudaStream_t)ctx->stream>>>(
		(const int64_t *)ctx->in[0].data, (const char *)ctx->in[1].data,
		(char *)ctx->out[0].data, m, row_bytes);
	return cudaGetLastError() != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
