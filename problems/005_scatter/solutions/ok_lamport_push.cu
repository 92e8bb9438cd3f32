/*
 * 005_scatter, known-good: one-shot push scatter on raw data with an
 * "empty" value (include/pkb_lamport.cuh, TensorRT-LLM's "Lamport"
 * protocol): no barrier, no flag on the wire.
 *
 * Thread j of the grid on rank 0 loads 16-byte unit j of every slab of its
 * (W, M, N) input, each just before it stores it: slab 0 into its own
 * output, slab p into slot j of rank p's area, one NVLink store. Thread j of
 * every other rank takes slot j (spinning until no element is "empty", and
 * emptying it behind) into its output. One NVLink trip per call, like
 * ok_ll_push.cu, at half its bytes; ok_push.cu pays a barrier's round trip
 * and a copy out of the staging buffer.
 *
 * Rank 0 only sends, so every other rank's block acknowledges (one unit into
 * rank 0's ack area, pkb_lp_ack) as it starts a call, and rank 0's block
 * takes the acknowledgements before its call ends: rank 0 writes a half
 * again two calls later only after every peer's block began the call
 * between, which its last read of that half came before.
 *
 * Exact: the "empty" value is one NaN pattern, which travels as another NaN;
 * every other value arrives bit for bit.
 *
 * Traffic: rank 0 sends (W-1) x M*N*e bytes.
 * Memory: 2 halves x (M*N*e rounded up to 16 + grid x W x 16) bytes.
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
scatter_lamport(pkb_dev_comm comm, pkb_lp lp, const char *in, char *out, int64_t chunk)
{
	const int me = comm.rank, w = comm.world;
	const size_t half = pkb_lp_half(lp);
	const int64_t units = (chunk + 15) / 16, stride = (int64_t)gridDim.x * THREADS;
	const int64_t j0 = (int64_t)blockIdx.x * THREADS + threadIdx.x;
	if (me != ROOT && threadIdx.x == 0)
		pkb_lp_ack(comm, lp, half, units, ROOT);
	for (int64_t j = j0; j < units; j += stride) {
		uint4 v;
		if (me == ROOT) {
			for (int k = 1; k < w; k++) {
				const int p = (ROOT + k) % w;
				pkb_lp_put(pkb_lp_unit(lp, p, half, 0, j),
					   pkb_lp_load<T>(in + p * chunk, chunk, j));
			}
			v = pkb_lp_load<T>(in + ROOT * chunk, chunk, j);
		} else if (!pkb_lp_take<T>(comm, pkb_lp_unit(lp, me, half, 0, j), &v)) {
			return;
		}
		pkb_lp_store(out, chunk, j, v);
	}
	if (me == ROOT && threadIdx.x == 0)
		pkb_lp_take_acks<N>(comm, lp, half, units, pkb_lp_peers(comm));
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > 8)   /* acknowledgements of every rank in registers: W <= 8 */
		return 1;
	return pkb_lp_init(ctx, (int64_t)(ctx->out[0].bytes + 15) / 16, 1, true, THREADS, MAX_BLOCKS);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct pkb_lp_state *s)
{
	auto *kernel = ctx->world <= 4 ? scatter_lamport<T, 4> : scatter_lamport<T, 8>;
	kernel<<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->lp, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
		(int64_t)ctx->out[0].bytes);
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
