/*
 * 034_ulysses_all_gather_into_tensor_primitive, known-bad: no communication.
 * The rank writes its own x into every rank's rows, as if all ranks held the
 * same data; only rows [r*M, (r+1)*M) are right.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	size_t bytes = ctx->in[0].bytes;
	for (int j = 0; j < ctx->world; j++)
		if (cudaMemcpyAsync((char *)ctx->out[0].data + j * bytes, ctx->in[0].data, bytes,
				    cudaMemcpyDeviceToDevice, (cudaStream_t)ctx->stream) != cudaSuccess)
			return 1;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
