/*
 * 069_gnn_negative_scoring, known-good: rank the local rows, then
 * all-gather the ranks -- 8 bytes a row instead of every score.
 *
 * A row's rank depends on that row alone: 1 + the count of negatives whose
 * sigmoid, rounded to T, is strictly above the positive's (ties keep the
 * positive first, as the original's sort). So:
 * 1. One block per local row counts (fp32 sigmoid, rounded to T, compared
 *    as the original's values) and thread 0 stores the rank at the row's
 *    global place (the rows of lower ranks first) in every rank's
 *    symmetric staging buffer, over NVLink.
 * 2. One block meets every rank (pkb_barrier_block); a grid copies the
 *    staging buffer into the output.
 * The row counts of the other ranks come from host_allgather at init.
 *
 * Back to back: the staging buffer has two halves, by call parity
 * (pkb_call_half, told to the other kernels through a device word). A rank
 * stores into a half again two calls later, after the barrier of the call
 * in between, which the receiver reaches only once its copy of this call
 * is done.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define MEET 1024

struct state {
	pkb_symm stage;       /* two halves of (total,) int64 */
	size_t half;
	uint32_t *calls;
	size_t *off;
	int64_t nneg, rows, first, total;
};

__global__ void pick_half(uint32_t *calls, size_t half, size_t *off)
{
	size_t o = pkb_call_half(calls, half);
	if (threadIdx.x == 0)
		*off = o;
}

/* torch's sigmoid of a T value: fp32 inside, rounded to T */
template <typename T>
__device__ float sigmoid_t(T x)
{
	return pkb_to_float(pkb_from_float<T>(1.f / (1.f + __expf(-pkb_to_float(x)))));
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
rank_push(const T *pos, const T *neg, int64_t nneg, int64_t first, char *const *stage,
	  const size_t *off, int me, int w)
{
	__shared__ int part[THREADS / 32];
	int64_t row = blockIdx.x;
	float p = sigmoid_t(pos[row]);
	int c = 0;
	for (int64_t j = threadIdx.x; j < nneg; j += THREADS)
		c += sigmoid_t(neg[row * nneg + j]) > p;
	for (int o = 16; o > 0; o >>= 1)
		c += __shfl_down_sync(0xffffffffu, c, o);
	if ((threadIdx.x & 31) == 0)
		part[threadIdx.x >> 5] = c;
	__syncthreads();
	if (threadIdx.x < w) {
		/* thread k stores to rank me + k: the ranks' first stores go to
		   different peers */
		int d = (me + threadIdx.x) % w, total = 0;
		for (int i = 0; i < THREADS / 32; i++)
			total += part[i];
		((int64_t *)(stage[d] + *off))[first + row] = 1 + (int64_t)total;
	}
}

__global__ void meet(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

__global__ void copy_out(const char *mine, const size_t *off, int64_t *out, int64_t n)
{
	const int64_t *src = (const int64_t *)(mine + *off);
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS)
		out[i] = src[i];
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	if (t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->world > THREADS)
		return 1;
	s->rows = ctx->in[0].numel;
	s->nneg = ctx->in[1].shape[1];
	int64_t *all = (int64_t *)calloc(ctx->world, sizeof *all);
	if (!all || ctx->svc->host_allgather(ctx, &s->rows, all, sizeof s->rows)) {
		free(all);
		return 1;
	}
	for (int r = 0; r < ctx->world; r++) {
		if (r == ctx->rank)
			s->first = s->total;
		s->total += all[r];
	}
	free(all);
	if (s->total != ctx->out[0].numel)
		return 1;
	s->half = (s->total * sizeof(int64_t) + 255) & ~(size_t)255;
	if (cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, sizeof(size_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	char *const *stage = (char *const *)s->stage.peers_dev;
	unsigned rows = (unsigned)s->rows;
	pick_half<<<1, 32, 0, st>>>(s->calls, s->half, s->off);
	switch (ctx->in[0].dtype) {
	case PKB_BF16:
		rank_push<__nv_bfloat16><<<rows, THREADS, 0, st>>>(
			(const __nv_bfloat16 *)ctx->in[0].data, (const __nv_bfloat16 *)ctx->in[1].data,
			s->nneg, s->first, stage, s->off, ctx->rank, ctx->world);
		break;
	case PKB_FP16:
		rank_push<__half><<<rows, THREADS, 0, st>>>(
			(const __half *)ctx->in[0].data, (const __half *)ctx->in[1].data, s->nneg,
			s->first, stage, s->off, ctx->rank, ctx->world);
		break;
	default:
		rank_push<float><<<rows, THREADS, 0, st>>>(
			(const float *)ctx->in[0].data, (const float *)ctx->in[1].data, s->nneg,
			s->first, stage, s->off, ctx->rank, ctx->world);
	}
	meet<<<1, MEET, 0, st>>>(ctx->dev);
	copy_out<<<(unsigned)((s->total + THREADS - 1) / THREADS), THREADS, 0, st>>>(
		(const char *)s->stage.local, s->off, (int64_t *)ctx->out[0].data, s->total);
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
