/*
 * 002_allgather, known-good: one-shot all-gather with flagged lines
 * (include/pkb_ll.cuh, NCCL's "LL" protocol), for small tensors: no barrier.
 *
 * Thread j of the grid loads 8 bytes of the input (line j of a round),
 * stores them into its own slab of the output and, beside the round's
 * epoch, into slot `me` of every peer's receive area: one 16-byte NVLink
 * store per peer. It then waits for line j of each peer's slot in its own
 * area and stores it into that peer's slab. Each line carries its own flag,
 * so a rank waits for exactly the bytes it needs: one NVLink trip per call,
 * where ok_oneshot_push.cu pays a barrier's round trip and then a copy out of
 * the staging buffer. Every rank sends to and receives from every peer in
 * every round, so a half of the area is free again two rounds later without
 * an acknowledgement (pkb_ll.cuh).
 *
 * Large tensors take several rounds of one line per thread; they work at any
 * size, but the flags double the bytes sent: past a few hundred KiB
 * ok_oneshot_push.cu is faster.
 *
 * Traffic: each rank sends (W-1) x 2 x M*N*e bytes.
 * Memory: 2 halves x W sources x (grid x THREADS) x 16 bytes.
 */
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ll.cuh"

PKB_SOLUTION;

#ifndef THREADS
#define THREADS 512
#endif
#ifndef MAX_BLOCKS
#define MAX_BLOCKS 264        /* two 512-thread blocks per SM on a 132-SM H200 */
#endif

__global__ void __launch_bounds__(THREADS)
allgather_ll(pkb_dev_comm comm, pkb_ll ll, const void *in, char *out, int64_t bytes)
{
	const int me = comm.rank, w = comm.world;
	const uint32_t e0 = pkb_ll_epochs(ll);
	const int64_t j = (int64_t)blockIdx.x * THREADS + threadIdx.x;
	if (j >= ll.lines)
		return;
	for (uint32_t r = 0; r < ll.rounds; r++) {
		const uint32_t e = e0 + r;
		const int64_t i = r * ll.per_round + j;   /* past the end: padding */
		uint64_t v = pkb_ll_load(in, bytes, i);
		pkb_ll_store(out + me * bytes, bytes, i, v);
		for (int k = 1; k < w; k++)
			pkb_ll_put(pkb_ll_line(ll, (me + k) % w, e, me, j), v, e);
		for (int k = 1; k < w; k++) {
			int s = (me + w - k) % w;
			if (!pkb_ll_get(comm, pkb_ll_line(ll, me, e, s, j), e, &v))
				return;
			pkb_ll_store(out + s * bytes, bytes, i, v);
		}
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return pkb_ll_init(ctx, ctx->in[0].bytes, ctx->world, THREADS, MAX_BLOCKS);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_ll_state *s = (struct pkb_ll_state *)ctx->user;
	allgather_ll<<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->ll, ctx->in[0].data, (char *)ctx->out[0].data,
		(int64_t)ctx->in[0].bytes);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ll_fini(ctx);
}
