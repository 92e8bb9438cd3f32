/*
 * 033_ulysses_all_to_all_tensor_primitive, known-bad: no communication. The
 * rank lays out its own rows r*M/W .. (r+1)*M/W in every rank's columns, as
 * if every rank held its x; only the W-th of the output that is its own
 * (columns [r*N, (r+1)*N)) is right.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t rows = ctx->out[0].shape[0];
	size_t row = (size_t)ctx->in[0].shape[1] * pkb_dtype_size(ctx->in[0].dtype);
	const char *mine = (const char *)ctx->in[0].data + ctx->rank * rows * row;
	for (int j = 0; j < ctx->world; j++)
		if (cudaMemcpy2DAsync((char *)ctx->out[0].data + j * row, ctx->world * row, mine,
				      row, row, rows, cudaMemcpyDeviceToDevice, st) != cudaSuccess)
			return 1;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
