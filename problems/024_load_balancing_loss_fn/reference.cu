/*
 * 024_load_balancing_loss_fn reference: block partials of the routing
 * statistics, one warp that forms this rank's loss, an NCCL all-reduce of
 * that one float, then one thread divides by W.
 *
 * Math, as torch evaluates it (T = the dtype, E = 8 experts):
 *     p[i,e]  = T(exp(x - max) / sum_e exp(x - max))    softmax in fp32
 *     top-2   = the two largest p[i,:], ties to the lower index (torch.topk
 *               gathers the k-th value's ties in index order)
 *     f[k,e]  = fl(count[k,e] * (1/M))                   mean of the one-hot
 *     P[e]    = T(fl(sum_i p[i,e]) * (1/M))              mean in T (fp32 acc)
 *     loss_r  = fl(E * sum_{k,e} fl(f[k,e] * P[e]))      fp32
 *     loss    = fl(all_reduce_sum(loss_r) / W)
 * torch's mean multiplies the fp32 sum by the fp32 factor 1/M.
 *
 * Bytes: the logits read once (16 KiB at M = 1024 in bf16); 4 cross.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"
#include "part_val.cuh"   /* defines: struct part_val, part_val_init, part_val_release */

PKB_SOLUTION;

#define E 8
#define THREADS 256
#define PART_BLOCKS 128
#define STATS (3 * E)   /* per block: top-1 counts, top-2 counts, sums of p */

/* the state, a struct part_val: part [PART_BLOCKS][STATS], val [1] this
 * rank's loss */

/* grid-stride over tokens, one thread per token; the block's statistics in
 * part[blockIdx.x] (counts held in fp32: exact below 2^24) */
template <typename T>
__global__ void __launch_bounds__(THREADS)
route_part(const T *x, float *part, int64_t m)
{
	__shared__ float red[THREADS / 32][STATS];
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
		for (int e = 0; e < E; e++)
			v[e] = pkb_to_float(pkb_from_float<T>(v[e] / sum));
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
	}
}

/* one warp: lane j < STATS adds column j of the partials, then lane 0 forms
 * loss_r in torch's order (top-1 row, then top-2 row) */
template <typename T>
__global__ void local_loss(const float *part, float *val, int64_t m)
{
	__shared__ float col[STATS];
	int lane = threadIdx.x;
	if (lane < STATS) {
		float s = 0.f;
		for (int b = 0; b < PART_BLOCKS; b++)
			s += part[b * STATS + lane];
		col[lane] = s;
	}
	__syncwarp();
	if (lane == 0) {
		float inv_m = 1.0f / (float)m;
		float loss = 0.f;
		for (int k = 0; k < 2; k++)
			for (int e = 0; e < E; e++) {
				float pe = pkb_to_float(pkb_from_float<T>(col[2 * E + e] * inv_m));
				/* _rn: no FMA contraction, torch rounds the product */
				loss += __fmul_rn(__fmul_rn(col[k * E + e], inv_m), pe);
			}
		*val = loss * (float)E;
	}
}

__global__ void mean_over_ranks(const float *val, float *out, int world)
{
	*out = *val / (float)world;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return part_val_init(ctx, PART_BLOCKS * STATS, 1);
}

template <typename T>
static int launch(pkb_ctx *ctx, struct part_val *s, cudaStream_t st, ncclComm_t comm)
{
	int64_t m = ctx->in[0].shape[0];
	route_part<T><<<PART_BLOCKS, THREADS, 0, st>>>((const T *)ctx->in[0].data, s->part, m);
	local_loss<T><<<1, 32, 0, st>>>(s->part, s->val, m);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclAllReduce(s->val, s->val, 1, ncclFloat32, ncclSum, comm, st));
	mean_over_ranks<<<1, 1, 0, st>>>(s->val, (float *)ctx->out[0].data, ctx->world);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

PKB_REF_FLOAT_RUN_FINI(struct part_val, launch, part_val_release)
