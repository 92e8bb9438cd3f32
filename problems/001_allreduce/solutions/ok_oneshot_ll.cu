/*
 * 001_allreduce, known-good: one-shot push all-reduce with flagged lines
 * (include/pkb_ll.cuh, NCCL's "LL" protocol), for small tensors: no barrier
 * at all.
 *
 * Thread j of the grid loads line j (8 bytes: 4 bf16/fp16 or 2 fp32) of its
 * input and stores it, beside the round's epoch, into slot `me` of every
 * peer's receive area: one 16-byte NVLink store per peer. An aligned 8-byte
 * word is seen whole or not at all, so a reader that sees this round's epoch
 * also sees the data: each line carries its own flag, and the receiver spins
 * on exactly the lines it needs -- one NVLink trip per call instead of a
 * barrier's two. It then adds the W contributions in rank order in fp32 and
 * rounds once.
 *
 * Back to back: the receive area has two halves, by the epoch's parity.
 * Every rank sends to and receives from every peer in every round, so a half
 * is free again two rounds later (a thread that received round e+1 from a
 * peer knows the peer finished reading round e). Epochs only grow, so a stale
 * line is never taken for a new one (no reset, CUDA-graph friendly: the
 * epoch lives on the device, one counter per block). Large tensors take
 * several rounds of one line per thread.
 *
 * Traffic: each rank sends (W-1) x 2 x M*N*e bytes (the flags double it):
 * the right trade only while latency dominates, up to a few hundred KB.
 * Memory: 2 halves x W sources x (grid x THREADS) x 16 bytes.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ll.cuh"

PKB_SOLUTION;

#ifndef THREADS
#define THREADS 512
#endif
#ifndef MAX_BLOCKS
#define MAX_BLOCKS 264
#endif

template <typename T>
__global__ void __launch_bounds__(THREADS)
allreduce_ll(pkb_dev_comm comm, pkb_ll ll, const void *in, void *out, int64_t bytes)
{
	const int me = comm.rank, w = comm.world;
	const uint32_t e0 = pkb_ll_epochs(ll);
	const int64_t j = (int64_t)blockIdx.x * THREADS + threadIdx.x;
	if (j >= ll.lines)
		return;
	for (uint32_t r = 0; r < ll.rounds; r++) {
		const uint32_t e = e0 + r;
		const int64_t i = r * ll.per_round + j;   /* past the end: padding */
		const uint64_t mine = pkb_ll_load(in, bytes, i);
		/* push: our line into every peer's slot for us */
		for (int k = 1; k < w; k++)
			pkb_ll_put(pkb_ll_line(ll, (me + k) % w, e, me, j), mine, e);
		/* receive and add in rank order */
		float acc[8 / sizeof(T)] = {};
		for (int s = 0; s < w; s++) {
			uint64_t v = mine;
			if (s != me && !pkb_ll_get(comm, pkb_ll_line(ll, me, e, s, j), e, &v))
				return;
			pkb_ll_add<T>(acc, v);
		}
		pkb_ll_store(out, bytes, i, pkb_ll_pack<T>(acc));
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return pkb_ll_init(ctx, ctx->in[0].bytes, ctx->world, THREADS, MAX_BLOCKS);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct pkb_ll_state *s)
{
	allreduce_ll<T><<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->ll, ctx->in[0].data, ctx->out[0].data, (int64_t)ctx->in[0].bytes);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_ll_state *s = (struct pkb_ll_state *)ctx->user;
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
	return pkb_ll_fini(ctx);
}
