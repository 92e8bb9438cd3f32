/*
 * 035_ulysses_all_gather_variable_primitive, known-bad: no communication.
 * The rank works out where its rows go from the sizes in the README
 * (m_r = max(1, M (W + 1 + 2r) / (2W))), copies x there and zeroes the
 * other ranks' rows; only its own rows are right.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

static int64_t rows_of(const pkb_ctx *ctx, int r)
{
	int64_t v = ctx->m * (ctx->world + 1 + 2 * r) / (2 * ctx->world);
	return v > 1 ? v : 1;
}

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	size_t row = (size_t)ctx->in[0].shape[1] * pkb_dtype_size(ctx->in[0].dtype);
	int64_t first = 0;
	for (int r = 0; r < ctx->rank; r++)
		first += rows_of(ctx, r);
	if (cudaMemsetAsync(ctx->out[0].data, 0, ctx->out[0].bytes, st) != cudaSuccess)
		return 1;
	return cudaMemcpyAsync((char *)ctx->out[0].data + first * row, ctx->in[0].data,
			       ctx->in[0].bytes, cudaMemcpyDeviceToDevice, st) != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
