/*
 * 001_allreduce, known-bad (a timing cheat): the correct one-shot all-reduce,
 * run on a stream of its own that is never joined to ctx->stream. The
 * harness's events on ctx->stream then time nothing but the launches; the
 * work still finishes before the harness synchronises the device, so the
 * outputs are right. The host clock around each block of calls sees the
 * work the events miss: the result must be `flagged`.
 * (At small sizes the hidden work is below the host clock's slack; the
 * physical floor of the roofline issue is the check there.)
 * pkb-expect: flagged
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
