/*
 * 001_allreduce, known-bad (a cheat on the contract): honest for its first
 * 16 calls (the correctness trials, whose inputs are checksummed around
 * every call), then it also writes its result over its input, as an
 * in-place all-reduce would -- inputs are read-only. The harness checks each
 * input group's content before drawing it anew: `mismatch`, naming the
 * modified inputs.
 * pkb-expect: mismatch
 * pkb-args: --measure-perf --trials 1 --warmup 20 --iters 50
 */
#define pkb_run honest_run
#include "ok_oneshot_pull.cu"
#undef pkb_run

static long calls;

extern "C" int pkb_run(pkb_ctx *ctx)
{
	int rc = honest_run(ctx);
	if (calls++ < 16 || rc)
		return rc;
	return cudaMemcpyAsync((void *)ctx->in[0].data, ctx->out[0].data, ctx->out[0].bytes,
			       cudaMemcpyDeviceToDevice, (cudaStream_t)ctx->stream) != cudaSuccess;
}
