/*
 * 002_allgather, known-good: all-gather by the copy engines in W-1 lockstep
 * steps (include/pkb_ce.cuh), for large slabs.
 *
 * In step k (1 <= k < W) rank r copies its input into slot r of rank r+k's
 * staging buffer with cudaMemcpyAsync, and receives slot r-k from rank r-k:
 * every rank sends one copy and receives one, as in 008's ok_ce_steps (a
 * pair of copies both ways: 782 GB/s on the lent H200s against 728 for SM
 * stores, `pkb calibrate`). A barrier ends each step; the copy-out of step k
 * into slab r-k of the output runs on a side stream under step k+1. The
 * rank's own slab goes from its input to its output locally, at the start.
 *
 * At small sizes this loses: every step pays a copy's launch and a barrier
 * (several microseconds); it is meant for tens of MiB and more.
 *
 * Traffic: each rank sends and receives (W-1) * M*N*e bytes; its HBM takes
 * the staging writes and a copy-out of as much.
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
	return pkb_ce_create(ctx, ctx->world, ctx->in[0].bytes, TAIL);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	const int me = ctx->rank, w = ctx->world;
	size_t slab = ctx->in[0].bytes;
	const char *in = (const char *)ctx->in[0].data;
	char *out = (char *)ctx->out[0].data;
	struct pkb_ce_step steps[PKB_CE_MAX_WORLD];
	for (int k = 1; k < w; k++) {
		int to = (me + k) % w, from = (me - k + w) % w;
		steps[k - 1] = (struct pkb_ce_step){ in, to, me, slab, out + from * slab, from, slab };
	}
	return pkb_ce_run(ctx, (struct pkb_ce *)ctx->user, steps, w - 1, slab, CHUNKS,
			  out + me * slab, in, NULL);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ce_destroy(ctx);
}
