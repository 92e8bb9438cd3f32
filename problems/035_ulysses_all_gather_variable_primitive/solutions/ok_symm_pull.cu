/*
 * 035_ulysses_all_gather_variable_primitive, known-good: the row counts
 * exchanged once in pkb_init, then a one-shot pull all-gather of uneven
 * blocks over symmetric memory.
 *
 * The shapes are fixed for an instance, so pkb_init all-gathers every rank's
 * row count through the harness (host_allgather) and sizes the staging
 * buffer for the largest block. Each call, every rank copies x into its own
 * symmetric staging buffer and, from the same loads, into its own rows of the
 * output; meets the same thread block on every rank (pkb_barrier_block);
 * then reads every peer p's staging buffer over NVLink straight into p's
 * rows of the output.
 *
 * Written in the style of 034's ok_symm_pull.cu, with a unit count and a
 * first output unit per rank (dst_at). Blocks split the units of the
 * largest block, so the grid and the rounds are the same on every rank;
 * block b owns the same range of units of every rank's block (cut at that
 * block's end), so its barrier covers exactly what it reads. Rounds of
 * 128 KiB per block and barrier, the staging of round i overlapping the
 * pulls of round i-1; two halves by call parity, so no trailing barrier;
 * rank r reads rank r+1 first, so each rank is read by one peer per step.
 *
 * Units: 16 bytes when a row (N*e bytes) allows, else the largest power of
 * two that divides it: every rank's rows then start on a unit.
 *
 * Traffic: each rank reads (total - m_r) * N*e bytes from its peers.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_copy.cuh"

PKB_SOLUTION;

#define THREADS 512
#define MAX_BLOCKS 264        /* two 512-thread blocks per SM on a 132-SM H200 */
#define PER_BLOCK (THREADS / 2)   /* units a block takes before the grid grows */
#define ROUND (THREADS * 16)  /* units per block and round: 128 KiB of 16 B */
#define MAX_WORLD 64

/* the blocks, in units */
struct layout {
	int64_t nu[MAX_WORLD];      /* units of rank p's x */
	int64_t first[MAX_WORLD];   /* output unit of rank p's first row */
	int64_t most;               /* the largest nu */
};

/* the output unit of unit a of rank p's x: its rows follow ranks 0 .. p-1's */
__device__ __forceinline__ int64_t dst_at(const layout &L, int p, int64_t a)
{
	return L.first[p] + a;
}

struct state {
	pkb_symm stage;       /* two halves of the largest block: call parity */
	size_t half;
	int64_t rows[MAX_WORLD], first[MAX_WORLD];   /* every rank's rows */
	uint32_t *calls;      /* per-block call counters */
};

/* units [a, a+n) of np chunks: v = load(k, u) for every pair (k, u), B of a
 * thread's pairs loaded before any is stored, so that loads from different
 * chunks (peers) are in flight together; then store(k, u, v) */
template <int NT, typename U, typename Load, typename Store>
__device__ __forceinline__ void copy_chunks(int np, int64_t a, int n, Load load, Store store)
{
	const int B = sizeof(U) == 16 ? 6 : 8;   /* what fits in 64 registers */
	int total = np * n;
	for (int j0 = threadIdx.x; j0 < total; j0 += B * NT) {
		U x[B];
		for (int m = 0; m < B; m++) {
			int j = j0 + m * NT;
			if (j < total) {
				int k = j / n;
				x[m] = load(k, a + (j - k * n));
			}
		}
		for (int m = 0; m < B; m++) {
			int j = j0 + m * NT;
			if (j < total) {
				int k = j / n;
				store(k, a + (j - k * n), x[m]);
			}
		}
	}
}

