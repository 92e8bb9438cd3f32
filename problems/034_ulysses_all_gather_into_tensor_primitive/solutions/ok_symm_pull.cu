/*
 * 034_ulysses_all_gather_into_tensor_primitive, known-good: one-shot pull
 * all-gather over symmetric memory.
 *
 * Every rank copies x into its own symmetric staging buffer and, from the
 * same loads, into its own rows of the output; meets the same thread block
 * on every rank (pkb_barrier_block); then reads every peer p's staging
 * buffer over NVLink straight into rows [p*M, (p+1)*M) of its output.
 *
 * Written in the style of 033's ok_symm_pull.cu, the gather case of it: the
 * chunk is the whole input, staged once (not once per destination), and
 * dst_at says where unit a of rank p's chunk goes. Block b owns the same
 * range of units on every rank, so its barrier covers exactly what it reads;
 * rounds of 128 KiB per block and barrier, the staging of round i
 * overlapping the pulls of round i-1; two halves by call parity, so no
 * trailing barrier (a rank reaches call k+2 only after every peer met it in
 * call k+1); rank r reads rank r+1 first, so each rank is read by one peer
 * per step.
 *
 * Units: 16 bytes when the input's size allows, else the largest power of two
 * that divides it: every rank's rows then start on a unit.
 *
 * Traffic: each rank reads (W-1) * M*N*e bytes from its peers.
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

/* the chunks, in units */
struct layout {
	int64_t nu;     /* units of one rank's x */
};

/* the output unit of unit a of rank p's x: rows [p*M, (p+1)*M) */
__device__ __forceinline__ int64_t dst_at(const layout &L, int p, int64_t a)
{
	return p * L.nu + a;
}

struct state {
	pkb_symm stage;       /* two halves of one chunk: call parity */
	size_t half;
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
	const int me = comm.rank, w = comm.world;
	size_t off = pkb_call_half(calls, half);
	U *mine = (U *)((char *)stage[me] + off);
	if (threadIdx.x < w) {
		/* step k: pull from rank me+1+k */
		int p = (me + 1 + threadIdx.x) % w;
		rk[threadIdx.x] = p;
		from[threadIdx.x] = (const U *)((const char *)stage[p] + off);
	}
	__syncthreads();
	int64_t per = (L.nu + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(L.nu, per * (int64_t)blockIdx.x), u1 = min(L.nu, u0 + per);

	/* stage round a, pull round a - ROUND (staged before the last barrier) */
	for (int64_t a = u0;; a += ROUND) {
		if (a < u1)
			copy_chunks<THREADS, U>(1, a, (int)min((int64_t)ROUND, u1 - a),
				[&](int k, int64_t u) { return in[u]; },
				[&](int k, int64_t u, U v) {
					mine[u] = v;
					out[dst_at(L, me, u)] = v;
				});
		if (a > u0) {
			int64_t c = a - ROUND;
			copy_chunks<THREADS, U>(w - 1, c, (int)min((int64_t)ROUND, u1 - c),
				[&](int k, int64_t u) { return from[k][u]; },
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
	s->half = (ctx->in[0].bytes + 15) & ~(size_t)15;
	if (cudaMalloc(&s->calls, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

template <int B>
static void launch(pkb_ctx *ctx, struct state *s)
{
	typedef typename pkb_unit<B>::t U;
	layout L;
	L.nu = (int64_t)(ctx->in[0].bytes / B);
	int grid = pkb_blocks_for(L.nu, PER_BLOCK, MAX_BLOCKS);
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
