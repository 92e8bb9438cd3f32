/*
 * 004_reduce, known-good: reduce on raw data with an "empty" value
 * (include/pkb_lamport.cuh, TensorRT-LLM's "Lamport" protocol): no barrier,
 * no flag on the wire, one hop for small tensors and two for large ones.
 *
 * Every rank but the root (`dst`) stores its input into its output (a
 * non-root returns its input: the original's quirk).
 *
 * One hop (below RELAY_MIN bytes): thread j of the grid on every other rank
 * stores 16-byte unit j of its input into its slot of the root's area;
 * thread j of the root takes the W-1 units at once (spinning until no
 * element is "empty", and emptying them behind) and adds them and its own in
 * rank order, in fp32, rounded once. The root receives (W-1) x M*N*e bytes.
 *
 * Two hops (from RELAY_MIN bytes up): the units go in runs of RUN (unit j
 * in run r = j / RUN), each summed first on one rank other than the root,
 * its relay (the (r mod (W-1))-th rank after the root): the other non-roots
 * store their units into the relay's area, the relay adds them and its own
 * as they arrive (rank order, rounded once) and stores the partial sum into
 * the root's area, and the root adds it to its own (rounded again: two
 * roundings, within PKB_TOL_SUM(W)). Every link then carries at most M*N*e
 * bytes, for one more NVLink trip: NCCL's chain spends W-1 of them.
 *
 * The root only receives, so its block acknowledges (one unit into every
 * other rank's ack area, pkb_lp_ack) as it starts a call, and every other
 * rank's block takes that acknowledgement before its call ends: no rank
 * writes a half again two calls later before the root began the call
 * between, after it read that half. A relay's area is read before the relay
 * stores the partial sum the root then waits for, so its reuse follows too.
 *
 * Traffic: one hop, the root receives (W-1) x M*N*e; two hops, at most M*N*e
 * reaches the root and leaves each other rank.
 * Memory: 2 halves x (W x M*N*e rounded up to 16 + grid x W x 16) bytes.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
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
#define RUN 1024              /* units (16 KiB): 81 against 86 us at 16 MiB with one block's 256, W = 4 */
#endif

template <typename T, int N>
__global__ void __launch_bounds__(THREADS, 2)   /* two blocks an SM: MAX_BLOCKS resident */
reduce_lamport(pkb_dev_comm comm, pkb_lp lp, int root, const char *in, char *out,
	       int64_t bytes, bool relay)
{
	const int me = comm.rank, w = comm.world;
	const size_t half = pkb_lp_half(lp);
	const int64_t units = (bytes + 15) / 16, stride = (int64_t)gridDim.x * THREADS;
	const int64_t j0 = (int64_t)blockIdx.x * THREADS + threadIdx.x, acks = w * units;
	const uint32_t others = pkb_lp_peers(comm) & ~(1u << root);    /* non-roots but me */
	if (me == root && (int)threadIdx.x < w - 1)
		pkb_lp_ack(comm, lp, half, acks, (root + 1 + threadIdx.x) % w);
	for (int64_t j = j0; j < units; j += stride) {
		const int via = (root + 1 + (int)((j / RUN) % (w - 1))) % w;   /* this unit's relay */
		const uint4 own = pkb_lp_load<T>(in, bytes, j);
		uint4 sum;
		if (me == root) {
			if (!pkb_lp_sum_all<T, N>(comm, pkb_lp_unit(lp, me, half, 0, j), units,
						  relay ? 1u << via : pkb_lp_peers(comm), own, &sum))
				return;
			pkb_lp_store(out, bytes, j, sum);
			continue;
		}
		pkb_lp_store(out, bytes, j, own);
		if (!relay) {
			pkb_lp_put(pkb_lp_unit(lp, root, half, me * units, j), own);
		} else if (me != via) {
			pkb_lp_put(pkb_lp_unit(lp, via, half, me * units, j), own);
		} else {
			if (!pkb_lp_sum_all<T, N>(comm, pkb_lp_unit(lp, me, half, 0, j), units,
						  others, own, &sum))
				return;
			pkb_lp_put(pkb_lp_unit(lp, root, half, me * units, j), pkb_lp_scrub<T>(sum));
		}
	}
	if (me != root && threadIdx.x == 0)
		pkb_lp_take_acks<N>(comm, lp, half, acks, 1u << root);
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
	auto *kernel = ctx->world <= 4 ? reduce_lamport<T, 4> : reduce_lamport<T, 8>;
	kernel<<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->lp, (int)pkb_param_get(ctx, "dst", 0), (const char *)ctx->in[0].data,
		(char *)ctx->out[0].data, (int64_t)ctx->in[0].bytes,
		ctx->in[0].bytes >= (size_t)RELAY_MIN);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_lp_state *s = (struct pkb_lp_state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: launch<__nv_bfloat16>(ctx, s); break;
	case PKB_FP16: launch<__half>(ctx, s); break;
	case PKB_FP32: launch<float>(ctx, s); break;
	default: return 1;
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_lp_fini(ctx);
}
