/*
 * 001_allreduce, known-good: two-shot all-reduce on raw data with an
 * "empty" value (include/pkb_lamport.cuh, TensorRT-LLM's "Lamport"
 * protocol): a reduce-scatter, then an all-gather, each one NVLink trip, no
 * barrier, no flag on the wire.
 *
 * The tensor is cut into W chunks of c 16-byte units (the last ones short
 * or empty). Thread j of the grid stores unit j of chunk d into slot `me`
 * of rank d's first area, for every peer d; it takes unit j of its own
 * chunk from the W-1 slots (spinning until no element is "empty", the NaN
 * the areas start full of), adds the W contributions in rank order in
 * fp32, rounds once, stores the result into its output and into slot `me` of
 * every peer's second area; last it takes unit j of every peer's reduced
 * chunk from its second area into the output. Each rank sends 2 (W-1)/W of
 * the tensor, where ok_oneshot_lamport.cu sends W-1 times the tensor, for
 * one more NVLink trip, and half the bytes of ok_twoshot_ll.cu's flagged
 * lines.
 *
 * A sum that is the "empty" NaN travels, and is stored on every rank, as
 * another NaN (pkb_lp_scrub).
 *
 * Its takes go one slot at a time: with the W-1 loads in flight together
 * (pkb_lp_take_all) and the reduce-scatter's loads issued before its first
 * store, it read 15.0 against 14.3 us at 1 MiB, W = 4 (session 9).
 *
 * Traffic: each rank sends 2 x (W-1)/W x M*N*e bytes.
 * Memory: 2 halves x 2W sources x c x 16 bytes.
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
#define THREADS 128           /* small blocks, more SMs: 11.4 us at 64 KiB, W = 4 (first draft, 512: 12.3) */
#endif
#ifndef MAX_BLOCKS
#define MAX_BLOCKS 264        /* all resident: a block waits for its peers' same block */
#endif

/* 16-byte units of a chunk: a W-th of the tensor's, rounded up */
static int64_t chunk_units(const pkb_ctx *ctx)
{
	int64_t units = (int64_t)(ctx->in[0].bytes + 15) / 16;
	return (units + ctx->world - 1) / ctx->world;
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
allreduce_twoshot_lamport(pkb_dev_comm comm, pkb_lp lp, const char *in, char *out, int64_t c,
			  int64_t bytes)
{
	const int me = comm.rank, w = comm.world;
	const int64_t stride = (int64_t)gridDim.x * THREADS;
	const int64_t j0 = (int64_t)blockIdx.x * THREADS + threadIdx.x;
	/* the first unit of our own chunk in flight while the block reads its call count */
	const uint4 first = pkb_lp_load<T>(in, bytes, me * c + j0);
	const size_t half = pkb_lp_half(lp);
	/* reduce-scatter: unit j of chunk d to rank d, first area (slots 0 .. W-1) */
	for (int64_t j = j0; j < c; j += stride)
		for (int k = 1; k < w; k++) {
			int d = (me + k) % w;
			pkb_lp_put(pkb_lp_unit(lp, d, half, me * c, j),
				   pkb_lp_load<T>(in, bytes, d * c + j));
		}
	for (int64_t j = j0; j < c; j += stride) {
		float acc[16 / sizeof(T)] = {};
		for (int s = 0; s < w; s++) {
			uint4 v;
			if (s == me)
				v = j == j0 ? first : pkb_lp_load<T>(in, bytes, me * c + j);
			else if (!pkb_lp_take<T>(comm, pkb_lp_unit(lp, me, half, s * c, j), &v))
				return;
			pkb_lp_add<T>(acc, v);
		}
		const uint4 sum = pkb_lp_scrub<T>(pkb_lp_pack<T>(acc));
		/* all-gather: our reduced unit to every peer, second area (slots W .. 2W-1) */
		for (int k = 1; k < w; k++)
			pkb_lp_put(pkb_lp_unit(lp, (me + k) % w, half, (w + me) * c, j), sum);
		pkb_lp_store(out, bytes, me * c + j, sum);
	}
	for (int64_t j = j0; j < c; j += stride)
		for (int k = 1; k < w; k++) {
			int s = (me + w - k) % w;
			uint4 v;
			if (!pkb_lp_take<T>(comm, pkb_lp_unit(lp, me, half, (w + s) * c, j), &v))
				return;
			pkb_lp_store(out, bytes, s * c + j, v);
		}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return pkb_lp_init(ctx, chunk_units(ctx), 2 * ctx->world, false, THREADS, MAX_BLOCKS);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct pkb_lp_state *s)
{
	allreduce_twoshot_lamport<T><<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->lp, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
		chunk_units(ctx), (int64_t)ctx->in[0].bytes);
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
