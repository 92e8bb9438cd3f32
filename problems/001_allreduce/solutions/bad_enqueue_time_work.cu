/*
 * 001_allreduce, known-bad (issue 36, timing dodged at enqueue time):
 * honest for its first 16 calls (the correctness trials), then pkb_run does
 * the whole all-reduce synchronously on a private stream -- launched and
 * waited for inside pkb_run -- and enqueues nothing on ctx->stream. The
 * judge's clock runs from its go word to the call's done word on the GPU,
 * and a timed block's calls are enqueued before the judge's launch gate
 * opens, so this work was on no clock: 2.8x where the honest kernel got
 * 2.2x, when candidates ran inside the rank. Now a block's inputs get their
 * fresh content behind the gate, after the block is enqueued
 * (timing.c:perf_block): at enqueue time this candidate reads the previous
 * content, its outputs are stale, and the snapshots and the re-check
 * compare them with the reference's: `mismatch`.
 * pkb-expect: mismatch
 * pkb-args: --measure-perf --trials 1 --warmup 20 --iters 50
 */
#define pkb_run honest_run
#include "ok_oneshot_pull.cu"
#undef pkb_run

static long calls;
static cudaStream_t early;

extern "C" int pkb_run(pkb_ctx *ctx)
{
	if (calls++ < 16)
		return honest_run(ctx);
	if (!early && cudaStreamCreateWithFlags(&early, cudaStreamNonBlocking) != cudaSuccess)
		return 1;
	pkb_ctx c = *ctx;
	c.stream = (struct CUstream_st *)early;
	int rc = honest_run(&c);
	return rc || cudaStreamSynchronize(early) != cudaSuccess;
}
