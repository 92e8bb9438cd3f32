/*
 * 005_scatter, known-bad: writes zeros. Fast and wrong.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	return cudaMemsetAsync(ctx->out[0].data, 0, ctx->out[0].bytes,
			       (cudaStream_t)ctx->stream) != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
