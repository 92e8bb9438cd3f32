/*
 * 007_reducescatter, known-good: one-shot reduce-scatter with flagged lines
 * (include/pkb_ll.cuh, NCCL's "LL" protocol), for small tensors: no barrier.
 *
 * Thread j of the grid loads line j (8 bytes) of every chunk d != me of its
 * (W*M, N) input and stores it, beside the round's epoch, into slot `me` of
 * rank d's receive area: one 16-byte NVLink store per peer. It then adds, in
 * rank order and in fp32, line j of its own chunk `me` and of each peer's
 * slot in its own area (waiting for each), and rounds once. Each line carries
 * its own flag: one NVLink trip per call, where ok_oneshot_push.cu pays a
 * barrier's round trip. Every rank sends to and receives from every peer in
 * every round, so a half of the area is free again two rounds later without
 * an acknowledgement (pkb_ll.cuh).
 *
 * A line holds 4 bf16/fp16 or 2 fp32 elements: a chunk starts on an element
 * boundary, so lines never split one. Large chunks take several rounds of
 * one line per thread; they work at any size, but the flags double the
 * bytes sent: past a few hundred KiB ok_oneshot_push.cu is faster.
 *
 * Traffic: each rank sends (W-1) x 2 x M*N*e bytes.
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
#define MAX_BLOCKS 264        /* two 512-thread blocks per SM on a 132-SM H200 */
#endif

template <typename T>
__global__ void __launch_bounds__(THREADS)
reducescatter_ll(pkb_dev_comm comm, pkb_ll ll, const char *in, char *out, int64_t chunk)
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
			pkb_ll_put(pkb_ll_line(ll, d, e, me, j), pkb_ll_load(in + d * chunk, chunk, i), e);
		}
		float acc[8 / sizeof(T)] = {};
		for (int s = 0; s < w; s++) {
			uint64_t v;
			if (s == me)
				v = pkb_ll_load(in + me * chunk, chunk, i);
			else if (!pkb_ll_get(comm, pkb_ll_line(ll, me, e, s, j), e, &v))
				return;
			pkb_ll_add<T>(acc, v);
		}
		pkb_ll_store(out, chunk, i, pkb_ll_pack<T>(acc));
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return pkb_ll_init(ctx, ctx->in[0].bytes / ctx->world, ctx->world, THREADS, MAX_BLOCKS);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct pkb_ll_state *s)
{
	reducescatter_ll<T><<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->ll, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
		(int64_t)(ctx->in[0].bytes / ctx->world));
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
