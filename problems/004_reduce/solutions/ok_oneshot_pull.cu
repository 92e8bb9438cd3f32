/*
 * 004_reduce, known-good: one-shot pull reduce over symmetric memory.
 *
 * Every rank but the root copies its input into its own symmetric staging
 * buffer and into its output (a non-root returns its input: the original's
 * quirk), from the same loads. All ranks meet (pkb_barrier_block, per
 * thread block). The root then reads the W-1 staging buffers over NVLink,
 * adds its own input, accumulates in fp32 and rounds once into its output.
 * One hop, one barrier: the latency choice. The root receives (W-1) * M*N*e
 * bytes, so from a few MiB on ok_twoshot.cu (the root receives each byte
 * once) wins.
 *
 * Block b owns the same 16-byte units on every rank, so its barrier covers
 * exactly the data the root reads. Large ranges go in rounds of 128 KiB per
 * block, one barrier per round: the root's reduction of round i-1 overlaps
 * the staging of round i on the other ranks. The tensor is flat: when M*N is
 * not a multiple of the vector width the last unit is partial, and its block
 * adds it element by element.
 *
 * Back-to-back calls: the staging buffer has two halves, used by alternate
 * calls (a per-block call counter gives the parity, the same on every rank).
 * A rank can only reach call k+2, and overwrite call k's half, after the root
 * met it in a barrier of call k+1, i.e. finished reading call k. No trailing
 * barrier.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_copy.cuh"

PKB_SOLUTION;

#ifndef THREADS
#define THREADS 512
#endif
/* one 512-thread block per SM of an H200: the fp32 sums and the loads in
 * flight behind them take up to 128 registers a thread */
#ifndef MAX_BLOCKS
#define MAX_BLOCKS 132
#endif
#ifndef PER_BLOCK
#define PER_BLOCK (THREADS / 2)   /* units a block takes before the grid grows */
#endif
#ifndef ROUND
#define ROUND (THREADS * 16)  /* units per block and round: 128 KiB of 16 B */
#endif
#define MAX_WORLD 64

struct state {
	pkb_symm stage;       /* two halves of `half` bytes: call parity */
	size_t half;
	uint32_t *calls;      /* per-block call counters */
};

template <typename T>
__global__ void __launch_bounds__(THREADS, 1)
reduce_pull(pkb_dev_comm comm, int root, const T *in, T *out, void *const *stage,
	    size_t half, uint32_t *calls, int64_t elems)
{
	__shared__ T *src[MAX_WORLD];
	const int me = comm.rank, w = comm.world;
	size_t off = pkb_call_half(calls, half);
	if (threadIdx.x < w)   /* the root's sources: its input, the peers' staging */
		src[threadIdx.x] = threadIdx.x == me ? (T *)in
						     : (T *)((char *)stage[threadIdx.x] + off);
	__syncthreads();
	T *mine = (T *)((char *)stage[me] + off);
	int64_t bytes = elems * (int64_t)sizeof(T);
	int64_t nu = (bytes + 15) >> 4;
	int64_t per = (nu + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(nu, per * (int64_t)blockIdx.x), u1 = min(nu, u0 + per);

	/* the others stage round a and meet the root, which then reduces it
	   while they stage round a + ROUND; one barrier per round for all */
	if (me == root) {
		for (int64_t a = u0; a < u1; a += ROUND) {
			if (!pkb_barrier_block(comm, blockIdx.x))
				return;
			pkb_sum_flat<THREADS>(out, src, w, a, (int)min((int64_t)ROUND, u1 - a),
					      elems);
		}
	} else {
		for (int64_t a = u0; a < u1; a += ROUND) {
			pkb_copy_flat<THREADS>(mine, out, in, a, (int)min((int64_t)ROUND, u1 - a),
					       bytes);
			if (!pkb_barrier_block(comm, blockIdx.x))
				return;
		}
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->world > MAX_WORLD)
		return 1;
	s->half = (ctx->in[0].bytes + 15) & ~(size_t)15;
	if (cudaMalloc(&s->calls, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	int64_t nu = (int64_t)(ctx->in[0].bytes + 15) / 16;
	int grid = pkb_blocks_for(nu, PER_BLOCK, MAX_BLOCKS);
	reduce_pull<T><<<grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (int)pkb_param_get(ctx, "dst", 0), (const T *)ctx->in[0].data,
		(T *)ctx->out[0].data, s->stage.peers_dev, s->half, s->calls, ctx->in[0].numel);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (((uintptr_t)ctx->in[0].data | (uintptr_t)ctx->out[0].data) & 15) {
		ctx->svc->log(ctx, "buffers not 16-byte aligned");
		return 1;
	}
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
	struct state *s = (struct state *)ctx->user;
	if (s)
		cudaFree(s->calls);
	free(s);
	return 0;
}
