/*
 * 007_reducescatter, known-good: reduce-scatter by the copy engines in W-1
 * lockstep steps (include/pkb_ce.cuh), for large chunks.
 *
 * In step k (1 <= k < W) rank r copies chunk r+k of its input into slot r
 * of rank r+k's staging buffer with cudaMemcpyAsync, and receives its own
 * chunk from rank r-k into slot r-k: every rank sends one copy and receives
 * one, the pattern of 008's ok_ce_steps. A barrier ends each step. As each
 * part of the last step lands, the side stream sums that part of the rank's
 * own chunk and of the W-1 slots into its output, in fp32 rounded once
 * (pkb_ce.cuh's reductions), under the transfer of the next part.
 *
 * At small sizes this loses: every step pays a copy's launch and a barrier
 * (several microseconds); it is meant for tens of MiB and more.
 *
 * Traffic: each rank sends and receives (W-1) * M*N*e bytes; its HBM takes
 * the staging writes and a sum that reads W times the output.
 */
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_copy.cuh"
#include "pkb_ce.cuh"

PKB_SOLUTION;

#ifndef CHUNKS
#define CHUNKS 1              /* transfers per step, but the last */
#endif
#ifndef TAIL
#define TAIL (16 << 20)       /* the last step in halves down to this many bytes (0: CHUNKS) */
#endif

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return pkb_ce_create(ctx, ctx->world, ctx->out[0].bytes, TAIL);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	const int me = ctx->rank, w = ctx->world;
	size_t chunk = ctx->out[0].bytes;
	const char *in = (const char *)ctx->in[0].data;
	struct pkb_ce_step steps[PKB_CE_MAX_WORLD];
	for (int k = 1; k < w; k++) {
		int to = (me + k) % w, from = (me - k + w) % w;
		steps[k - 1] = (struct pkb_ce_step){ in + to * chunk, to, me, chunk,
						     NULL, from, chunk };
	}
	struct pkb_ce_sum sum = { ctx->out[0].data, in + me * chunk, me, chunk,
				  ctx->out[0].dtype };
	return pkb_ce_run(ctx, (struct pkb_ce *)ctx->user, steps, w - 1, chunk, CHUNKS,
			  NULL, NULL, &sum);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ce_destroy(ctx);
}
