/*
 * 026_moe_token_preprocess reference: count the mask on the device, one
 * in-place ncclAllGather of every rank's 8 counts (the original's
 * all_gather_into_tensor), one small kernel for the four results.
 *
 * Math (E_l = 8/W, rank r owns experts r*E_l ..):
 *     c[e]                     = sum over (slot, token) of mask[e]
 *     input_splits[j]          = sum_l c_r[j*E_l + l]
 *     per_local_expert[j][l]   = c_j[r*E_l + l]
 *     output_splits[j]         = sum_l per_local_expert[j][l]
 *     sum_per_local_expert[l]  = sum_j per_local_expert[j][l]
 * Every value is an integer below 2^24 (describe() refuses larger M), so
 * fp32 sums are exact in any order: the block sums and atomics below give
 * the original's values bit for bit.
 *
 * Traffic: the all-gather receives (W-1) * 32 bytes a rank; the mask read
 * (64 M bytes, 64 KiB at M = 1024) is most of the time.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define EXPERTS 8
#define TOPK 2
#define THREADS 256
#define MAX_BLOCKS 264

struct state {
	float *counts;    /* [W][8]: every rank's counts, own row at rank */
};

/* counts[e] += the hits of expert e in this block's tokens. Exact: integer
 * partial sums, far below 2^24. */
__global__ void __launch_bounds__(THREADS)
count_experts(const float *mask, float *counts, int64_t m)
{
	__shared__ float part[EXPERTS];
	if (threadIdx.x < EXPERTS)
		part[threadIdx.x] = 0.f;
	__syncthreads();
	float c[EXPERTS] = { 0 };
	for (int64_t t = blockIdx.x * (int64_t)THREADS + threadIdx.x; t < m;
	     t += (int64_t)gridDim.x * THREADS)
		for (int e = 0; e < EXPERTS; e++)
			for (int k = 0; k < TOPK; k++)
				c[e] += mask[((int64_t)e * TOPK + k) * m + t];
	for (int e = 0; e < EXPERTS; e++) {
		float v = c[e];
		for (int o = 16; o > 0; o >>= 1)
			v += __shfl_xor_sync(0xffffffffu, v, o);
		if ((threadIdx.x & 31) == 0)
			atomicAdd(&part[e], v);
	}
	__syncthreads();
	if (threadIdx.x < EXPERTS)
		atomicAdd(&counts[threadIdx.x], part[threadIdx.x]);
}

/* one block of >= W*E_l threads: the four results from the gathered
 * counts all[W][8] */
__global__ void finish(const float *all, int rank, int world, int64_t *input_splits,
		       int64_t *output_splits, float *per_local, float *sum_local)
{
	int el = EXPERTS / world, i = threadIdx.x;
	const float *own = all + rank * EXPERTS;
	if (i < world) {
		float in = 0.f, out = 0.f;
		for (int l = 0; l < el; l++) {
			in += own[i * el + l];
			out += all[i * EXPERTS + rank * el + l];
		}
		input_splits[i] = (int64_t)in;
		output_splits[i] = (int64_t)out;
	}
	if (i < world * el)
		per_local[i] = all[(i / el) * EXPERTS + rank * el + i % el];
	if (i < el) {
		float s = 0.f;
		for (int j = 0; j < world; j++)
			s += all[j * EXPERTS + rank * el + i];
		sum_local[i] = s;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->in[0].dtype != PKB_FP32 || ctx->in[0].ndim != 3 ||
	    ctx->in[0].shape[0] != EXPERTS || ctx->in[0].shape[1] != TOPK ||
	    EXPERTS % ctx->world) {
		ctx->svc->log(ctx, "problem 26 reference: expert_mask must be fp32 (8, 2, M), "
			      "W must divide 8");
		return 1;
	}
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->counts, (size_t)ctx->world * EXPERTS * sizeof(float)));
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t m = ctx->in[0].shape[2];
	float *own = s->counts + ctx->rank * EXPERTS;
	PKB_CK_CUDA(ctx, cudaMemsetAsync(own, 0, EXPERTS * sizeof(float), st));
	count_experts<<<pkb_ref_blocks(m, THREADS, MAX_BLOCKS), THREADS, 0, st>>>(
		(const float *)ctx->in[0].data, own, m);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclAllGather(own, s->counts, EXPERTS, ncclFloat32,
				       (ncclComm_t)ctx->nccl_comm, st));
	finish<<<1, 32, 0, st>>>(s->counts, ctx->rank, ctx->world, (int64_t *)ctx->out[0].data,
				 (int64_t *)ctx->out[1].data, (float *)ctx->out[2].data,
				 (float *)ctx->out[3].data);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	cudaFree(s->counts);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
