/*
 * 021_clip_grad_norm_no_ep, known-good: the one-float all-reduce through
 * symmetric memory.
 *
 * Three launches: block partial sums of squares per tensor; one block that
 * forms this rank's value sum_t sqrt(ss_t)^2, publishes it in its symmetric
 * slot, meets every rank, adds the W values in rank order (the same order,
 * so the same total, on every rank) and meets again so that no peer's next
 * call overwrites a slot still being read; then a grid-stride pass that
 * writes total_norm and the clipped gradients.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define NT 3
#define THREADS 256
#define PART_BLOCKS 128

struct state {
	float *part;    /* [NT * PART_BLOCKS] */
	float *total;   /* [1] this rank's copy of the global norm */
	pkb_symm val;   /* [1] fp32: this rank's local value */
};

template <typename T> struct ptrs { const T *g[NT]; T *o[NT]; };

template <typename T>
__global__ void __launch_bounds__(THREADS)
partials(ptrs<T> p, float *part, int64_t n)
{
	__shared__ float red[THREADS / 32];
	const T *g = p.g[blockIdx.y];
	float acc = 0.f;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		float v = pkb_to_float(g[i]);
		acc += v * v;
	}
	for (int o = 16; o > 0; o >>= 1)
		acc += __shfl_xor_sync(0xffffffffu, acc, o);
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = acc;
	__syncthreads();
	if (threadIdx.x == 0) {
		float s = 0.f;
		for (int w = 0; w < THREADS / 32; w++)
			s += red[w];
		part[blockIdx.y * PART_BLOCKS + blockIdx.x] = s;
	}
}

/* one block of THREADS (>= world) */
__global__ void __launch_bounds__(THREADS)
exchange(pkb_dev_comm comm, const float *part, float *const *val, float *total)
{
	if (threadIdx.x < 32) {
		int lane = threadIdx.x;
		float acc = 0.f;
		for (int t = 0; t < NT; t++) {
			float s = 0.f;
			for (int b = lane; b < PART_BLOCKS; b += 32)
				s += part[t * PART_BLOCKS + b];
			for (int o = 16; o > 0; o >>= 1)
				s += __shfl_xor_sync(0xffffffffu, s, o);
			float gn = sqrtf(s);
			acc += gn * gn;
		}
		if (lane == 0)
			val[comm.rank][0] = acc;
	}
	if (!pkb_barrier_block(comm, 0))
		return;
	if (threadIdx.x == 0) {
		float sum = 0.f;
		for (int r = 0; r < comm.world; r++)
			sum += val[r][0];
		*total = sqrtf(sum);
	}
	pkb_barrier_block(comm, 0);   /* peers are done reading our value */
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
scale(ptrs<T> p, const float *total, float *total_out, int64_t n, float max_norm)
{
	float tn = *total;
	bool clip = tn > max_norm;
	float coef = max_norm / tn;
	if (blockIdx.x == 0 && threadIdx.x == 0)
		*total_out = tn;
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < NT * n;
	     k += (int64_t)gridDim.x * THREADS) {
		int t = (int)(k / n);
		int64_t i = k - t * n;
		T g = p.g[t][i];
		p.o[t][i] = clip ? pkb_from_float<T>(pkb_to_float(g) * coef) : g;
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
	if (cudaMalloc(&s->part, NT * PART_BLOCKS * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->total, sizeof(float)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, sizeof(float), &s->val);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t n = ctx->in[0].shape[0] * ctx->in[0].shape[1];
	ptrs<T> p;
	for (int t = 0; t < NT; t++) {
		p.g[t] = (const T *)ctx->in[t].data;
		p.o[t] = (T *)ctx->out[1 + t].data;
	}
	partials<T><<<dim3(PART_BLOCKS, NT), THREADS, 0, st>>>(p, s->part, n);
	exchange<<<1, THREADS, 0, st>>>(ctx->dev, s->part, (float *const *)s->val.peers_dev,
					s->total);
	int64_t blocks = (NT * n + THREADS - 1) / THREADS;
	blocks = blocks > 2048 ? 2048 : blocks;
	scale<T><<<(unsigned)blocks, THREADS, 0, st>>>(p, s->total, (float *)ctx->out[0].data, n,
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
