/*
 * 007_reducescatter, known-good: one-shot reduce-scatter on raw data with an
 * "empty" value (include/pkb_lamport.cuh, TensorRT-LLM's "Lamport"
 * protocol), for small tensors: no barrier, no flag on the wire.
 *
 * The (W*M, N) input is W chunks of c 16-byte units (the last one short when
 * a chunk's bytes are not a multiple of 16; a chunk starts on an element, so
 * a unit never splits one). Thread j of the grid stores unit j of chunk d
 * into slot `me` of rank d's area, for every peer d: one NVLink store per
 * peer, each load just before its store. It then takes unit j of every
 * peer's slot in its own area at once (spinning until no element is
 * "empty", the W-1 loads in flight together, and emptying them behind),
 * adds the W contributions in rank order in fp32, its own chunk `me` read
 * from its input, and rounds once. One NVLink trip per call, like
 * ok_ll_push.cu, at half its bytes, and no barrier's round trip, where
 * ok_oneshot_push.cu pays one.
 *
 * Loading the W-1 units first and storing them after read 17.9 against 16.7
 * us at 1 MiB, W = 4 (session 9): stores spread out as their loads return
 * do better than one burst. The kernel holds a unit of every rank in
 * registers (the takes): it is built for W <= 4 and W <= 8 (N), and refuses
 * more.
 *
 * Back to back: two halves by call parity; every rank receives from every
 * peer in every call, so a half is free again two calls later
 * (pkb_lamport.cuh).
 *
 * Traffic: each rank sends (W-1) x M*N*e bytes.
 * Memory: 2 halves x W sources x c x 16 bytes.
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
#define THREADS 256           /* more, smaller blocks: 0.1-0.4 us less than 512, W = 4 */
#endif
#ifndef MAX_BLOCKS
#define MAX_BLOCKS 264        /* all resident: a block waits for its peers' same block */
#endif

template <typename T, int N>
__global__ void __launch_bounds__(THREADS, 2)   /* two blocks an SM: MAX_BLOCKS resident */
reducescatter_lamport(pkb_dev_comm comm, pkb_lp lp, const char *in, char *out, int64_t chunk)
{
	const int me = comm.rank, w = comm.world;
	const size_t half = pkb_lp_half(lp);
	const int64_t units = (chunk + 15) / 16, stride = (int64_t)gridDim.x * THREADS;
	const int64_t j0 = (int64_t)blockIdx.x * THREADS + threadIdx.x;
	for (int64_t j = j0; j < units; j += stride)
		for (int k = 1; k < w; k++) {
			int d = (me + k) % w;
			pkb_lp_put(pkb_lp_unit(lp, d, half, me * units, j),
				   pkb_lp_load<T>(in + d * chunk, chunk, j));
		}
	for (int64_t j = j0; j < units; j += stride) {
		uint4 sum;
		if (!pkb_lp_sum_all<T, N>(comm, pkb_lp_unit(lp, me, half, 0, j), units,
					  pkb_lp_peers(comm), pkb_lp_load<T>(in + me * chunk, chunk, j), &sum))
			return;
		pkb_lp_store(out, chunk, j, sum);
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > 8)   /* a unit of every rank in registers: built for W <= 8 */
		return 1;
	return pkb_lp_init(ctx, (int64_t)(ctx->in[0].bytes / ctx->world + 15) / 16, ctx->world,
			   false, THREADS, MAX_BLOCKS);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct pkb_lp_state *s)
{
	auto *kernel = ctx->world <= 4 ? reducescatter_lamport<T, 4> : reducescatter_lamport<T, 8>;
	kernel<<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->lp, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
		(int64_t)(ctx->in[0].bytes / ctx->world));
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
