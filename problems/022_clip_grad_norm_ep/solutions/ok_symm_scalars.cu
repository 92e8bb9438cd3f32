/*
 * 022_clip_grad_norm_ep, known-good: the two sums exchanged through
 * symmetric memory.
 *
 * Three launches: block partial sums of squares of the non-expert shard and
 * of the expert shard scaled by 1/ep_size (rounded to T, as the original's
 * in-place scale leaves it); one block that forms this rank's two values,
 * publishes them in its symmetric slot, meets every rank, adds the W pairs
 * in rank order (the expert term over the whole world: the EP and EP-FSDP
 * groups tile it), and meets again before any next call may overwrite the
 * slot; then a pass that writes total_norm and both clipped gradients.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define PART_BLOCKS 128

struct state {
	float *part;    /* [2 * PART_BLOCKS] */
	float *total;   /* [1] */
	pkb_symm val;   /* [2] fp32: this rank's non-expert and expert values */
};

struct args {
	const void *g0, *g1;
	void *o0, *o1;
	int64_t n;
	int ep_size;
	float s;        /* 1/ep_size */
};

template <typename T>
__device__ __forceinline__ T ep_elem(const args &a, int64_t i)
{
	T g = ((const T *)a.g1)[i];
	return a.ep_size > 1 ? pkb_from_float<T>(pkb_to_float(g) * a.s) : g;
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
partials(args a, float *part)
{
	__shared__ float red[THREADS / 32];
	float acc = 0.f;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < a.n;
	     i += (int64_t)gridDim.x * THREADS) {
		float v = blockIdx.y ? pkb_to_float(ep_elem<T>(a, i))
				     : pkb_to_float(((const T *)a.g0)[i]);
		acc += v * v;
	}
	for (int o = 16; o > 0; o >>= 1)
		acc += __shfl_xor_sync(0xffffffffu, acc, o);
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = acc;
	__syncthreads();
	if (threadIdx.x == 0) {
		float t = 0.f;
		for (int w = 0; w < THREADS / 32; w++)
			t += red[w];
		part[blockIdx.y * PART_BLOCKS + blockIdx.x] = t;
	}
}

/* one block of THREADS (>= world) */
__global__ void __launch_bounds__(THREADS)
exchange(pkb_dev_comm comm, const float *part, float *const *val, float *total, int ep_size)
{
	if (threadIdx.x < 32) {
		int lane = threadIdx.x;
		for (int k = 0; k < 2; k++) {
			float t = 0.f;
			for (int b = lane; b < PART_BLOCKS; b += 32)
				t += part[k * PART_BLOCKS + b];
			for (int o = 16; o > 0; o >>= 1)
				t += __shfl_xor_sync(0xffffffffu, t, o);
			float gn = sqrtf(t);
			if (lane == 0)
				val[comm.rank][k] = gn * gn;
		}
	}
	if (!pkb_barrier_block(comm, 0))
		return;
	if (threadIdx.x == 0) {
		float non_ep = 0.f, ep = 0.f;
		for (int r = 0; r < comm.world; r++)
			non_ep += val[r][0];
		for (int r = 0; r < comm.world; r++)
			ep += val[r][1];
		*total = sqrtf(non_ep + ep);
	}
	pkb_barrier_block(comm, 0);   /* peers are done reading our values */
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
scale(args a, const float *total, float *total_out, float max_norm)
{
	float tn = *total;
	bool clip = tn > max_norm;
	float coef = max_norm / tn;
	if (blockIdx.x == 0 && threadIdx.x == 0)
		*total_out = tn;
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < 2 * a.n;
	     k += (int64_t)gridDim.x * THREADS) {
		bool ep = k >= a.n;
		int64_t i = ep ? k - a.n : k;
		T g = ep ? ep_elem<T>(a, i) : ((const T *)a.g0)[i];
		T *o = (T *)(ep ? a.o1 : a.o0);
		o[i] = clip ? pkb_from_float<T>(pkb_to_float(g) * coef) : g;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->world > THREADS)
		return 1;
	if (cudaMalloc(&s->part, 2 * PART_BLOCKS * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->total, sizeof(float)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * sizeof(float), &s->val);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	args a;
	a.g0 = ctx->in[0].data;
	a.g1 = ctx->in[1].data;
	a.o0 = ctx->out[1].data;
	a.o1 = ctx->out[2].data;
	a.n = ctx->in[0].shape[0] * ctx->in[0].shape[1];
	a.ep_size = ctx->world / 2 > 1 ? ctx->world / 2 : 1;
	a.s = (float)(1.0 / a.ep_size);
	partials<T><<<dim3(PART_BLOCKS, 2), THREADS, 0, st>>>(a, s->part);
	exchange<<<1, THREADS, 0, st>>>(ctx->dev, s->part, (float *const *)s->val.peers_dev,
					s->total, a.ep_size);
	int64_t blocks = (2 * a.n + THREADS - 1) / THREADS;
	blocks = blocks > 2048 ? 2048 : blocks;
	scale<T><<<(unsigned)blocks, THREADS, 0, st>>>(a, s->total, (float *)ctx->out[0].data,
						       (float)pkb_param_get(ctx, "max_norm", 1.0));
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
		cudaFree(s->total);
		free(s);
	}
	return 0;
}
