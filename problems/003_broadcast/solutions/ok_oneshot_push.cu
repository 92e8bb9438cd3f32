/*
 * 003_broadcast, known-good: one-shot push broadcast over symmetric memory.
 *
 * Rank 0 reads its input once and stores it into its own output and into
 * every peer's symmetric staging buffer over NVLink; all ranks meet
 * (pkb_barrier_block, per thread block); every other rank copies its staging
 * buffer into its output. One hop and one barrier: the latency choice. Rank
 * 0 sends (W-1) * M*N*e bytes, so from a few MiB on ok_scatter_allgather.cu
 * (rank 0 sends each byte once) wins.
 *
 * Block b owns the same 16-byte units on every rank, so its barrier covers
 * exactly the data it copies. Large ranges go in rounds of 128 KiB per block,
 * one barrier per round: the copy-out of round i-1 overlaps rank 0's pushes
 * of round i. The tensor is flat: when M*N*e is not a multiple of 16 the last
 * unit is partial, and its block copies it byte by byte.
 *
 * Back-to-back calls: the staging buffer has two halves, used by alternate
 * calls (a per-block call counter gives the parity, the same on every rank).
 * Rank 0 can only reach call k+2, and overwrite call k's half, after every
 * peer met it in a barrier of call k+1, i.e. finished call k. No trailing
 * barrier.
 */
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_copy.cuh"

PKB_SOLUTION;

#ifndef THREADS
#define THREADS 512
#endif
#ifndef MAX_BLOCKS
#define MAX_BLOCKS 264        /* two 512-thread blocks per SM on a 132-SM H200 */
#endif
#ifndef PER_BLOCK
#define PER_BLOCK (THREADS / 2)   /* units a block takes before the grid grows */
#endif
#ifndef ROUND
#define ROUND (THREADS * 16)  /* units per block and round: 128 KiB of 16 B */
#endif
#define MAX_WORLD 64
#define SRC 0

struct state {
	pkb_symm stage;       /* two halves of `half` bytes: call parity */
	size_t half;
	uint32_t *calls;      /* per-block call counters */
};

/* n units from src to dst[k] + at for k < nd (a table in shared memory),
 * each unit loaded once */
template <typename U>
__device__ __forceinline__ void fanout_units(U *const *dst, int nd, int64_t at, const U *src,
					     int n)
{
	for (int i = threadIdx.x; i < n; i += 4 * THREADS) {
		U x[4];
		for (int u = 0; u < 4; u++)
			if (i + u * THREADS < n)
				x[u] = src[i + u * THREADS];
		for (int k = 0; k < nd; k++) {
			U *d = dst[k] + at;
			for (int u = 0; u < 4; u++)
				if (i + u * THREADS < n)
					d[i + u * THREADS] = x[u];
		}
	}
}

/* 16-byte units [a, a+n) of a flat buffer of `bytes` bytes to dst[k] for
 * k < nd. Unit bytes/16, when partial, is copied byte by byte by the block
 * that owns it. */
__device__ __forceinline__ void fanout_flat(int4 *const *dst, int nd, const char *src,
					    int64_t a, int n, int64_t bytes)
{
	int64_t full = bytes >> 4;
	int nv = (int)max((int64_t)0, min((int64_t)n, full - a));
	fanout_units(dst, nd, a, (const int4 *)src + a, nv);
	if (a <= full && full < a + n)
		for (int64_t j = full * 16 + threadIdx.x; j < bytes; j += THREADS)
			for (int k = 0; k < nd; k++)
				((char *)dst[k])[j] = src[j];
}

__global__ void __launch_bounds__(THREADS, 2)
broadcast_push(pkb_dev_comm comm, const char *in, char *out, void *const *stage,
	       size_t half, uint32_t *calls, int64_t bytes)
{
	__shared__ int4 *dst[MAX_WORLD];
	const int me = comm.rank, w = comm.world;
	size_t off = pkb_call_half(calls, half);
	/* rank 0 writes dst[0 .. W-1]: its output, then rank k's staging;
	   the others copy dst[1] (their staging) to dst[0] (their output) */
	if (threadIdx.x < w) {
		int p = (me + threadIdx.x) % w;
		char *d = p == me ? out : (char *)stage[p] + off;
		if (me != SRC && threadIdx.x == 1)
			d = (char *)stage[me] + off;
		dst[threadIdx.x] = (int4 *)d;
	}
	__syncthreads();
	int64_t nu = (bytes + 15) >> 4;
	int64_t per = (nu + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(nu, per * (int64_t)blockIdx.x), u1 = min(nu, u0 + per);

	/* rank 0 pushes round a; the others copy out round a - ROUND, which
	   landed before the last barrier */
	for (int64_t a = u0;; a += ROUND) {
		if (me == SRC && a < u1)
			fanout_flat(dst, w, in, a, (int)min((int64_t)ROUND, u1 - a), bytes);
		if (me != SRC && a > u0) {
			int64_t c = a - ROUND;
			fanout_flat(dst, 1, (const char *)dst[1], c,
				    (int)min((int64_t)ROUND, u1 - c), bytes);
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
	s->half = (ctx->in[0].bytes + 15) & ~(size_t)15;
	if (cudaMalloc(&s->calls, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	int64_t bytes = (int64_t)ctx->in[0].bytes;
	if (((uintptr_t)ctx->in[0].data | (uintptr_t)ctx->out[0].data) & 15) {
		ctx->svc->log(ctx, "buffers not 16-byte aligned");
		return 1;
	}
	int grid = pkb_blocks_for((bytes + 15) / 16, PER_BLOCK, MAX_BLOCKS);
	broadcast_push<<<grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
		s->stage.peers_dev, s->half, s->calls, bytes);
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
