/*
 * 006_gather, known-good: one-shot push gather on raw data with an "empty"
 * value (include/pkb_lamport.cuh, TensorRT-LLM's "Lamport" protocol): no
 * barrier, no flag on the wire.
 *
 * Thread j of the grid on every rank but 0 loads 16-byte unit j of its
 * input, stores it into its own output (a non-root returns its input: the
 * original's quirk) and into its slot of rank 0's area: one NVLink store.
 * Thread j of rank 0 copies unit j of its input into slab 0 of its output,
 * then takes unit j of every peer's slot at once (spinning until no element
 * is "empty", the W-1 loads in flight together, and emptying them behind)
 * into the peers' slabs. One NVLink trip per call, like ok_ll_push.cu, at
 * half its bytes; ok_push.cu pays a barrier's round trip and a copy out of
 * the staging buffer.
 *
 * Rank 0 only receives, so its block acknowledges (one unit into every other
 * rank's ack area, pkb_lp_ack) as it starts a call, and every other rank's
 * block takes that acknowledgement before its call ends: no rank writes a
 * half again two calls later before rank 0 began the call between, after it
 * read that half.
 *
 * Exact: the "empty" value is one NaN pattern, which travels as another NaN;
 * every other value arrives bit for bit.
 *
 * Traffic: rank 0 receives (W-1) x M*N*e bytes.
 * Memory: 2 halves x (W x M*N*e rounded up to 16 + grid x W x 16) bytes.
 */
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_copy.cuh"
#include "pkb_lamport.cuh"

PKB_SOLUTION;

#ifndef THREADS
#define THREADS 256
#endif
#ifndef MAX_BLOCKS
#define MAX_BLOCKS 264        /* all resident: a block waits for its peers' same block */
#endif
#define ROOT 0

template <typename T, int N>
__global__ void __launch_bounds__(THREADS, 2)   /* two blocks an SM: MAX_BLOCKS resident */
gather_lamport(pkb_dev_comm comm, pkb_lp lp, const char *in, char *out, int64_t bytes)
{
	const int me = comm.rank, w = comm.world;
	const size_t half = pkb_lp_half(lp);
	const int64_t units = (bytes + 15) / 16, stride = (int64_t)gridDim.x * THREADS;
	const int64_t j0 = (int64_t)blockIdx.x * THREADS + threadIdx.x, acks = w * units;
	if (me == ROOT && (int)threadIdx.x < w - 1)
		pkb_lp_ack(comm, lp, half, acks, (ROOT + 1 + threadIdx.x) % w);
	for (int64_t j = j0; j < units; j += stride) {
		const uint4 own = pkb_lp_load<T>(in, bytes, j);
		if (me != ROOT) {
			pkb_lp_put(pkb_lp_unit(lp, ROOT, half, me * units, j), own);
			pkb_lp_store(out, bytes, j, own);
			continue;
		}
		pkb_lp_store(out + ROOT * bytes, bytes, j, own);
		uint4 v[N];
		if (!pkb_lp_take_all<T, N>(comm, pkb_lp_unit(lp, me, half, 0, j), units,
					   pkb_lp_peers(comm), v))
			return;
#pragma unroll
		for (int r = 0; r < N; r++)
			if (r < w && r != me)
				pkb_lp_store(out + r * bytes, bytes, j, v[r]);
	}
	if (me != ROOT && threadIdx.x == 0)
		pkb_lp_take_acks<N>(comm, lp, half, acks, 1u << ROOT);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > 8)   /* a unit of every rank in registers: built for W <= 8 */
		return 1;
	return pkb_lp_init(ctx, (int64_t)(ctx->in[0].bytes + 15) / 16, ctx->world, true, THREADS,
			   MAX_BLOCKS);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct pkb_lp_state *s)
{
	auto *kernel = ctx->world <= 4 ? gather_lamport<T, 4> : gather_lamport<T, 8>;
	kernel<<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->lp, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
		(int64_t)ctx->in[0].bytes);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_lp_state *s = (struct pkb_lp_state *)ctx->user;
	switch (pkb_dtype_size(ctx->in[0].dtype)) {
	case 2: launch<uint16_t>(ctx, s); break;
	case 4: launch<uint32_t>(ctx, s); break;
	default: return 1;
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_lp_fini(ctx);
}
