/*
 * 001_allreduce, known-good: two-shot all-reduce with flagged lines
 * (include/pkb_ll.cuh, NCCL's "LL" protocol): a reduce-scatter, then an
 * all-gather, each one NVLink trip, no barrier.
 *
 * The tensor is cut into W chunks (of a multiple of 4 elements, so that an
 * 8-byte line never splits an element; the last ones may be short or
 * empty). Thread j of the grid stores line j of chunk d into slot `me` of
 * rank d's first area, for every peer d; it then adds line j of its own
 * chunk from the W contributions, in rank order and in fp32, rounds once,
 * stores the result into its output and into slot `me` of every peer's
 * second area; last it copies line j of every peer's reduced chunk from its
 * own second area into the output. Each rank sends 2 (W-1)/W of the tensor,
 * twice with the flags, where ok_oneshot_ll.cu sends (W-1) times the tensor
 * twice: half the bytes at W = 4 for one more NVLink trip. For the sizes
 * where one-shot's bytes start to count (around 1 MiB per rank at W = 4).
 *
 * Both exchanges are all-to-all, so both areas are free again two rounds
 * later without an acknowledgement (pkb_ll.cuh).
 *
 * Traffic: each rank sends 2 x (W-1)/W x 2 x M*N*e bytes.
 * Memory: 2 halves x 2W sources x (grid x THREADS) x 16 bytes.
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

/* bytes of chunk d of a tensor of `bytes` bytes cut into chunks of `chunk` */
__device__ __forceinline__ int64_t part(int64_t bytes, int64_t chunk, int d)
{
	return max((int64_t)0, min(chunk, bytes - d * chunk));
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
allreduce_twoshot_ll(pkb_dev_comm comm, pkb_ll ll, const char *in, char *out, int64_t chunk,
		     int64_t bytes)
{
	const int me = comm.rank, w = comm.world;
	const uint32_t e0 = pkb_ll_epochs(ll);
	const int64_t j = (int64_t)blockIdx.x * THREADS + threadIdx.x;
	if (j >= ll.lines)
		return;
	const int64_t mine = part(bytes, chunk, me);
	for (uint32_t r = 0; r < ll.rounds; r++) {
		const uint32_t e = e0 + r;
		const int64_t i = r * ll.per_round + j;   /* past the end: padding */
		/* reduce-scatter: line i of chunk d to rank d, first area */
		for (int k = 1; k < w; k++) {
			int d = (me + k) % w;
			pkb_ll_put(pkb_ll_line(ll, d, e, me, j),
				   pkb_ll_load(in + d * chunk, part(bytes, chunk, d), i), e);
		}
		float acc[8 / sizeof(T)] = {};
		for (int s = 0; s < w; s++) {
			uint64_t v;
			if (s == me)
				v = pkb_ll_load(in + me * chunk, mine, i);
			else if (!pkb_ll_get(comm, pkb_ll_line(ll, me, e, s, j), e, &v))
				return;
			pkb_ll_add<T>(acc, v);
		}
		const uint64_t sum = pkb_ll_pack<T>(acc);
		/* all-gather: our reduced line to every peer, second area */
		for (int k = 1; k < w; k++)
			pkb_ll_put(pkb_ll_line(ll, (me + k) % w, e, w + me, j), sum, e);
		pkb_ll_store(out + me * chunk, mine, i, sum);
		for (int k = 1; k < w; k++) {
			int s = (me + w - k) % w;
			uint64_t v;
			if (!pkb_ll_get(comm, pkb_ll_line(ll, me, e, w + s, j), e, &v))
				return;
			pkb_ll_store(out + s * chunk, part(bytes, chunk, s), i, v);
		}
	}
}

/* a chunk: a W-th of the elements, rounded up to a multiple of 4 */
static size_t chunk_bytes(const pkb_ctx *ctx)
{
	int64_t n = ctx->in[0].numel, c = (n + ctx->world - 1) / ctx->world;
	return (size_t)((c + 3) / 4 * 4) * (ctx->in[0].bytes / n);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return pkb_ll_init(ctx, chunk_bytes(ctx), 2 * ctx->world, THREADS, MAX_BLOCKS);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct pkb_ll_state *s)
{
	allreduce_twoshot_ll<T><<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->ll, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
		(int64_t)chunk_bytes(ctx), (int64_t)ctx->in[0].bytes);
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
