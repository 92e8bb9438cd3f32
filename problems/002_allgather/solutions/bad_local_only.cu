/*
 * 002_allgather, known-bad: skips communication and fills every slab of the
 * output with the local input -- right only if every rank held the same
 * data, which the original's constant inputs did not even allow.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	size_t slab = ctx->in[0].bytes;
	for (int j = 0; j < ctx->world; j++)
		if (cudaMemcpyAsync((char *)ctx->out[0].data + j * slab, ctx->in[0].data, slab,
				    cudaMemcpyDeviceToDevice,
				    (cudaStream_t)ctx->stream) != cudaSuccess)
			return 1;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
