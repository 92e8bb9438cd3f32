/*
 * 001_allreduce, known-bad (a timing cheat): the correct one-shot all-reduce,
 * run on a stream of its own that is never joined to ctx->stream. The
 * call's stream then holds nothing but the launches, so the judge's clock
 * stops at once; the work still finishes before the solution process
 * synchronises its device, so the outputs of every call are right by the
 * end of the timing. The judge copies the outputs of calls chosen at random
 * right after their end events (the late-work snapshot, src/timing.c):
 * there they are not yet written, `mismatch`. (Before the snapshot, the
 * host clock around each block caught it, as `flagged`; that check stays,
 * behind this one.)
 * pkb-expect: mismatch
 * pkb-args: --measure-perf --trials 1 --warmup 20 --iters 50 --m 8192
 */
#define pkb_init honest_init
#define pkb_run honest_run
#include "ok_oneshot_pull.cu"
#undef pkb_init
#undef pkb_run

static cudaStream_t side;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess)
		return 1;
	return honest_init(ctx);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	cudaStream_t timed = ctx->stream;
	ctx->stream = side;
	int rc = honest_run(ctx);
	ctx->stream = timed;
	return rc;
}
