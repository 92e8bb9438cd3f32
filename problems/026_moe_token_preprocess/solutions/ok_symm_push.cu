/*
 * 026_moe_token_preprocess, known-good: one kernel, no NCCL. Every block
 * counts the mask over its tokens and adds its 8 counts into a scratch
 * row; the last block to finish (a ticket) pushes to each rank j the E_l
 * counts of j's experts, straight into slot `rank` of j's symmetric
 * buffer, meets every rank (pkb_barrier_block), and forms the four results
 * from what landed in its own buffer.
 *
 * Back-to-back calls: the buffer has two halves used by alternate calls
 * (a call counter gives the parity, the same on every rank). A rank pushes
 * into half p again only in call k+2, after meeting every peer in call
 * k+1's barrier -- which a peer reaches only once it has read call k's
 * half. No trailing barrier.
 *
 * Traffic: (W-1) * E_l * 4 bytes pushed a rank, what the cost model counts.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define EXPERTS 8
#define TOPK 2
#define THREADS 256
#define MAX_BLOCKS 132

struct state {
	pkb_symm box;         /* 2 halves of [W][E_l] fp32: counts from rank j */
	unsigned *scratch;    /* [8] counts, then the ticket, then the call count */
};

__global__ void __launch_bounds__(THREADS)
preprocess(pkb_dev_comm comm, const float *mask, int64_t m, float *const *box,
	   unsigned *scratch, int64_t *input_splits, int64_t *output_splits, float *per_local,
	   float *sum_local)
{
	__shared__ unsigned part[EXPERTS];
	__shared__ int last;
	__shared__ unsigned half;
	const int me = comm.rank, w = comm.world, el = EXPERTS / w;
	if (threadIdx.x < EXPERTS)
		part[threadIdx.x] = 0;
	__syncthreads();

	unsigned c[EXPERTS] = { 0 };
	for (int64_t t = blockIdx.x * (int64_t)THREADS + threadIdx.x; t < m;
	     t += (int64_t)gridDim.x * THREADS)
		for (int e = 0; e < EXPERTS; e++)
			for (int k = 0; k < TOPK; k++)
				c[e] += mask[((int64_t)e * TOPK + k) * m + t] != 0.f;
	for (int e = 0; e < EXPERTS; e++) {
		unsigned v = c[e];
		for (int o = 16; o > 0; o >>= 1)
			v += __shfl_xor_sync(0xffffffffu, v, o);
		if ((threadIdx.x & 31) == 0)
			atomicAdd(&part[e], v);
	}
	__syncthreads();
	if (threadIdx.x < EXPERTS)
		atomicAdd(&scratch[threadIdx.x], part[threadIdx.x]);
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0)
		last = atomicAdd(&scratch[EXPERTS], 1u) == gridDim.x - 1;
	__syncthreads();
	if (!last)
		return;

	/* the last block: every block's counts are in scratch */
	__threadfence();
	__shared__ float own[EXPERTS];
	if (threadIdx.x < EXPERTS) {
		own[threadIdx.x] = (float)atomicExch(&scratch[threadIdx.x], 0u);
	}
	if (threadIdx.x == 0) {
		scratch[EXPERTS] = 0;
		half = (scratch[EXPERTS + 1]++ & 1u) * w * el;
	}
	__syncthreads();
	/* counts of rank j's experts go to slot `me` of rank j */
	if (threadIdx.x < EXPERTS) {
		int j = threadIdx.x / el, l = threadIdx.x % el;
		box[j][half + me * el + l] = own[threadIdx.x];
	}
	if (!pkb_barrier_block(comm, 0))
		return;

	const float *got = box[me] + half;   /* [W][E_l]: rank j's counts of ours */
	int i = threadIdx.x;
	if (i < w) {
		float in = 0.f, out = 0.f;
		for (int l = 0; l < el; l++) {
			in += own[i * el + l];
			out += got[i * el + l];
		}
		input_splits[i] = (int64_t)in;
		output_splits[i] = (int64_t)out;
	}
	if (i < w * el)
		per_local[i] = got[i];
	if (i < el) {
		float s = 0.f;
		for (int j = 0; j < w; j++)
			s += got[j * el + i];
		sum_local[i] = s;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->in[0].dtype != PKB_FP32 || EXPERTS % ctx->world)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (cudaMalloc(&s->scratch, (EXPERTS + 2) * sizeof(unsigned)) != cudaSuccess ||
	    cudaMemset(s->scratch, 0, (EXPERTS + 2) * sizeof(unsigned)) != cudaSuccess)
		return 1;
	/* 2 halves of W * E_l = 8 floats */
	return ctx->svc->symm_alloc(ctx, 2 * EXPERTS * sizeof(float), &s->box);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	int64_t m = ctx->in[0].shape[2];
	int64_t b = (m + THREADS - 1) / THREADS;
	int blocks = b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : (int)b;
	preprocess<<<blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const float *)ctx->in[0].data, m, (float *const *)s->box.peers_dev,
		s->scratch, (int64_t *)ctx->out[0].data, (int64_t *)ctx->out[1].data,
		(float *)ctx->out[2].data, (float *)ctx->out[3].data);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s)
		cudaFree(s->scratch);
	free(s);
	return 0;
}
