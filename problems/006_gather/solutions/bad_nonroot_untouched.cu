/*
 * 006_gather, known-bad: a correct gather to rank 0 that forgets the other
 * ranks' outputs. In the original a non-root rank returns its input tensor;
 * here its output must hold a copy of its input, and this candidate leaves
 * it as the harness poisoned it.
 *
 * The transport itself is sound: stage the input in symmetric memory, meet
 * every rank (pkb_barrier_block), rank 0 pulls, meet again before the next
 * call may overwrite the staging buffers.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 512
#define BLOCKS 132
#define DST 0

struct state { pkb_symm stage; };

template <typename U>
__global__ void gather_root_only(pkb_dev_comm comm, const U *in, U *out, void *const *stage,
				 int64_t nu)
{
	U *mine = (U *)stage[comm.rank];
	int64_t i0 = blockIdx.x * (int64_t)THREADS + threadIdx.x, step = (int64_t)BLOCKS * THREADS;
	for (int64_t i = i0; i < nu; i += step)
		mine[i] = in[i];
	/* position i belongs to the same block on every rank (same grid), so
	   this block's barrier covers everything it reads */
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	if (comm.rank == DST)
		for (int q = 0; q < comm.world; q++) {
			const U *src = (const U *)stage[q];
			for (int64_t i = i0; i < nu; i += step)
				out[q * nu + i] = src[i];
		}
	/* BUG: a non-root rank never writes its output */
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
		gather_root_only<int4><<<BLOCKS, THREADS, 0, st>>>(
			ctx->dev, (const int4 *)ctx->in[0].data, (int4 *)ctx->out[0].data,
			s->stage.peers_dev, (int64_t)(bytes / 16));
	else
		gather_root_only<char><<<BLOCKS, THREADS, 0, st>>>(
			ctx->dev, (const char *)ctx->in[0].data, (char *)ctx->out[0].data,
			s->stage.peers_dev, (int64_t)bytes);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx) { free(ctx->user); return 0; }
