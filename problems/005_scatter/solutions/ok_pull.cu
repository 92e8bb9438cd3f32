/*
 * 005_scatter, known-good: pull scatter over symmetric memory.
 *
 * Rank 0 copies slab q (q != 0) of its (W, M, N) input into slot q of its
 * own symmetric staging buffer (and slab 0 into its output); all ranks meet
 * (pkb_barrier_block, per thread block); rank q reads slot q of rank 0's
 * staging buffer over NVLink straight into its output. The NVLink reads land
 * in place; the price is a local copy of W-1 slabs on rank 0, the busiest
 * rank, which ok_push.cu moves to the receivers instead.
 *
 * Block b owns the same range of every slab on every rank, so its barrier
 * covers exactly the data it reads. Large ranges go in rounds of 128 KiB per
 * block, one barrier per round: rank 0's staging of round i overlaps the
 * pulls of round i-1.
 *
 * Back-to-back calls: the staging buffer has two halves, used by alternate
 * calls (a per-block call counter gives the parity, the same on every rank).
 * Rank 0 can only reach call k+2, and overwrite call k's half, after every
 * peer met it in a barrier of call k+1, i.e. finished call k. No trailing
 * barrier.
 *
 * Units: 16 bytes when the slab size allows (then every slab starts 16-byte
 * aligned), else the largest power of two that divides it.
 *
 * Traffic: rank 0 serves (W-1) * M*N*e bytes of reads and copies as much
 * locally first.
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
	pkb_symm stage;       /* two halves of W slots: call parity */
	size_t slot, half;
	uint32_t *calls;      /* per-block call counters */
};

template <typename U>
__global__ void __launch_bounds__(THREADS, 2)
scatter_pull(pkb_dev_comm comm, const U *in, U *out, void *const *stage, size_t slot,
	     size_t half, uint32_t *calls, int64_t nu)
{
	__shared__ const U *src[MAX_WORLD];
	__shared__ U *dst[MAX_WORLD];
	const int me = comm.rank, w = comm.world;
	size_t off = pkb_call_half(calls, half);
	char *root = (char *)stage[SRC] + off;   /* slot q: slab q */
	/* rank 0: slab q of its input goes to its slot q, slab 0 to its own
	   output (k = 0) */
	if (threadIdx.x < w) {
		int q = (SRC + threadIdx.x) % w;
		src[threadIdx.x] = in + q * nu;
		dst[threadIdx.x] = q == SRC ? out : (U *)(root + q * slot);
	}
	__syncthreads();
	int64_t per = (nu + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(nu, per * (int64_t)blockIdx.x), u1 = min(nu, u0 + per);

	/* rank 0 stages round a; the others pull round a - ROUND, staged
	   before the last barrier */
	for (int64_t a = u0;; a += ROUND) {
		if (me == SRC && a < u1)
			pkb_copy_many<THREADS>(dst, src, w, a, (int)min((int64_t)ROUND, u1 - a));
		if (me != SRC && a > u0) {
			int64_t c = a - ROUND;
			pkb_copy_units<THREADS>(out + c, (const U *)(root + me * slot) + c,
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
	/* sized from the output: the same (M, N) on every rank */
	s->slot = (ctx->out[0].bytes + 15) & ~(size_t)15;
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
	int64_t nu = (int64_t)(ctx->out[0].bytes / B);
	int grid = pkb_blocks_for(nu, PER_BLOCK, MAX_BLOCKS);
	scatter_pull<U><<<grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
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
	switch (pkb_unit_bytes(ctx->out[0].bytes)) {
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