template <typename U>
__global__ void __launch_bounds__(THREADS, 2)
gather_pull(pkb_dev_comm comm, const U *in, U *out, void *const *stage, size_t half,
	    uint32_t *calls, layout L)
{
	__shared__ const U *from[MAX_WORLD];
	__shared__ int rk[MAX_WORLD];
	__shared__ int64_t lim[MAX_WORLD];
	const int me = comm.rank, w = comm.world;
	size_t off = pkb_call_half(calls, half);
	U *mine = (U *)((char *)stage[me] + off);
	if (threadIdx.x < w) {
		/* step k: pull from rank me+1+k */
		int p = (me + 1 + threadIdx.x) % w;
		rk[threadIdx.x] = p;
		lim[threadIdx.x] = L.nu[p];
		from[threadIdx.x] = (const U *)((const char *)stage[p] + off);
	}
	__syncthreads();
	int64_t per = (L.most + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(L.most, per * (int64_t)blockIdx.x), u1 = min(L.most, u0 + per);
	int64_t own = min(u1, L.nu[me]);   /* the end of our units in this range */

	/* stage round a, pull round a - ROUND (staged before the last barrier) */
	for (int64_t a = u0;; a += ROUND) {
		if (a < own)
			copy_chunks<THREADS, U>(1, a, (int)min((int64_t)ROUND, own - a),
				[&](int k, int64_t u) { return in[u]; },
				[&](int k, int64_t u, U v) {
					mine[u] = v;
					out[dst_at(L, me, u)] = v;
				});
		if (a > u0) {
			int64_t c = a - ROUND;
			/* pairs past a peer's block are skipped */
			copy_chunks<THREADS, U>(w - 1, c, (int)min((int64_t)ROUND, u1 - c),
				[&](int k, int64_t u) { return u < lim[k] ? from[k][u] : U(); },
				[&](int k, int64_t u, U v) {
					if (u < lim[k])
						out[dst_at(L, rk[k], u)] = v;
				});
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
	/* the size exchange: once, the shapes are fixed for the instance */
	int64_t rows = ctx->in[0].shape[0], most = 0, total = 0;
	if (ctx->svc->host_allgather(ctx, &rows, s->rows, sizeof rows))
		return 1;
	for (int p = 0; p < ctx->world; p++) {
		s->first[p] = total;
		total += s->rows[p];
		most = s->rows[p] > most ? s->rows[p] : most;
	}
	if (total != ctx->out[0].shape[0])
		return 1;
	size_t row = (size_t)ctx->in[0].shape[1] * pkb_dtype_size(ctx->in[0].dtype);
	s->half = (most * row + 15) & ~(size_t)15;
	if (cudaMalloc(&s->calls, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

template <int B>
static void launch(pkb_ctx *ctx, struct state *s, size_t row)
{
	typedef typename pkb_unit<B>::t U;
	int64_t upr = (int64_t)(row / B);
	layout L;
	L.most = 0;
	for (int p = 0; p < ctx->world; p++) {
		L.nu[p] = s->rows[p] * upr;
		L.first[p] = s->first[p] * upr;
		L.most = L.nu[p] > L.most ? L.nu[p] : L.most;
	}
	int grid = pkb_blocks_for(L.most, PER_BLOCK, MAX_BLOCKS);
	gather_pull<U><<<grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const U *)ctx->in[0].data, (U *)ctx->out[0].data,
		s->stage.peers_dev, s->half, s->calls, L);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (((uintptr_t)ctx->in[0].data | (uintptr_t)ctx->out[0].data) & 15) {
		ctx->svc->log(ctx, "buffers not 16-byte aligned");
		return 1;
	}
	size_t row = (size_t)ctx->in[0].shape[1] * pkb_dtype_size(ctx->in[0].dtype);
	switch (pkb_unit_bytes(row)) {
	case 16: launch<16>(ctx, s, row); break;
	case 8: launch<8>(ctx, s, row); break;
	case 4: launch<4>(ctx, s, row); break;
	case 2: launch<2>(ctx, s, row); break;
	default: launch<1>(ctx, s, row); break;
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
