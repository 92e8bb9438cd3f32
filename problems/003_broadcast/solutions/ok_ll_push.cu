/*
 * 003_broadcast, known-good: one-shot push broadcast with flagged lines
 * (include/pkb_ll.cuh, NCCL's "LL" protocol), for small tensors: no barrier.
 *
 * Thread j of the grid on rank 0 loads line j (8 bytes) of the input, stores
 * it into its own output and, beside the round's epoch, into every peer's
 * receive area: one 16-byte NVLink store per peer. Thread j of every other
 * rank waits for line j in its own area and stores it into its output. Each
 * line carries its own flag: one NVLink trip per call, where
 * ok_oneshot_push.cu pays a barrier's round trip and a copy out of the
 * staging buffer.
 *
 * Rank 0 only sends, so nothing it receives tells it that a peer finished
 * reading a half of its area: every receiving block acknowledges round e-1
 * into rank 0's ack table as it starts round e, and rank 0's block waits for
 * the acknowledgement of round e-2 before it writes round e (pkb_ll.cuh).
 * Back to back, that one is long in: the wait is a local load.
 *
 * Large tensors take several rounds of one line per thread; they work at any
 * size, but the flags double the bytes sent: past a few hundred KiB
 * ok_oneshot_push.cu is faster.
 *
 * Traffic: rank 0 sends (W-1) x 2 x M*N*e bytes.
 * Memory: 2 halves x 1 source x (grid x THREADS) x 16 bytes.
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
#define MAX_WORLD 64
#define ROOT 0

__global__ void __launch_bounds__(THREADS)
broadcast_ll(pkb_dev_comm comm, pkb_ll ll, const void *in, void *out, int64_t bytes)
{
	__shared__ int ranks[MAX_WORLD];   /* rank 0: its receivers; the others: rank 0 */
	const int me = comm.rank, w = comm.world;
	if ((int)threadIdx.x < w - 1)
		ranks[threadIdx.x] = me == ROOT ? (ROOT + 1 + threadIdx.x) % w : ROOT;
	const uint32_t e0 = pkb_ll_epochs(ll);   /* also publishes ranks[] */
	const int64_t j = (int64_t)blockIdx.x * THREADS + threadIdx.x;
	const bool live = j < ll.lines;
	bool ok = true;
	for (uint32_t r = 0; r < ll.rounds; r++) {
		const uint32_t e = e0 + r;
		const int64_t i = r * ll.per_round + j;   /* past the end: padding */
		if (me == ROOT) {
			if (!pkb_ll_wait_ack(comm, ll, ranks, w - 1, e))
				return;
			if (live) {
				uint64_t v = pkb_ll_load(in, bytes, i);
				pkb_ll_store(out, bytes, i, v);
				for (int k = 0; k < w - 1; k++)
					pkb_ll_put(pkb_ll_line(ll, ranks[k], e, 0, j), v, e);
			}
		} else {
			pkb_ll_ack(comm, ll, ranks, 1, e);   /* round e-1 is read */
			uint64_t v;
			if (live && ok) {
				ok = pkb_ll_get(comm, pkb_ll_line(ll, me, e, 0, j), e, &v);
				if (ok)
					pkb_ll_store(out, bytes, i, v);
			}
		}
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > MAX_WORLD)
		return 1;
	return pkb_ll_init(ctx, ctx->in[0].bytes, 1, THREADS, MAX_BLOCKS);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_ll_state *s = (struct pkb_ll_state *)ctx->user;
	broadcast_ll<<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->ll, ctx->in[0].data, ctx->out[0].data, (int64_t)ctx->in[0].bytes);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ll_fini(ctx);
}
