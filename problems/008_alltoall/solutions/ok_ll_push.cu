/*
 * 008_alltoall, known-good: one-shot all-to-all with flagged lines
 * (include/pkb_ll.cuh, NCCL's "LL" protocol), for small tensors: no barrier.
 *
 * Thread j of the grid loads line j (8 bytes) of every slab of its (W, M, N)
 * input: slab `me` goes straight into its own output, slab d beside the
 * round's epoch into slot `me` of rank d's receive area, one 16-byte NVLink
 * store. It then waits for line j of each peer's slot in its own area and
 * stores it into that peer's slab of the output. Each line carries its own
 * flag: one NVLink trip per call, where ok_oneshot_push.cu pays a barrier's
 * round trip and a copy out of the staging buffer. Every rank sends to and
 * receives from every peer in every round, so a half of the area is free
 * again two rounds later without an acknowledgement (pkb_ll.cuh).
 *
 * Large slabs take several rounds of one line per thread; they work at any
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
alltoall_ll(pkb_dev_comm comm, pkb_ll ll, const char *in, char *out, int64_t slab)
{
	const int me = comm.rank, w = comm.world;
	const uint32_t e0 = pkb_ll_epochs(ll);
	const int64_t j = (int64_t)blockIdx.x * THREADS + threadIdx.x;
	if (j >= ll.lines)
		return;
	for (uint32_t r = 0; r < ll.rounds; r++) {
		const uint32_t e = e0 + r;
		const int64_t i = r * ll.per_round + j;   /* past the end: padding */
		for (int k = 1; k < w; k++) {
			int d = (me + k) % w;
			pkb_ll_put(pkb_ll_line(ll, d, e, me, j), pkb_ll_load(in + d * slab, slab, i), e);
		}
		pkb_ll_store(out + me * slab, slab, i, pkb_ll_load(in + me * slab, slab, i));
		for (int k = 1; k < w; k++) {
			int s = (me + w - k) % w;
			uint64_t v;
			if (!pkb_ll_get(comm, pkb_ll_line(ll, me, e, s, j), e, &v))
				return;
			pkb_ll_store(out + s * slab, slab, i, v);
		}
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return pkb_ll_init(ctx, ctx->in[0].bytes / ctx->world, ctx->world, THREADS, MAX_BLOCKS);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_ll_state *s = (struct pkb_ll_state *)ctx->user;
	alltoall_ll<<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->ll, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
		(int64_t)(ctx->in[0].bytes / ctx->world));
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ll_fini(ctx);
}
