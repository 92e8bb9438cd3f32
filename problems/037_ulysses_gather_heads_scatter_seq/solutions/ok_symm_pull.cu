/*
 * 037_ulysses_gather_heads_scatter_seq, known-good: one-shot pull over
 * symmetric memory, the sequence split, the padding and the head
 * concatenation done on the way.
 *
 * Chunk d of rank s is positions [d*S, (d+1)*S) of every sequence:
 * x_s[b, d*S + t], B*S runs of one position (8 heads of 64), zeros past T.
 * Rank s packs chunk d != s into slot d of its own symmetric staging buffer
 * (chunk s straight to its place in the output), meets the same thread
 * block on every rank (pkb_barrier_block), then reads slot `rank` of every
 * peer p over NVLink and writes position (b, t) of it to heads [8p, 8p+8)
 * of output position (b, t). Which positions of a chunk are padding depends
 * on the chunk alone, so the receiver writes their zeros itself and never
 * reads them. The reference packs (padding included), exchanges into a
 * scratch buffer and rearranges it after: three copies of the data where
 * this makes two (the staging and the pull).
 *
 * Written in the style of 033's ok_symm_pull.cu: every chunk is addressed
 * by its units 0 .. nu-1 in the same order on both sides (src_at: where
 * unit a of the chunk for rank d lies in the input, -1 in the padding;
 * dst_at: where unit a of the chunk from rank p goes in the output), so
 * block b owns the same range of units of every chunk on every rank and its
 * barrier covers exactly what it reads; rounds of 128 KiB per block and
 * barrier, the staging of round i overlapping the pulls of round i-1; two
 * halves by call parity, so no trailing barrier (a rank reaches call k+2
 * only after every peer met it in call k+1); rank r reads rank r+1 first,
 * so each rank is read by one peer per step.
 *
 * Units: 16 bytes. A position is 512*e bytes.
 *
 * Traffic: each rank reads (W-1) * B*R_r*512*e bytes from its peers (R_r
 * real positions in its chunk) and copies as much locally first.
 */
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_copy.cuh"

PKB_SOLUTION;

#define THREADS 512
#define MAX_BLOCKS 264        /* two 512-thread blocks per SM on a 132-SM H200 */
#define PER_BLOCK (THREADS / 2)   /* units a block takes before the grid grows */
#define ROUND (THREADS * 16)  /* units per block and round: 128 KiB of 16 B */
#define MAX_WORLD 64

/* the chunks, in units: run i = b*S + t of a chunk is position t of the
 * chunk in sequence b */
struct layout {
	int64_t nu;     /* units of one chunk: B*S runs */
	int64_t ru;     /* units of one run: a position, 8*64 elements */
	int64_t t, s;   /* T, positions of x; S, positions of a chunk */
	int64_t slot;   /* units of one staging slot */
	int w;
};

/* the input unit of unit a of the chunk for rank d: position d*S + t of
 * sequence b; -1 past T (the padding) */
__device__ __forceinline__ int64_t src_at(const layout &L, int d, int64_t a)
{
	int64_t i = a / L.ru, b = i / L.s, pos = d * L.s + (i - b * L.s);
	return pos < L.t ? (b * L.t + pos) * L.ru + (a - i * L.ru) : -1;
}

/* the output unit of unit a of the chunk from rank p: heads [8p, 8p+8) of
 * output position i */
__device__ __forceinline__ int64_t dst_at(const layout &L, int p, int64_t a)
{
	int64_t i = a / L.ru;
	return (i * L.w + p) * L.ru + (a - i * L.ru);
}

struct state {
	pkb_symm stage;       /* two halves of W slots: call parity */
	size_t slot, half;
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
a2a_pull(pkb_dev_comm comm, const U *in, U *out, void *const *stage, size_t half,
	 uint32_t *calls, layout L)
{
	__shared__ const U *from[MAX_WORLD];
	__shared__ int rk[MAX_WORLD];
	const int me = comm.rank, w = comm.world;
	size_t off = pkb_call_half(calls, half);
	U *mine = (U *)((char *)stage[me] + off);
	if (threadIdx.x < w) {
		/* step k: stage the chunk for rank me+k, pull from rank me+1+k */
		int p = (me + 1 + threadIdx.x) % w;
		rk[threadIdx.x] = p;
		from[threadIdx.x] = (const U *)((const char *)stage[p] + off) + me * L.slot;
	}
	__syncthreads();
	int64_t per = (L.nu + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(L.nu, per * (int64_t)blockIdx.x), u1 = min(L.nu, u0 + per);

	/* stage round a, pull round a - ROUND (staged before the last barrier) */
	for (int64_t a = u0;; a += ROUND) {
		if (a < u1)
			copy_chunks<THREADS, U>(w, a, (int)min((int64_t)ROUND, u1 - a),
				[&](int k, int64_t u) {
					int64_t i = src_at(L, (me + k) % w, u);
					return i < 0 ? U() : in[i];   /* zeros in the padding */
				},
				[&](int k, int64_t u, U v) {
					if (k == 0)   /* our own chunk: straight to its place */
						out[dst_at(L, me, u)] = v;
					else
						mine[((me + k) % w) * L.slot + u] = v;
				});
		if (a > u0) {
			int64_t c = a - ROUND;
			copy_chunks<THREADS, U>(w - 1, c, (int)min((int64_t)ROUND, u1 - c),
				[&](int k, int64_t u) { return src_at(L, me, u) < 0 ? U() : from[k][u]; },
				[&](int k, int64_t u, U v) { out[dst_at(L, rk[k], u)] = v; });
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
	/* a chunk: B*S positions, a W-th of the output */
	s->slot = (ctx->out[0].bytes / ctx->world + 15) & ~(size_t)15;
	s->half = ctx->world * s->slot;
	if (cudaMalloc(&s->calls, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (((uintptr_t)ctx->in[0].data | (uintptr_t)ctx->out[0].data) & 15) {
		ctx->svc->log(ctx, "buffers not 16-byte aligned");
		return 1;
	}
	layout L;
	L.nu = (int64_t)(ctx->out[0].bytes / ctx->world / 16);
	L.t = ctx->in[0].shape[1];
	L.s = ctx->out[0].shape[1];
	L.ru = L.nu / (ctx->in[0].shape[0] * L.s);
	L.slot = (int64_t)(s->slot / 16);
	L.w = ctx->world;
	int grid = pkb_blocks_for(L.nu, PER_BLOCK, MAX_BLOCKS);
	a2a_pull<int4><<<grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const int4 *)ctx->in[0].data, (int4 *)ctx->out[0].data,
		s->stage.peers_dev, s->half, s->calls, L);
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
