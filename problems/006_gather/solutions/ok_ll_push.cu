/*
 * 006_gather, known-good: one-shot push gather with flagged lines
 * (include/pkb_ll.cuh, NCCL's "LL" protocol), for small tensors: no barrier.
 *
 * Thread j of the grid on every rank but 0 loads line j (8 bytes) of its
 * input, stores it into its own output (a non-root returns its input: the
 * original's quirk) and, beside the round's epoch, into its slot of rank 0's
 * receive area: one 16-byte NVLink store. Thread j of rank 0 copies line j of
 * its input into slab 0 of its output, then waits for line j of each peer's
 * slot and stores it into that peer's slab. Each line carries its own flag:
 * one NVLink trip per call, where ok_push.cu pays a barrier's round trip and
 * a copy out of the staging buffer.
 *
 * Rank 0 only receives, so nothing tells a sender that rank 0 finished
 * reading a half of its slot: rank 0's blocks acknowledge round e-1 into the
 * senders' ack tables as they start round e, and a sender's block waits for
 * the acknowledgement of round e-2 before it writes round e (pkb_ll.cuh).
 * Back to back, that one is long in: the wait is a local load.
 *
 * Large tensors take several rounds of one line per thread; they work at any
 * size, but the flags double the bytes sent: past a few hundred KiB
 * ok_push.cu is faster.
 *
 * Traffic: rank 0 receives (W-1) x 2 x M*N*e bytes.
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
#define MAX_WORLD 64
#define ROOT 0

__global__ void __launch_bounds__(THREADS)
gather_ll(pkb_dev_comm comm, pkb_ll ll, const void *in, char *out, int64_t bytes)
{
	__shared__ int ranks[MAX_WORLD];   /* rank 0: its senders; the others: rank 0 */
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
		if (me != ROOT) {
			if (!pkb_ll_wait_ack(comm, ll, ranks, 1, e))
				return;
			if (live) {
				uint64_t v = pkb_ll_load(in, bytes, i);
				pkb_ll_put(pkb_ll_line(ll, ROOT, e, me, j), v, e);
				pkb_ll_store(out, bytes, i, v);
			}
		} else {
			pkb_ll_ack(comm, ll, ranks, w - 1, e);   /* round e-1 is read */
			if (live) {
				pkb_ll_store(out + ROOT * bytes, bytes, i, pkb_ll_load(in, bytes, i));
				for (int k = 0; k < w - 1 && ok; k++) {
					int s = ranks[k];
					uint64_t v;
					ok = pkb_ll_get(comm, pkb_ll_line(ll, ROOT, e, s, j), e, &v);
					if (ok)
						pkb_ll_store(out + s * bytes, bytes, i, v);
				}
			}
		}
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > MAX_WORLD)
		return 1;
	return pkb_ll_init(ctx, ctx->in[0].bytes, ctx->world, THREADS, MAX_BLOCKS);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_ll_state *s = (struct pkb_ll_state *)ctx->user;
	gather_ll<<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->ll, ctx->in[0].data, (char *)ctx->out[0].data,
		(int64_t)ctx->in[0].bytes);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ll_fini(ctx);
}
