/*
 * 007_reducescatter, known-bad: skips communication and returns chunk
 * `rank` of the local input -- one of the W terms of the sum.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	size_t chunk = ctx->out[0].bytes;
	return cudaMemcpyAsync(ctx->out[0].data, (const char *)ctx->in[0].data + ctx->rank * chunk,
			       chunk, cudaMemcpyDeviceToDevice,
			       (cudaStream_t)ctx->stream) != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
