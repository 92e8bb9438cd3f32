/*
 * 007_reducescatter, known-good: one-shot push reduce-scatter over
 * symmetric memory.
 *
 * Every rank reads chunk d != rank of its (W*M, N) input and stores it into
 * slot `rank` of rank d's symmetric staging buffer over NVLink, meets the
 * same thread block on every rank (pkb_barrier_block), then adds its own
 * chunk and the W-1 slots it received -- all local reads -- in fp32 and
 * rounds once into its output. NVLink stores are fire-and-forget, so a
 * thread issues them all without waiting for a round trip; compared with
 * ok_oneshot_pull.cu there is no staging copy, the reduction reads local HBM.
 * (Reduce-scatter has no second shot: each rank must receive (W-1) chunks
 * whatever the schedule; push and pull are the two ways to move them.)
 *
 * Block b owns the same range of every chunk on every rank, so its barrier
 * covers exactly the data it reduces. Large ranges go in rounds of 128 KiB
 * per block, one barrier per round: the pushes of round i overlap the local
 * reduction of round i-1. Rank r pushes to rank r+1 first, so at every step
 * each rank is written by one peer.
 *
 * Back-to-back calls: the staging buffer has two halves, used by alternate
 * calls (a per-block call counter gives the parity, the same on every rank).
 * A rank can only reach call k+2, and overwrite call k's half, after every
 * peer met it in a barrier of call k+1, i.e. finished call k. No trailing
 * barrier.
 *
 * Units: 16 bytes when the chunk size allows (then every chunk starts 16-byte
 * aligned), else the largest power of two that divides it.
 *
 * Traffic: each rank writes (W-1) * M*N*e bytes into its peers.
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
	pkb_symm stage;       /* two halves of W slots: call parity */
	size_t slot, half;
	uint32_t *calls;      /* per-block call counters */
};

template <typename T, int VEC>
__global__ void __launch_bounds__(THREADS, 1)
reducescatter_push(pkb_dev_comm comm, const T *in, T *out, void *const *stage, size_t slot,
		   size_t half, uint32_t *calls, int64_t nu)
{
	typedef typename pkb_unit<VEC * sizeof(T)>::t U;
	__shared__ const T *sum[MAX_WORLD];
	__shared__ const U *src[MAX_WORLD];
	__shared__ U *dst[MAX_WORLD];
	const int me = comm.rank, w = comm.world;
	size_t off = pkb_call_half(calls, half);
	const char *mine = (const char *)stage[me] + off;
	const U *x = (const U *)in;
	if (threadIdx.x < w) {
		/* sum[k]: chunk `me` of rank me+k, in our slot me+k (k = 0: our
		   own input) */
		int p = (me + threadIdx.x) % w;
		sum[threadIdx.x] = p == me ? in + me * nu * VEC : (const T *)(mine + p * slot);
		/* our chunk d = me+1+k goes to slot `me` of rank d */
		int d = (me + 1 + threadIdx.x) % w;
		src[threadIdx.x] = x + d * nu;
		dst[threadIdx.x] = (U *)((char *)stage[d] + off + me * slot);
	}
	__syncthreads();
	int64_t per = (nu + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(nu, per * (int64_t)blockIdx.x), u1 = min(nu, u0 + per);

	/* push round a, reduce round a - ROUND (landed before the last barrier) */
	for (int64_t a = u0;; a += ROUND) {
		if (a < u1)
			pkb_copy_many<THREADS>(dst, src, w - 1, a,
					       (int)min((int64_t)ROUND, u1 - a));
		if (a > u0) {
			int64_t c = a - ROUND;
			pkb_sum_units<THREADS, T, VEC>(out, sum, w, c,
						       (int)min((int64_t)ROUND, u1 - c));
		}
		if (a >= u1 || !pkb_barrier_block(comm, blockIdx.x))
			break;
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
	s->slot = (ctx->out[0].bytes + 15) & ~(size_t)15;
	s->half = ctx->world * s->slot;
	if (cudaMalloc(&s->calls, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

template <typename T, int VEC>
static void launch(pkb_ctx *ctx, struct state *s)
{
	int64_t nu = ctx->out[0].numel / VEC;
	int grid = pkb_blocks_for(nu, PER_BLOCK, MAX_BLOCKS);
	reducescatter_push<T, VEC><<<grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (T *)ctx->out[0].data,
		s->stage.peers_dev, s->slot, s->half, s->calls, nu);
}

template <typename T>
static void launch_typed(pkb_ctx *ctx, struct state *s)
{
	switch (pkb_unit_bytes(ctx->out[0].bytes)) {
	case 16: launch<T, 16 / sizeof(T)>(ctx, s); break;
	case 8: launch<T, 8 / sizeof(T)>(ctx, s); break;
	case 4: launch<T, 4 / sizeof(T)>(ctx, s); break;
	default: launch<T, 1>(ctx, s); break;   /* 2-byte T, odd M*N */
	}
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (((uintptr_t)ctx->in[0].data | (uintptr_t)ctx->out[0].data) & 15) {
		ctx->svc->log(ctx, "buffers not 16-byte aligned");
		return 1;
	}
	switch (ctx->out[0].dtype) {
	case PKB_BF16: launch_typed<__nv_bfloat16>(ctx, s); break;
	case PKB_FP16: launch_typed<__half>(ctx, s); break;
	case PKB_FP32: launch_typed<float>(ctx, s); break;
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
