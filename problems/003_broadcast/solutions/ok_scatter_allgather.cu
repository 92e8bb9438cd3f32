/*
 * 003_broadcast, known-good: broadcast as a scatter then an all-gather, in
 * one kernel with one barrier per round -- the bandwidth choice.
 *
 * The data is cut into W-1 parts, one per non-root rank q. Rank 0 reads its
 * input once, copies it into its own output and pushes part q into rank q's
 * symmetric staging buffer over NVLink (rank 0 sends M*N*e bytes in all,
 * not (W-1) times that). All ranks meet (pkb_barrier_block, per thread
 * block). Then each non-root rank copies its own part out of its staging
 * buffer and pulls every other part from the staging buffer of the rank
 * that holds it, straight into its output. Every rank receives M*N*e bytes
 * and sends at most that: the same bytes per link as NCCL's pipelined ring,
 * in two hops instead of W-1.
 *
 * Block b owns the same 16-byte units on every rank; each round of a block
 * (128 KiB) is cut into the W-1 parts, so every rank keeps all NVLinks busy.
 * The gather of round i-1 overlaps rank 0's scatter of round i. The tensor
 * is flat: when M*N*e is not a multiple of 16 the last unit is partial and
 * is copied byte by byte.
 *
 * Back-to-back calls: the staging buffer has two halves, used by alternate
 * calls (a per-block call counter gives the parity, the same on every rank).
 * A rank can only reach call k+2, and overwrite call k's half, after every
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

/* Part j (0 .. W-2) of the round [a, a+n) belongs to non-root rank SRC+1+j. */
__device__ __forceinline__ void part_of(int64_t a, int n, int w, int j, int64_t *pa, int *pn)
{
	int sub = (n + w - 2) / (w - 1);
	int lo = min(n, j * sub);
	*pa = a + lo;
	*pn = min(n - lo, sub);
}

__global__ void __launch_bounds__(THREADS, 2)
broadcast_two_step(pkb_dev_comm comm, const char *in, char *out, void *const *stage,
		   size_t half, uint32_t *calls, int64_t bytes)
{
	const int me = comm.rank, w = comm.world;
	const int mypart = (me - SRC - 1 + w) % w;   /* a non-root's part */
	size_t off = pkb_call_half(calls, half);
	int64_t nu = (bytes + 15) >> 4;
	int64_t per = (nu + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(nu, per * (int64_t)blockIdx.x), u1 = min(nu, u0 + per);

	/* rank 0 scatters round i while the others gather round i-1, which
	   landed before the last barrier */
	for (int64_t a = u0, prev = -1;; prev = a, a += ROUND) {
		bool more = a < u1;
		if (me == SRC && more) {
			/* part j to rank SRC+1+j, everything to our own output */
			for (int t = 0; t < w - 1; t++) {
				int j = (t + blockIdx.x) % (w - 1);   /* spread the blocks */
				char *peer = (char *)stage[(SRC + 1 + j) % w] + off;
				int64_t pa;
				int pn;
				part_of(a, (int)min((int64_t)ROUND, u1 - a), w, j, &pa, &pn);
				pkb_copy_flat<THREADS>(out, peer, in, pa, pn, bytes);
			}
		} else if (me != SRC && prev >= 0) {
			/* our own part first (local), then the peers' */
			for (int t = 0; t < w - 1; t++) {
				int j = (mypart + t) % (w - 1);
				const char *src = (const char *)stage[(SRC + 1 + j) % w] + off;
				int64_t pa;
				int pn;
				part_of(prev, (int)min((int64_t)ROUND, u1 - prev), w, j, &pa, &pn);
				pkb_copy_flat<THREADS>(out, NULL, src, pa, pn, bytes);
			}
		}
		if (!more || !pkb_barrier_block(comm, blockIdx.x))
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
	broadcast_two_step<<<grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
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
