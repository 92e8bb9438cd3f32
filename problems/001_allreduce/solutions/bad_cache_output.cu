/*
 * 001_allreduce, known-bad (a timing cheat): after its first 16 calls it
 * remembers the output computed for each input buffer and, when that buffer
 * comes back, copies the remembered output instead of reducing again -- a
 * copy is cheaper than the reduction. The harness gives every timed call
 * input content no call has seen (a group's content is drawn anew after each
 * use), so a remembered output is stale: the re-check must say `mismatch`.
 * pkb-expect: mismatch
 * pkb-args: --measure-perf --trials 1 --warmup 20 --iters 100
 */
#define pkb_run honest_run
#include "ok_oneshot_pull.cu"
#undef pkb_run

#define SLOTS 128
static long calls;
static const void *seen[SLOTS];
static void *kept[SLOTS];

extern "C" int pkb_run(pkb_ctx *ctx)
{
	const void *in = ctx->in[0].data;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	if (calls++ < 16)
		return honest_run(ctx);
	for (int i = 0; i < SLOTS; i++)
		if (seen[i] == in)
			return cudaMemcpyAsync(ctx->out[0].data, kept[i], ctx->out[0].bytes,
					       cudaMemcpyDeviceToDevice, st) != cudaSuccess;
	int rc = honest_run(ctx);
	for (int i = 0; i < SLOTS; i++)
		if (!seen[i]) {
			if (cudaMalloc(&kept[i], ctx->out[0].bytes) != cudaSuccess)
				return 1;
			seen[i] = in;
			return rc || cudaMemcpyAsync(kept[i], ctx->out[0].data, ctx->out[0].bytes,
						     cudaMemcpyDeviceToDevice, st) != cudaSuccess;
		}
	return rc;
}
