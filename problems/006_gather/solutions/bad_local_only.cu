/*
 * 006_gather, known-bad: skips communication -- rank 0 fills every slab with
 * its own input, the other ranks return their input (which is right for
 * them: the original's quirk). Wrong on rank 0.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	size_t slab = ctx->in[0].bytes;
	int slabs = ctx->rank == 0 ? ctx->world : 1;
	for (int j = 0; j < slabs; j++)
		if (cudaMemcpyAsync((char *)ctx->out[0].data + j * slab, ctx->in[0].data, slab,
				    cudaMemcpyDeviceToDevice,
				    (cudaStream_t)ctx->stream) != cudaSuccess)
			return 1;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
