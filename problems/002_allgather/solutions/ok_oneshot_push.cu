/*
 * 002_allgather, known-good: one-shot push all-gather over symmetric memory.
 *
 * Every rank reads its input once and stores it into slot `rank` of every
 * peer's symmetric staging buffer over NVLink (and into its own slab of the
 * output), meets the same thread block on every rank (pkb_barrier_block),
 * then copies the W-1 slots it received from its local staging buffer into
 * its output. NVLink stores are fire-and-forget: a thread issues them all
 * without waiting for a round trip, which is why push tends to beat pull
 * where latency matters; the price is a local copy of W-1 slabs after the
 * transfer, at HBM speed.
 *
 * Block b owns the same range of every slab on every rank, so its barrier
 * covers exactly the data it copies out. Large ranges go in rounds of 128 KiB
 * per block, one barrier per round: the pushes of round i overlap the local
 * copy-out of round i-1.
 *
 * Back-to-back calls: the staging buffer has two halves, used by alternate
 * calls (a per-block call counter gives the parity, the same on every rank).
 * A rank that runs ahead into call k+1 pushes into the other half while a
 * peer may still copy out of call k's; it can only reach call k+2 after every
 * peer has met it in a barrier of call k+1, i.e. after every peer finished
 * call k. So no trailing barrier: one barrier per call at small sizes.
 *
 * Units: 16 bytes when the slab size allows (then every slab starts 16-byte
 * aligned), else the largest power of two that divides it.
 *
 * Traffic: each rank writes (W-1) * M*N*e bytes into its peers and copies as
 * much locally afterwards.
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

struct state {
	pkb_symm stage;       /* two halves of W slots: call parity */
	size_t slot, half;
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

template <typename U>
__global__ void __launch_bounds__(THREADS, 2)
allgather_push(pkb_dev_comm comm, const U *in, U *out, void *const *stage, size_t slot,
	       size_t half, uint32_t *calls, int64_t nu)
{
	__shared__ U *dst[MAX_WORLD];
	__shared__ const U *slots[MAX_WORLD];
	__shared__ U *slabs[MAX_WORLD];
	const int me = comm.rank, w = comm.world;
	size_t off = pkb_call_half(calls, half);
	const char *mine = (const char *)stage[me] + off;
	/* dst[0]: our own slab of the output; dst[k]: our slot at rank me+k, so
	   that each rank is written by one peer per step. slots[k] -> slabs[k]:
	   what rank me+1+k pushed to us, and where it goes. */
	if (threadIdx.x < w) {
		int p = (me + threadIdx.x) % w;
		dst[threadIdx.x] = p == me ? out + me * nu
					   : (U *)((char *)stage[p] + off + me * slot);
		int s = (me + 1 + threadIdx.x) % w;
		slots[threadIdx.x] = (const U *)(mine + s * slot);
		slabs[threadIdx.x] = out + s * nu;
	}
	__syncthreads();
	int64_t per = (nu + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(nu, per * (int64_t)blockIdx.x), u1 = min(nu, u0 + per);

	/* push round a, copy out round a - ROUND (landed before the last barrier) */
	for (int64_t a = u0;; a += ROUND) {
		if (a < u1)
			fanout_units(dst, w, a, in + a, (int)min((int64_t)ROUND, u1 - a));
		if (a > u0) {
			int64_t c = a - ROUND;
			pkb_copy_many<THREADS>(slabs, slots, w - 1, c,
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
	s->slot = (ctx->in[0].bytes + 15) & ~(size_t)15;
	s->half = ctx->world * s->slot;
	if (cudaMalloc(&s->calls, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

template <int B>
static void launch(pkb_ctx *ctx, struct state *s)
{
	typedef typename pkb_unit<B>::t U;
	int64_t nu = (int64_t)(ctx->in[0].bytes / B);
	int grid = pkb_blocks_for(nu, PER_BLOCK, MAX_BLOCKS);
	allgather_push<U><<<grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const U *)ctx->in[0].data, (U *)ctx->out[0].data,
		s->stage.peers_dev, s->slot, s->half, s->calls, nu);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (((uintptr_t)ctx->in[0].data | (uintptr_t)ctx->out[0].data) & 15) {
		ctx->svc->log(ctx, "buffers not 16-byte aligned");
		return 1;
	}
	switch (pkb_unit_bytes(ctx->in[0].bytes)) {
	case 16: launch<16>(ctx, s); break;
	case 8: launch<8>(ctx, s); break;
	case 4: launch<4>(ctx, s); break;
	case 2: launch<2>(ctx, s); break;
	default: launch<1>(ctx, s); break;
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
