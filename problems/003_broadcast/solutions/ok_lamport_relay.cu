/*
 * 003_broadcast, known-good: broadcast on raw data with an "empty" value
 * (include/pkb_lamport.cuh, TensorRT-LLM's "Lamport" protocol): no barrier,
 * no flag on the wire, one hop for small tensors and two for large ones.
 *
 * One hop (below RELAY_MIN bytes): thread j of the grid on rank 0 loads
 * 16-byte unit j of its input and stores it into its output and into slot j
 * of every peer's area; thread j of every other rank takes slot j (spinning
 * until no element is "empty", and emptying it behind) into its output.
 * Rank 0 sends (W-1) x M*N*e bytes.
 *
 * Two hops (from RELAY_MIN bytes up): the units go in runs of RUN (unit j
 * in run r = j / RUN) from rank 0 to one peer only, their relay
 * 1 + r mod (W-1), which takes each unit and stores it into the same slot
 * of every other peer, as it arrives. Every link then carries at most
 * M*N*e bytes (rank 0's, and each relay's 1/(W-1) of the tensor to W-2
 * peers), for one more NVLink trip: NCCL's ring spends W-1 of them.
 *
 * Each slot of a peer is written once a call, by rank 0 or by its relay.
 * Rank 0 only sends, so every other rank's block acknowledges (one unit into
 * rank 0's ack area, pkb_lp_ack) as it starts a call, and rank 0's block
 * takes the acknowledgements before its call ends: rank 0 writes a half again
 * two calls later only after every peer's block began the call between,
 * which its last read of that half came before. A relay's writes follow
 * rank 0's data of the same call, so they come after those reads as well.
 *
 * Exact: the "empty" value is one NaN pattern, which travels as another NaN;
 * every other value arrives bit for bit.
 *
 * Traffic: one hop, rank 0 sends (W-1) x M*N*e; two hops, at most M*N*e
 * leaves rank 0 and W-2 / W-1 of M*N*e leaves each other rank.
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
#ifndef RELAY_MIN
#define RELAY_MIN (512 << 10) /* bytes: two hops from here up */
#endif
#ifndef RUN
#define RUN 1024              /* units (16 KiB): 774 against 837 us at 256 MiB with one block's 256, W = 4 */
#endif
#define ROOT 0

template <typename T, int N>
__global__ void __launch_bounds__(THREADS, 2)   /* two blocks an SM: MAX_BLOCKS resident */
broadcast_lamport(pkb_dev_comm comm, pkb_lp lp, const char *in, char *out, int64_t bytes,
		  bool relay)
{
	const int me = comm.rank, w = comm.world;
	const size_t half = pkb_lp_half(lp);
	const int64_t units = (bytes + 15) / 16, stride = (int64_t)gridDim.x * THREADS;
	const int64_t j0 = (int64_t)blockIdx.x * THREADS + threadIdx.x;
	if (me != ROOT && threadIdx.x == 0)
		pkb_lp_ack(comm, lp, half, units, ROOT);
	for (int64_t j = j0; j < units; j += stride) {
		const int via = 1 + (int)((j / RUN) % (w - 1));   /* this unit's relay */
		uint4 v;
		if (me == ROOT) {
			v = pkb_lp_load<T>(in, bytes, j);
			if (relay)
				pkb_lp_put(pkb_lp_unit(lp, via, half, 0, j), v);
			else
				for (int k = 1; k < w; k++)
					pkb_lp_put(pkb_lp_unit(lp, (ROOT + k) % w, half, 0, j), v);
		} else {
			if (!pkb_lp_take<T>(comm, pkb_lp_unit(lp, me, half, 0, j), &v))
				return;
			if (relay && me == via)
				for (int k = 1; k < w; k++)
					if ((ROOT + k) % w != me)
						pkb_lp_put(pkb_lp_unit(lp, (ROOT + k) % w, half, 0, j), v);
		}
		pkb_lp_store(out, bytes, j, v);
	}
	if (me == ROOT && threadIdx.x == 0)
		pkb_lp_take_acks<N>(comm, lp, half, units, pkb_lp_peers(comm));
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > 8)   /* acknowledgements of every rank in registers: W <= 8 */
		return 1;
	return pkb_lp_init(ctx, (int64_t)(ctx->in[0].bytes + 15) / 16, 1, true, THREADS, MAX_BLOCKS);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct pkb_lp_state *s)
{
	auto *kernel = ctx->world <= 4 ? broadcast_lamport<T, 4> : broadcast_lamport<T, 8>;
	kernel<<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->lp, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
		(int64_t)ctx->in[0].bytes, ctx->in[0].bytes >= (size_t)RELAY_MIN);
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
