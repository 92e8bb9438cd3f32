/*
 * 001_allreduce, known-good: two-shot all-reduce over symmetric memory --
 * a reduce-scatter into symmetric memory, then an all-gather by push.
 *
 * The tensor is cut into W chunks (a multiple of 16 bytes each, the last
 * ones shorter or empty); rank r owns chunk r.
 *   0. Every rank copies its input chunks x != r into its own symmetric
 *      staging buffer. Barrier.
 *   1. Rank r reads chunk r from every peer's staging buffer over NVLink,
 *      adds its own, accumulates in fp32 and rounds once; it writes the sum
 *      into its output and pushes it into chunk r of every peer's staging
 *      buffer -- the very bytes it just read there, which no one else reads.
 *      Barrier.
 *   2. Every rank copies the W-1 reduced chunks it received into its output.
 * Each rank reads (W-1)/W * M*N*e bytes from its peers and writes as much
 * into them: 2 (W-1)/W in all, the ring's volume, against the one-shot's
 * W-1. Two barriers per round instead of one, so below ~1 MiB
 * ok_oneshot_pull.cu wins.
 *
 * Block b owns the same 16-byte units of every chunk on every rank, so its
 * barriers cover exactly the data it touches. Large ranges go in rounds of
 * 128 KiB per block: the staging of round i and the copy-out of round i-1
 * run back to back between the same barriers. When M*N is not a multiple of
 * the vector width, the last unit of the last chunk is partial and its block
 * handles it element by element.
 *
 * Back-to-back calls: the staging buffer has two halves, used by alternate
 * calls (a per-block call counter gives the parity, the same on every rank).
 * A rank can only reach call k+2, and overwrite call k's half (its own or a
 * peer's), after every peer met it in a barrier of call k+1, i.e. finished
 * call k. No trailing barrier.
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
	pkb_symm stage;       /* two halves of W chunks: call parity */
	int64_t chunk;        /* elements per chunk, a multiple of 16 bytes */
	size_t half;
	uint32_t *calls;      /* per-block call counters */
};

template <typename T>
__global__ void __launch_bounds__(THREADS, 1)
allreduce_twoshot(pkb_dev_comm comm, const T *in, T *out, void *const *stage, size_t half,
		  uint32_t *calls, int64_t n, int64_t chunk)
{
	__shared__ const T *src[MAX_WORLD];
	__shared__ T *dst[MAX_WORLD];
	const int me = comm.rank, w = comm.world;
	size_t off = pkb_call_half(calls, half);
	T *mine = (T *)((char *)stage[me] + off);
	/* step 1: src[k] is chunk `me` as rank me+k holds it (k = 0: our
	   input); dst[0] is our output, dst[k] chunk `me` of rank me+k */
	if (threadIdx.x < w) {
		int p = (me + threadIdx.x) % w;
		T *peer = (T *)((char *)stage[p] + off) + me * chunk;
		src[threadIdx.x] = p == me ? in + me * chunk : peer;
		dst[threadIdx.x] = p == me ? out + me * chunk : peer;
	}
	__syncthreads();
	const int E = sizeof(T);
	int64_t cu = chunk * E / 16;   /* units per chunk */
	int64_t per = (cu + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(cu, per * (int64_t)blockIdx.x), u1 = min(cu, u0 + per);
	int64_t mylen = max((int64_t)0, min(chunk, n - me * chunk));

	for (int64_t a = u0;; a += ROUND) {
		/* 0. stage round a; 2. copy out round a - ROUND, pushed before the
		   last barrier */
		for (int k = 1; k < w; k++) {
			int x = (me + k) % w;
			int64_t len = max((int64_t)0, min(chunk, n - x * chunk));
			if (a < u1)
				pkb_copy_flat<THREADS>(mine + x * chunk, NULL, in + x * chunk, a,
						       (int)min((int64_t)ROUND, u1 - a), len * E);
			if (a > u0)
				pkb_copy_flat<THREADS>(out + x * chunk, NULL, mine + x * chunk,
						       a - ROUND,
						       (int)min((int64_t)ROUND, u1 - (a - ROUND)),
						       len * E);
		}
		if (a >= u1 || !pkb_barrier_block(comm, blockIdx.x))
			break;
		/* 1. reduce our chunk, keep it and push it to every peer */
		pkb_sum_flat_to<THREADS, T>(dst, w, src, w, a, (int)min((int64_t)ROUND, u1 - a), mylen);
		if (!pkb_barrier_block(comm, blockIdx.x))
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
	int64_t vec = 16 / (int64_t)pkb_dtype_size(ctx->in[0].dtype);
	int64_t per = (ctx->in[0].numel + ctx->world - 1) / ctx->world;
	s->chunk = (per + vec - 1) / vec * vec;
	s->half = (size_t)(ctx->world * s->chunk) * pkb_dtype_size(ctx->in[0].dtype);
	if (cudaMalloc(&s->calls, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	int64_t cu = s->chunk * (int64_t)sizeof(T) / 16;
	int grid = pkb_blocks_for(cu, PER_BLOCK, MAX_BLOCKS);
	allreduce_twoshot<T><<<grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (T *)ctx->out[0].data, s->stage.peers_dev,
		s->half, s->calls, ctx->in[0].numel, s->chunk);
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
