/*
 * 007_reducescatter, known-bad: sums the right data but returns the wrong
 * chunk -- every rank returns chunk 0 of the sum (an all-reduce sliced at
 * [0:M] instead of [rank*M:(rank+1)*M]). Right on rank 0 only.
 *
 * The transport itself is sound: stage the input in symmetric memory, meet
 * every rank (pkb_barrier_block), read every staging buffer, meet again
 * before the next call may overwrite them.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 512
#define BLOCKS 132

struct state { pkb_symm stage; };

template <typename T>
__global__ void reducescatter_chunk0(pkb_dev_comm comm, const T *in, T *out, void *const *stage,
				     int64_t n)
{
	T *mine = (T *)stage[comm.rank];
	int64_t i0 = blockIdx.x * (int64_t)THREADS + threadIdx.x, step = (int64_t)BLOCKS * THREADS;
	for (int d = 0; d < comm.world; d++)
		for (int64_t i = i0; i < n; i += step)
			mine[d * n + i] = in[d * n + i];
	/* position i of every chunk belongs to the same block on every rank,
	   so this block's barrier covers everything it reads */
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	const int64_t chunk = 0;   /* BUG: should be comm.rank */
	for (int64_t i = i0; i < n; i += step) {
		float acc = 0.f;
		for (int p = 0; p < comm.world; p++)
			acc += pkb_to_float(((const T *)stage[p])[chunk * n + i]);
		out[i] = pkb_from_float<T>(acc);
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

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	reducescatter_chunk0<T><<<BLOCKS, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (T *)ctx->out[0].data, s->stage.peers_dev,
		ctx->out[0].numel);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: launch<__nv_bfloat16>(ctx, s); break;
	case PKB_FP16: launch<__half>(ctx, s); break;
	case PKB_FP32: launch<float>(ctx, s); break;
	default: return 1;
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx) { free(ctx->user); return 0; }
