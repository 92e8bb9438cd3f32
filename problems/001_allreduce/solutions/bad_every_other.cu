/*
 * 001_allreduce, known-bad (a timing cheat): honest for its first 16 calls
 * (the correctness trials), then it skips every other call and leaves the
 * output buffer as it was. Every rank counts calls alike, so the ranks stay
 * in step. The harness re-checks each output set after timing against the
 * inputs of its last call: a skipped last call leaves another call's result
 * (other inputs) behind, so the result must be `mismatch`.
 * pkb-expect: mismatch
 * pkb-args: --measure-perf --trials 1 --warmup 20 --iters 50
 */
#define pkb_run honest_run
#include "ok_oneshot_pull.cu"
#undef pkb_run

static long calls;

extern "C" int pkb_run(pkb_ctx *ctx)
{
	long c = calls++;
	if (c >= 16 && (c & 1))
		return 0;
	return honest_run(ctx);
}
