/*
 * 006_gather, known-good: gather by the copy engines in W-1 lockstep steps
 * (include/pkb_ce.cuh), for large slabs.
 *
 * In step k (1 <= k < W) rank k copies its input into slot k of rank 0's
 * staging buffer with cudaMemcpyAsync: one copy into rank 0 at a time
 * (concurrent copies into one GPU share its links badly: `pkb calibrate`'s
 * all-to-all by concurrent copies reads 195 GB/s per GPU, one copy 397). A
 * barrier ends each step; rank 0 copies slot k into slab k of its output on
 * a side stream, under the next step. Every rank's own input goes to its
 * output locally, at the start (rank 0's into slab 0).
 *
 * At small sizes this loses: every step pays a copy's launch and a barrier
 * (several microseconds); it is meant for tens of MiB and more.
 *
 * Traffic: rank 0 receives (W-1) * M*N*e bytes and copies them once more
 * locally; each other rank sends M*N*e.
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
#define DST 0

extern "C" int pkb_init(pkb_ctx *ctx)
{
	/* W slots, one per sender (slot 0 unused): the same size on every rank */
	return pkb_ce_create(ctx, ctx->world, ctx->in[0].bytes, TAIL);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	const int me = ctx->rank, w = ctx->world;
	size_t slab = ctx->in[0].bytes;
	const char *in = (const char *)ctx->in[0].data;
	char *out = (char *)ctx->out[0].data;
	struct pkb_ce_step steps[PKB_CE_MAX_WORLD];
	for (int k = 1; k < w; k++)
		steps[k - 1] = (struct pkb_ce_step){ me == k ? in : NULL, me == k ? DST : -1, k, slab,
						     me == DST ? out + k * slab : NULL, k, slab };
	return pkb_ce_run(ctx, (struct pkb_ce *)ctx->user, steps, w - 1, slab, CHUNKS,
			  out, in, NULL);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ce_destroy(ctx);
}
