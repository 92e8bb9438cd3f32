/*
 * 001_allreduce, known-bad: writes through a wild pointer. The kernel faults
 * (illegal address); the harness must report a runtime error of this rank
 * and survive.
 * pkb-expect: runtime_error
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

__global__ void scribble(float *p) { p[threadIdx.x] = 1.0f; }

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	scribble<<<1, 32, 0, (cudaStream_t)ctx->stream>>>((float *)0x10);
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
