/*
 * 004_reduce, known-good: two-shot reduce -- a reduce-scatter among the
 * non-root ranks, then a gather to the root -- over symmetric memory.
 *
 * The data is cut into W-1 parts, one per non-root rank q.
 *   1. Every rank pushes part q of its input into slot `rank` of rank q's
 *      symmetric staging buffer over NVLink; a non-root rank also copies
 *      its input into its output (it returns its input: the original's
 *      quirk). Barrier.
 *   2. Rank q adds its own part q and the W-1 slots it received, in fp32,
 *      and rounds once into its own slot q. Barrier.
 *   3. The root reads part q from slot q of rank q, straight into its
 *      output.
 * The root sends and receives M*N*e bytes, every other rank receives M*N*e
 * and sends (W-2)/(W-1) of that: the bytes per link of NCCL's pipelined
 * ring, in two hops instead of W-1. Two barriers per round, so for small
 * tensors ok_oneshot_pull.cu (one) is faster; at W = 2 this is a detour.
 *
 * Block b owns the same 16-byte units on every rank, and each round of a
 * block (128 KiB) is cut into the W-1 parts, so every NVLink stays busy. The
 * root's step 3 for round i-1 overlaps step 1 of round i. The tensor is flat:
 * when M*N is not a multiple of the vector width the last unit is partial,
 * and its block handles it element by element in every step.
 *
 * Back-to-back calls: the staging buffer has two halves, used by alternate
 * calls (a per-block call counter gives the parity, the same on every rank).
 * A rank can only reach call k+2, and overwrite call k's half, after every
 * peer met it in a barrier of call k+1, i.e. finished call k. No trailing
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
	pkb_symm stage;       /* two halves of W slots: call parity */
	size_t slot, half;
	uint32_t *calls;      /* per-block call counters */
};

/* Part j (0 .. W-2) of the round [a, a+n) belongs to non-root rank root+1+j. */
__device__ __forceinline__ void part_of(int64_t a, int n, int w, int j, int64_t *pa, int *pn)
{
	int sub = (n + w - 2) / (w - 1);
	int lo = min(n, j * sub);
	*pa = a + lo;
	*pn = min(n - lo, sub);
}

template <typename T>
__global__ void __launch_bounds__(THREADS, 1)
reduce_twoshot(pkb_dev_comm comm, int root, const T *in, T *out, void *const *stage,
	       size_t slot, size_t half, uint32_t *calls, int64_t elems)
{
	__shared__ T *src[MAX_WORLD];
	const int me = comm.rank, w = comm.world;
	const int mypart = (me - root - 1 + w) % w;   /* a non-root's part */
	size_t off = pkb_call_half(calls, half);
	char *mine = (char *)stage[me] + off;
	/* step 2's sources: our input, then the slots the peers pushed */
	if (threadIdx.x < w)
		src[threadIdx.x] = threadIdx.x == me ? (T *)in : (T *)(mine + threadIdx.x * slot);
	__syncthreads();
	int64_t bytes = elems * (int64_t)sizeof(T);
	int64_t nu = (bytes + 15) >> 4;
	int64_t per = (nu + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(nu, per * (int64_t)blockIdx.x), u1 = min(nu, u0 + per);

	for (int64_t a = u0;; a += ROUND) {
		int n = (int)min((int64_t)ROUND, u1 - a);
		if (a < u1) {
			/* 1. part j of our input to slot `me` of its owner; a non-root
			   also keeps its input as its output */
			for (int t = 0; t < w - 1; t++) {
				int j = (t + blockIdx.x) % (w - 1);   /* spread the blocks */
				int q = (root + 1 + j) % w;
				int64_t pa;
				int pn;
				part_of(a, n, w, j, &pa, &pn);
				void *push = q == me ? NULL : (char *)stage[q] + off + me * slot;
				if (me == root)
					pkb_copy_flat<THREADS>(push, NULL, in, pa, pn, bytes);
				else
					pkb_copy_flat<THREADS>(out, push, in, pa, pn, bytes);
			}
		}
		if (me == root && a > u0) {
			/* 3. (round a - ROUND) part j from slot q of rank q */
			int64_t c = a - ROUND;
			for (int t = 0; t < w - 1; t++) {
				int j = (t + blockIdx.x) % (w - 1);
				int q = (root + 1 + j) % w;
				int64_t pa;
				int pn;
				part_of(c, (int)min((int64_t)ROUND, u1 - c), w, j, &pa, &pn);
				const char *sum = (const char *)stage[q] + off + q * slot;
				pkb_copy_flat<THREADS>(out, NULL, sum, pa, pn, bytes);
			}
		}
		if (a >= u1 || !pkb_barrier_block(comm, blockIdx.x))
			break;
		if (me != root) {
			/* 2. our part: input + the W-1 pushed slots, into slot `me` */
			int64_t pa;
			int pn;
			part_of(a, n, w, mypart, &pa, &pn);
			pkb_sum_flat<THREADS>((T *)(mine + me * slot), src, w, pa, pn, elems);
		}
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
	s->slot = (ctx->in[0].bytes + 15) & ~(size_t)15;
	s->half = ctx->world * s->slot;
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
	reduce_twoshot<T><<<grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (int)pkb_param_get(ctx, "dst", 0), (const T *)ctx->in[0].data,
		(T *)ctx->out[0].data, s->stage.peers_dev, s->slot, s->half, s->calls,
		ctx->in[0].numel);
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
