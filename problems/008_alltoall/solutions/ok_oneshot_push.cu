/*
 * 008_alltoall, known-good: one-shot push all-to-all over symmetric memory.
 *
 * Rank s reads slab d of its (W, M, N) input and stores it into slot s of
 * rank d's symmetric staging buffer over NVLink (slab s straight into its own
 * output), meets the same thread block on every rank (pkb_barrier_block),
 * then copies the W-1 slots it received from its local staging buffer into
 * its output. NVLink stores are fire-and-forget: a thread issues them all
 * without waiting for a round trip; the price is a local copy of W-1 slabs
 * after the transfer, at HBM speed (ok_oneshot_pull.cu copies before it
 * instead).
 *
 * Block b owns the same range of every slab on every rank, so its barrier
 * covers exactly the data it copies out. Large ranges go in rounds of 128 KiB
 * per block, one barrier per round: the pushes of round i overlap the local
 * copy-out of round i-1. Rank s writes to rank s+1 first, so at every step
 * each rank is written by one peer.
 *
 * Back-to-back calls: the staging buffer has two halves, used by alternate
 * calls (a per-block call counter gives the parity, the same on every rank).
 * A rank can only reach call k+2, and overwrite call k's half of a peer,
 * after every peer met it in a barrier of call k+1, i.e. finished call k. No
 * trailing barrier.
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

PKB_SOLUTION;

#define THREADS 512
#define MAX_BLOCKS 264        /* two 512-thread blocks per SM on a 132-SM H200 */
#define ROUND (THREADS * 16)  /* units per block and round: 128 KiB of 16 B */
#define MAX_WORLD 64

struct state {
	pkb_symm stage;       /* two halves of W slots: call parity */
	size_t slot, half;
	uint32_t *calls;      /* per-block call counters */
};

template <int B> struct unit_of;
template <> struct unit_of<16> { typedef int4 t; };
template <> struct unit_of<8> { typedef int2 t; };
template <> struct unit_of<4> { typedef int t; };
template <> struct unit_of<2> { typedef short t; };
template <> struct unit_of<1> { typedef char t; };

/* n units from src to dst: four loads in flight per thread before the
 * stores, the ragged end included */
template <typename U>
__device__ __forceinline__ void copy_units(U *dst, const U *src, int n)
{
	for (int i = threadIdx.x; i < n; i += 4 * THREADS) {
		U x[4];
		for (int u = 0; u < 4; u++)
			if (i + u * THREADS < n)
				x[u] = src[i + u * THREADS];
		for (int u = 0; u < 4; u++)
			if (i + u * THREADS < n)
				dst[i + u * THREADS] = x[u];
	}
}

/* for k < np: n units from src[k] + at to dst[k] + at (tables in shared
 * memory). The (source, unit) pairs are dealt out over the threads, and a
 * thread loads B of them before storing any, so loads from different
 * sources are in flight together: at small sizes one round trip serves every
 * peer instead of one round trip per peer. */
template <typename U>
__device__ __forceinline__ void copy_many(U *const *dst, const U *const *src, int np,
					  int64_t at, int n)
{
	const int B = sizeof(U) == 16 ? 6 : 8;   /* what fits in 64 registers */
	int total = np * n;
	for (int j0 = threadIdx.x; j0 < total; j0 += B * THREADS) {
		U x[B];
		for (int m = 0; m < B; m++) {
			int j = j0 + m * THREADS;
			if (j < total) {
				int k = j / n;
				x[m] = src[k][at + (j - k * n)];
			}
		}
		for (int m = 0; m < B; m++) {
			int j = j0 + m * THREADS;
			if (j < total) {
				int k = j / n;
				dst[k][at + (j - k * n)] = x[m];
			}
		}
	}
}

template <typename U>
__global__ void __launch_bounds__(THREADS, 2)
alltoall_push(pkb_dev_comm comm, const U *in, U *out, void *const *stage, size_t slot,
	      size_t half, uint32_t *calls, int64_t nu)
{
	__shared__ const U *src[MAX_WORLD], *slots[MAX_WORLD];
	__shared__ U *dst[MAX_WORLD], *slabs[MAX_WORLD];
	const int me = comm.rank, w = comm.world;
	size_t off = pkb_call_half(calls, half);
	const char *mine = (const char *)stage[me] + off;
	if (threadIdx.x < w) {
		/* push: slab d = me+k goes to slot `me` of rank d (k = 0: our
		   own output), so that each rank is written by one peer per step */
		int d = (me + threadIdx.x) % w;
		src[threadIdx.x] = in + d * nu;
		dst[threadIdx.x] = d == me ? out + me * nu
					   : (U *)((char *)stage[d] + off + me * slot);
		/* copy-out: slot s = me+1+k holds rank s's slab for us */
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
			copy_many(dst, src, w, a, (int)min((int64_t)ROUND, u1 - a));
		if (a > u0) {
			int64_t c = a - ROUND;
			copy_many(slabs, slots, w - 1, c, (int)min((int64_t)ROUND, u1 - c));
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
	s->slot = (ctx->in[0].bytes / ctx->world + 15) & ~(size_t)15;
	s->half = ctx->world * s->slot;
	if (cudaMalloc(&s->calls, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

/* the largest unit (16 bytes at most) that divides a slab: it only depends
 * on the shapes, so every rank picks the same one */
static int unit_bytes(size_t slab)
{
	int b = 16;
	while (b > 1 && slab % b)
		b >>= 1;
	return b;
}

/* A block takes THREADS/2 units of each slab before the grid grows (up to
 * MAX_BLOCKS): at small sizes the (peer, unit) pairs of a block then fit in
 * one batch of loads per thread -- one round trip for all peers. */
static int grid_for(int64_t units)
{
	int64_t blocks = (units + THREADS / 2 - 1) / (THREADS / 2);
	return blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : (int)blocks;
}

template <int B>
static void launch(pkb_ctx *ctx, struct state *s)
{
	typedef typename unit_of<B>::t U;
	int64_t nu = (int64_t)(ctx->in[0].bytes / ctx->world / B);
	alltoall_push<U><<<grid_for(nu), THREADS, 0, (cudaStream_t)ctx->stream>>>(
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
	switch (unit_bytes(ctx->in[0].bytes / ctx->world)) {
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
