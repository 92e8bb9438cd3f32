/*
 * 022_clip_grad_norm_ep reference: fp32 sums of squares of the non-expert
 * shard and of the scaled expert shard (block partials, then one warp in a
 * fixed order), one NCCL all-reduce of the two floats, then one pass that
 * writes total_norm and both clipped gradients.
 *
 * The original all-reduces the non-expert sum over the world and the expert
 * sum over the EP-FSDP group, then over the EP group; the two groups tile
 * the world, so both are sums over every rank and one 8-byte all-reduce
 * over the world computes the same two values (fp32, order immaterial).
 *
 * Math, as torch evaluates it (T = the dtype, fp32 in between):
 *     e      = T(fp32(g_ep) * s), s = fl(1/ep_size)   only if ep_size > 1
 *     a      = sqrt(sum g_non_ep^2)^2, b = sqrt(sum e^2)^2   (torch.norm ** 2)
 *     total  = sqrt(allreduce(a) + allreduce(b))
 *     coef   = fl(max_norm / total)
 *     out    = T(g_non_ep * coef), T(e * coef)     if total > max_norm
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"
#include "block_sum.cuh"   /* defines: block_sum */
#include "part_val.cuh"    /* defines: struct part_val, part_val_init, part_val_release */

PKB_SOLUTION;

#define THREADS 256
#define PART_BLOCKS 256

/* the state, a struct part_val: part [2][PART_BLOCKS], val [2] the
 * non-expert and expert sums */

/* the expert element after the original's in-place mul_(1/ep_size) */
template <typename T>
__device__ __forceinline__ T ep_scaled(T g, float s, bool scale)
{
	return scale ? pkb_from_float<T>(__fmul_rn(pkb_to_float(g), s)) : g;
}

/* grid (PART_BLOCKS, 2): y = 0 the non-expert shard, y = 1 the expert one */
template <typename T>
__global__ void __launch_bounds__(THREADS)
sumsq_part(const T *g0, const T *g1, float *part, int64_t n, float s, bool scale)
{
	__shared__ float red[THREADS / 32];
	const T *g = blockIdx.y ? g1 : g0;
	bool sc = blockIdx.y && scale;
	float acc = 0.f;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		float v = pkb_to_float(ep_scaled(g[i], s, sc));
		acc = __fadd_rn(acc, __fmul_rn(v, v));
	}
	float t = block_sum<THREADS>(acc, red);
	if (threadIdx.x == 0)
		part[blockIdx.y * PART_BLOCKS + blockIdx.x] = t;
}

/* one warp: val[k] = fl(sqrt(ss_k)^2), each list holding one tensor */
__global__ void local_values(const float *part, float *val)
{
	int lane = threadIdx.x;
	for (int k = 0; k < 2; k++) {
		float t = 0.f;
		for (int b = lane; b < PART_BLOCKS; b += 32)
			t += part[k * PART_BLOCKS + b];
		for (int o = 16; o > 0; o >>= 1)
			t += __shfl_xor_sync(0xffffffffu, t, o);
		float gn = sqrtf(t);
		if (lane == 0)
			val[k] = __fadd_rn(0.f, __fmul_rn(gn, gn));
	}
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
clip(const T *g0, const T *g1, T *o0, T *o1, const float *val, float *total_norm, int64_t n,
     float max_norm, float s, bool scale)
{
	float total = sqrtf(__fadd_rn(val[0], val[1]));
	bool do_clip = total > max_norm;
	float coef = __fdiv_rn(max_norm, total);
	if (blockIdx.x == 0 && threadIdx.x == 0)
		*total_norm = total;
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < 2 * n;
	     k += (int64_t)gridDim.x * THREADS) {
		bool ep = k >= n;
		int64_t i = ep ? k - n : k;
		T g = ep ? ep_scaled(g1[i], s, scale) : g0[i];
		T *o = ep ? o1 : o0;
		o[i] = do_clip ? pkb_from_float<T>(__fmul_rn(pkb_to_float(g), coef)) : g;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return part_val_init(ctx, 2 * PART_BLOCKS, 2);
}

template <typename T>
static int launch(pkb_ctx *ctx, struct part_val *s, cudaStream_t st, ncclComm_t comm)
{
	int64_t n = ctx->in[0].shape[0] * ctx->in[0].shape[1];
	int ep_size = ctx->world / 2 > 1 ? ctx->world / 2 : 1;
	bool scale = ep_size > 1;
	float sc = (float)(1.0 / ep_size);   /* a Python float, cast to fp32 opmath */
	const T *g0 = (const T *)ctx->in[0].data, *g1 = (const T *)ctx->in[1].data;
	sumsq_part<T><<<dim3(PART_BLOCKS, 2), THREADS, 0, st>>>(g0, g1, s->part, n, sc, scale);
	local_values<<<1, 32, 0, st>>>(s->part, s->val);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclAllReduce(s->val, s->val, 2, ncclFloat32, ncclSum, comm, st));
	float max_norm = (float)pkb_param_get(ctx, "max_norm", 1.0);
	clip<T><<<pkb_ref_blocks(2 * n, THREADS, 4096), THREADS, 0, st>>>(
		g0, g1, (T *)ctx->out[1].data, (T *)ctx->out[2].data, s->val,
		(float *)ctx->out[0].data, n, max_norm, sc, scale);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

PKB_REF_FLOAT_RUN_FINI(struct part_val, launch, part_val_release)
