/*
 * 005_scatter, known-good: scatter by the copy engine in W-1 lockstep steps
 * (include/pkb_ce.cuh), for large slabs.
 *
 * In step k (1 <= k < W) rank 0 copies slab k of its input into rank k's
 * staging buffer with cudaMemcpyAsync: one copy out of rank 0 at a time,
 * which `pkb calibrate` measures at 397 GB/s one way on the lent H200s
 * (SM stores: 369). A barrier ends each step; rank k copies its slab into
 * its output on a side stream, under rank 0's next step. Rank 0's own slab
 * goes from its input to its output locally, at the start.
 *
 * At small sizes this loses: every step pays a copy's launch and a barrier
 * (several microseconds); it is meant for tens of MiB and more.
 *
 * Traffic: rank 0 sends (W-1) * M*N*e bytes; each other rank receives M*N*e
 * and copies it once more locally.
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
#define SRC 0

extern "C" int pkb_init(pkb_ctx *ctx)
{
	/* one slot, sized from the output: the same (M, N) on every rank */
	return pkb_ce_create(ctx, 1, ctx->out[0].bytes, TAIL);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	const int me = ctx->rank, w = ctx->world;
	size_t slab = ctx->out[0].bytes;
	const char *in = (const char *)ctx->in[0].data;
	char *out = (char *)ctx->out[0].data;
	struct pkb_ce_step steps[PKB_CE_MAX_WORLD];
	for (int k = 1; k < w; k++)
		steps[k - 1] = (struct pkb_ce_step){ me == SRC ? in + k * slab : NULL,
						     me == SRC ? k : -1, 0, slab,
						     me == k ? out : NULL, 0, slab };
	return pkb_ce_run(ctx, (struct pkb_ce *)ctx->user, steps, w - 1, slab, CHUNKS,
			  me == SRC ? out : NULL, in, NULL);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ce_destroy(ctx);
}
