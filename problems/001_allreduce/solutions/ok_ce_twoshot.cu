/*
 * 001_allreduce, known-good: two-shot all-reduce by the copy engines
 * (include/pkb_ce.cuh), for large tensors.
 *
 * The tensor is cut into W chunks of q elements (q: a W-th, rounded up to
 * 16 bytes; the last chunks are shorter, or empty for tiny tensors). Chunk r
 * is rank r's to reduce.
 *
 * Reduce-scatter, W-1 steps: in step k rank r copies chunk r+k of its input
 * into slot r of rank r+k's staging buffer with cudaMemcpyAsync, and
 * receives its own chunk from rank r-k; no barrier until the last step. As
 * each part of the last step lands (it is cut in halves down to TAIL
 * bytes), the side stream sums that part of the rank's chunk and of the W-1
 * slots into slot r of its own staging buffer, which no peer writes (fp32,
 * rounded once).
 *
 * All-gather by pulls: once every rank summed a part, every rank's copy
 * engine copies that part of chunk s from slot s of rank s into chunk s of
 * its output, for every peer s, while the next part is summed; its own
 * chunk is copied on the side stream (pkb_ce.cuh, sum->gather).
 *
 * Every rank sends one copy and receives one at a time, as long as the
 * ranks keep pace, the pattern the copy engines move fastest (`pkb
 * calibrate`'s "both ways"). At small sizes this loses: every transfer pays
 * a copy's launch and every part a barrier (several microseconds); it is
 * meant for tens of MiB and more. At 256 MiB per rank, W = 4: 1158 us
 * against NCCL's 1186 (the all-gather in push steps with copy-outs, as this
 * file had it before: 1253).
 *
 * Traffic: each rank sends and receives 2 (W-1)/W * M*N*e bytes, the least
 * without in-switch reduction.
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
#define TAIL (32 << 20)       /* the last step in halves down to this many bytes (0: CHUNKS): */
#endif                        /* 1158 us at 256 MiB, W = 4, against 1211 (16 MiB), 1241 (8 MiB) */

/* bytes of chunk r's q elements, the one per rank, a multiple of 16 */
static size_t chunk_bytes(const pkb_ctx *ctx)
{
	size_t e = pkb_dtype_size(ctx->in[0].dtype), per = 16 / e;
	size_t q = (ctx->in[0].numel + ctx->world - 1) / ctx->world;
	return (q + per - 1) / per * per * e;
}

/* bytes of chunk r that lie within the tensor */
static size_t len_of(const pkb_ctx *ctx, int r)
{
	size_t q = chunk_bytes(ctx), at = (size_t)r * q, all = ctx->in[0].bytes;
	return at >= all ? 0 : all - at < q ? all - at : q;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return pkb_ce_create(ctx, ctx->world, chunk_bytes(ctx), TAIL);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	const int me = ctx->rank, w = ctx->world;
	struct pkb_ce *ce = (struct pkb_ce *)ctx->user;
	size_t q = chunk_bytes(ctx);
	const char *in = (const char *)ctx->in[0].data;
	char *out = (char *)ctx->out[0].data;
	struct pkb_ce_step steps[PKB_CE_MAX_WORLD];
	for (int k = 1; k < w; k++) {
		int to = (me + k) % w, from = (me - k + w) % w;
		steps[k - 1] = (struct pkb_ce_step){ in + to * q, to, me, len_of(ctx, to),
						     NULL, from, len_of(ctx, me) };
	}
	struct pkb_ce_sum sum = { (char *)ce->stage.local + (size_t)me * ce->slot, in + me * q, me,
				  len_of(ctx, me), ctx->out[0].dtype, out, q, ctx->out[0].bytes };
	return pkb_ce_run(ctx, ce, steps, w - 1, q, CHUNKS, NULL, NULL, &sum);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ce_destroy(ctx);
}
