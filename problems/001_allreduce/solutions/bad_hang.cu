/*
 * 001_allreduce, known-bad: spins on a flag that nobody ever sets, with a
 * raw loop instead of pkb_wait_ge, so the GPU hangs. The harness must end it
 * at the trial deadline and report a timeout with the phase.
 * pkb-expect: timeout
 * pkb-args: --deadline trial=5
 */
#include <cuda_runtime.h>
#include "pkb.h"

PKB_SOLUTION;

struct state { unsigned *flag; };

__global__ void wait_forever(volatile unsigned *flag)
{
	while (*flag == 0)
		;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	ctx->user = s;
	if (cudaMalloc(&s->flag, sizeof(unsigned)) != cudaSuccess)
		return 1;
	return cudaMemset(s->flag, 0, sizeof(unsigned)) != cudaSuccess;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	wait_forever<<<1, 1, 0, (cudaStream_t)ctx->stream>>>(s->flag);
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
