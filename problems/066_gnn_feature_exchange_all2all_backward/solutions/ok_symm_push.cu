/*
 * 066_gnn_feature_exchange_all2all_backward, known-good: push each
 * gradient chunk straight into its destination's symmetric receive
 * buffer, meet, then scatter-add with fp32 atomics.
 *
 * Chunk q of rank j's grad_output goes to rank d = (j + q) mod W as its
 * chunk (-q) mod W (065's rotated all-to-all). One grid stores the rows
 * there over NVLink; one block meets every rank (pkb_barrier_block); the
 * output is zeroed and a grid adds received row i into seed ids[i] with
 * atomicAdd. The order of each seed's (about 2, at most 16) terms varies
 * from call to call: the tolerance's sum of 16 terms covers it.
 *
 * Back to back: the receive buffer has two halves, by call parity
 * (pkb_call_half, told to the other kernels through a device word). A rank
 * pushes into a half again two calls later, after the barrier of the call
 * in between, which the receiver reaches only once its scatter-add of
 * this call is done.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define MEET 1024

struct state {
	pkb_symm recv;        /* two halves of (total, hidden) fp32 */
	size_t half;
	uint32_t *calls;
	size_t *off;
	int64_t rpp, total, hidden;
};

__global__ void pick_half(uint32_t *calls, size_t half, size_t *off)
{
	size_t o = pkb_call_half(calls, half);
	if (threadIdx.x == 0)
		*off = o;
}

/* in float4 units when hidden % 4 == 0, else floats: `units` a row */
template <typename U>
__global__ void push(const U *grad, char *const *slots, const size_t *off, int me, int w,
		     int64_t rpp, int64_t total, int64_t units)
{
	size_t o = *off;
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < total * units;
	     k += (int64_t)gridDim.x * THREADS) {
		int64_t i = k / units, u = k % units, q = i / rpp;
		int d = (int)((me + q) % w);
		int64_t at = ((w - q) % w) * rpp + i % rpp;
		((U *)(slots[d] + o))[at * units + u] = grad[k];
	}
}

__global__ void meet(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

__global__ void scatter_add(const char *mine, const size_t *off, const int64_t *ids,
			    int64_t total, int64_t hidden, float *grad)
{
	const float *rows = (const float *)(mine + *off);
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < total * hidden;
	     k += (int64_t)gridDim.x * THREADS)
		atomicAdd(&grad[ids[k / hidden] * hidden + k % hidden], rows[k]);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->world > MEET)
		return 1;
	s->rpp = (int64_t)pkb_param_get(ctx, "counts_sent", 0);
	s->total = ctx->in[0].shape[0];
	s->hidden = ctx->in[0].shape[1];
	if (s->rpp * ctx->world != s->total)
		return 1;
	s->half = (ctx->in[0].bytes + 255) & ~(size_t)255;
	if (cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, sizeof(size_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->recv);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	char *const *slots = (char *const *)s->recv.peers_dev;
	int64_t n = s->total * s->hidden;
	int blocks = (int)((n + THREADS - 1) / THREADS);
	blocks = blocks > 2048 ? 2048 : blocks;
	pick_half<<<1, 32, 0, st>>>(s->calls, s->half, s->off);
	if (s->hidden % 4 == 0)
		push<float4><<<blocks, THREADS, 0, st>>>((const float4 *)ctx->in[0].data, slots,
							 s->off, ctx->rank, ctx->world, s->rpp,
							 s->total, s->hidden / 4);
	else
		push<float><<<blocks, THREADS, 0, st>>>((const float *)ctx->in[0].data, slots,
							s->off, ctx->rank, ctx->world, s->rpp,
							s->total, s->hidden);
	meet<<<1, MEET, 0, st>>>(ctx->dev);
	if (cudaMemsetAsync(ctx->out[0].data, 0, ctx->out[0].bytes, st) != cudaSuccess)
		return 1;
	scatter_add<<<blocks, THREADS, 0, st>>>((const char *)s->recv.local, s->off,
						(const int64_t *)ctx->in[1].data, s->total,
						s->hidden, (float *)ctx->out[0].data);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		cudaFree(s->calls);
		cudaFree(s->off);
	}
	free(s);
	return 0;
}
