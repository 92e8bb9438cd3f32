/*
 * 002_allgather, known-bad: moves every byte correctly but stacks the slabs
 * in ring order relative to the caller -- slab k holds rank (rank+k) % W, the
 * order a ring pass naturally produces -- instead of slab j = rank j. Right
 * on rank 0 only.
 *
 * The transport itself is sound: stage the input in symmetric memory, meet
 * every rank (pkb_barrier_block), pull the peers' staging buffers, meet again
 * before the next call may overwrite them.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 512
#define BLOCKS 132

struct state { pkb_symm stage; };

template <typename U>
__global__ void allgather_ring_order(pkb_dev_comm comm, const U *in, U *out,
				     void *const *stage, int64_t nu)
{
	U *mine = (U *)stage[comm.rank];
	int64_t i0 = blockIdx.x * (int64_t)THREADS + threadIdx.x, step = (int64_t)BLOCKS * THREADS;
	for (int64_t i = i0; i < nu; i += step)
		mine[i] = in[i];
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	/* position i belongs to the same block on every rank (same grid), so
	   this block's barrier covers everything it reads */
	for (int k = 0; k < comm.world; k++) {
		const U *src = (const U *)stage[(comm.rank + k) % comm.world];
		for (int64_t i = i0; i < nu; i += step)
			out[k * nu + i] = src[i];   /* BUG: slab k instead of slab rank+k */
	}
	pkb_barrier_block(comm, blockIdx.x);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	return ctx->svc->symm_alloc(ctx, ctx->in[0].bytes, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	size_t bytes = ctx->in[0].bytes;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	if (bytes % 16 == 0)
		allgather_ring_order<int4><<<BLOCKS, THREADS, 0, st>>>(
			ctx->dev, (const int4 *)ctx->in[0].data, (int4 *)ctx->out[0].data,
			s->stage.peers_dev, (int64_t)(bytes / 16));
	else
		allgather_ring_order<char><<<BLOCKS, THREADS, 0, st>>>(
			ctx->dev, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
			s->stage.peers_dev, (int64_t)bytes);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx) { free(ctx->user); return 0; }
