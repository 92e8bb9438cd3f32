/*
 * 003_broadcast, known-bad: skips communication and returns the local input
 * -- right on rank 0 only.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	return cudaMemcpyAsync(ctx->out[0].data, ctx->in[0].data, ctx->in[0].bytes,
			       cudaMemcpyDeviceToDevice, (cudaStream_t)ctx->stream) != cudaSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
