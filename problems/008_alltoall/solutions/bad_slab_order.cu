/*
 * 008_alltoall, known-bad: indexes the peer's slab with the peer's rank
 * instead of its own -- rank r fills slab s with x_s[s] (the diagonal)
 * instead of x_s[r]. Right in slab r only.
 *
 * The transport itself is sound: stage the input in symmetric memory, meet
 * every rank (pkb_barrier_block), pull, meet again before the next call may
 * overwrite the staging buffers.
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
__global__ void alltoall_diagonal(pkb_dev_comm comm, const U *in, U *out, void *const *stage,
				  int64_t nu)
{
	const int w = comm.world;
	U *mine = (U *)stage[comm.rank];
	int64_t i0 = blockIdx.x * (int64_t)THREADS + threadIdx.x, step = (int64_t)BLOCKS * THREADS;
	for (int d = 0; d < w; d++)
		for (int64_t i = i0; i < nu; i += step)
			mine[d * nu + i] = in[d * nu + i];
	/* position i of every slab belongs to the same block on every rank, so
	   this block's barrier covers everything it reads */
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int s = 0; s < w; s++) {
		const U *src = (const U *)stage[s] + s * nu;   /* BUG: slab s, not slab rank */
		for (int64_t i = i0; i < nu; i += step)
			out[s * nu + i] = src[i];
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
	size_t slab = ctx->in[0].bytes / ctx->world;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	if (slab % 16 == 0)
		alltoall_diagonal<int4><<<BLOCKS, THREADS, 0, st>>>(
			ctx->dev, (const int4 *)ctx->in[0].data, (int4 *)ctx->out[0].data,
			s->stage.peers_dev, (int64_t)(slab / 16));
	else
		alltoall_diagonal<char><<<BLOCKS, THREADS, 0, st>>>(
			ctx->dev, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
			s->stage.peers_dev, (int64_t)slab);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx) { free(ctx->user); return 0; }
