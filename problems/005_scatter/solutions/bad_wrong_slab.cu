/*
 * 005_scatter, known-bad: off by one -- rank r receives slab (r+1) % W of
 * rank 0's input instead of slab r.
 *
 * The transport itself is sound: rank 0 stages its input in symmetric
 * memory, every rank meets (pkb_barrier_block), pulls, and meets again
 * before the next call may overwrite the staging buffer.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 512
#define BLOCKS 132
#define SRC 0

struct state { pkb_symm stage; };

template <typename U>
__global__ void scatter_off_by_one(pkb_dev_comm comm, const U *in, U *out, void *const *stage,
				   int64_t nu)
{
	const int w = comm.world;
	int64_t i0 = blockIdx.x * (int64_t)THREADS + threadIdx.x, step = (int64_t)BLOCKS * THREADS;
	if (comm.rank == SRC) {
		U *mine = (U *)stage[SRC];
		for (int q = 0; q < w; q++)
			for (int64_t i = i0; i < nu; i += step)
				mine[q * nu + i] = in[q * nu + i];
	}
	/* position i of every slab belongs to the same block on every rank, so
	   this block's barrier covers everything it reads */
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	const U *slab = (const U *)stage[SRC] + ((comm.rank + 1) % w) * nu;   /* BUG */
	for (int64_t i = i0; i < nu; i += step)
		out[i] = slab[i];
	pkb_barrier_block(comm, blockIdx.x);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	return ctx->svc->symm_alloc(ctx, ctx->world * ctx->out[0].bytes, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	size_t bytes = ctx->out[0].bytes;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	if (bytes % 16 == 0)
		scatter_off_by_one<int4><<<BLOCKS, THREADS, 0, st>>>(
			ctx->dev, (const int4 *)ctx->in[0].data, (int4 *)ctx->out[0].data,
			s->stage.peers_dev, (int64_t)(bytes / 16));
	else
		scatter_off_by_one<char><<<BLOCKS, THREADS, 0, st>>>(
			ctx->dev, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
			s->stage.peers_dev, (int64_t)bytes);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx) { free(ctx->user); return 0; }
