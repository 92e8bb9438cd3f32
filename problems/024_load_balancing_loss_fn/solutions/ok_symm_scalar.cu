/*
 * 024_load_balancing_loss_fn, known-good: one kernel. Every block routes a
 * grid-stride share of the tokens (softmax in fp32, weights rounded to T,
 * top-2 with ties to the lower expert) and writes its 24 statistics; the
 * last block to finish (a ticket counter, as CUDA's threadFenceReduction
 * sample) adds them, forms this rank's loss, publishes it in a symmetric
 * slot, meets every rank, adds the W losses in rank order and divides by W;
 * a last barrier keeps any next call from overwriting a slot a peer may
 * still read.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define E 8
#define STATS (3 * E)   /* top-1 counts, top-2 counts, sums of p */
#define THREADS 256
#define BLOCKS 64

struct state {
	float *part;      /* [BLOCKS][STATS] */
	unsigned *done;   /* [1] blocks finished in this call; the last resets it */
	pkb_symm slot;    /* [1] fp32: this rank's loss */
};

template <typename T>
__global__ void __launch_bounds__(THREADS)
aux_loss(pkb_dev_comm comm, const T *x, float *part, unsigned *done, float *const *slot,
	 float *out, int64_t m)
{
	__shared__ float red[THREADS / 32][STATS];
	__shared__ float col[STATS];
	__shared__ bool last;
	float acc[STATS];
	for (int j = 0; j < STATS; j++)
		acc[j] = 0.f;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < m;
	     i += (int64_t)gridDim.x * THREADS) {
		float v[E], mx = -INFINITY, sum = 0.f;
		for (int e = 0; e < E; e++) {
			v[e] = pkb_to_float(x[i * E + e]);
			mx = fmaxf(mx, v[e]);
		}
		for (int e = 0; e < E; e++) {
			v[e] = expf(v[e] - mx);
			sum += v[e];
		}
		float inv = 1.f / sum;
		for (int e = 0; e < E; e++)
			v[e] = pkb_to_float(pkb_from_float<T>(v[e] * inv));
		/* top-2: strict > keeps the lower index among equal weights */
		int a = 0;
		for (int e = 1; e < E; e++)
			if (v[e] > v[a])
				a = e;
		int b = a == 0 ? 1 : 0;
		for (int e = b + 1; e < E; e++)
			if (e != a && v[e] > v[b])
				b = e;
		for (int e = 0; e < E; e++) {
			acc[e] += e == a;
			acc[E + e] += e == b;
			acc[2 * E + e] += v[e];
		}
	}
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (int j = 0; j < STATS; j++) {
		float s = acc[j];
		for (int o = 16; o > 0; o >>= 1)
			s += __shfl_xor_sync(0xffffffffu, s, o);
		if (lane == 0)
			red[warp][j] = s;
	}
	__syncthreads();
	if (threadIdx.x < STATS) {
		float s = 0.f;
		for (int w = 0; w < THREADS / 32; w++)
			s += red[w][threadIdx.x];
		part[blockIdx.x * STATS + threadIdx.x] = s;
		__threadfence();   /* our partials before our ticket */
	}
	__syncthreads();
	if (threadIdx.x == 0)
		last = atomicAdd(done, 1u) == gridDim.x - 1;
	__syncthreads();
	if (!last)
		return;

	if (threadIdx.x < STATS) {
		float s = 0.f;
		for (int b = 0; b < (int)gridDim.x; b++)
			s += __ldcg(&part[b * STATS + threadIdx.x]);   /* past L1 */
		col[threadIdx.x] = s;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		float inv_m = 1.f / (float)m, loss = 0.f;
		for (int e = 0; e < E; e++) {
			float pe = pkb_to_float(pkb_from_float<T>(col[2 * E + e] * inv_m));
			loss += (col[e] + col[E + e]) * inv_m * pe;
		}
		slot[comm.rank][0] = loss * (float)E;
		*done = 0;
	}
	if (!pkb_barrier_block(comm, 0))
		return;
	if (threadIdx.x == 0) {
		float s = 0.f;
		for (int r = 0; r < comm.world; r++)
			s += slot[r][0];
		*out = s / (float)comm.world;
	}
	pkb_barrier_block(comm, 0);   /* peers are done reading our slot */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->world > THREADS)
		return 1;
	if (cudaMalloc(&s->part, BLOCKS * STATS * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->done, sizeof(unsigned)) != cudaSuccess ||
	    cudaMemset(s->done, 0, sizeof(unsigned)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, sizeof(float), &s->slot);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	aux_loss<T><<<BLOCKS, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, s->part, s->done,
		(float *const *)s->slot.peers_dev, (float *)ctx->out[0].data, ctx->in[0].shape[0]);
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

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		cudaFree(s->part);
		cudaFree(s->done);
		free(s);
	}
	return 0;
}
