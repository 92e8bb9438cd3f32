/*
 * 021_clip_grad_norm_no_ep reference: per-tensor fp32 sums of squares (block
 * partials, then one block adds them in a fixed order), the original's
 * local value sum_t fl(sqrt(ss_t)^2), an NCCL all-reduce of that one float,
 * then one pass that writes total_norm and the clipped gradients.
 *
 * Math, as torch evaluates it (T = the dtype, fp32 in between):
 *     gn_t  = sqrt(sum fl(g^2))            torch.norm(g.float(), 2)
 *     acc   = ((0 + gn_0^2) + gn_1^2) + gn_2^2
 *     total = sqrt(all_reduce_sum(acc))    total_p ** (1/2)
 *     coef  = fl(max_norm / total)         python float / fp32 0-dim tensor
 *     out_t = T(fp32(g_t) * coef)          bf16 mul_ by an fp32 0-dim tensor
 * when total > max_norm; otherwise out_t = g_t.
 *
 * Bytes: the gradients are read twice (6 MiB each pass at 1024^2 bf16) and
 * the clipped copies written once; 4 bytes cross the network.
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

#define NT 3            /* gradient tensors */
#define THREADS 256
#define PART_BLOCKS 256 /* partial sums per tensor */

/* the state, a struct part_val: part [NT][PART_BLOCKS] the blocks' partial
 * sums of squares, val [1] the local value */

template <typename T> struct grads { const T *g[NT]; };
template <typename T> struct outs { T *o[NT]; };

/* grid (PART_BLOCKS, NT): block (b, t) sums squares over a grid-stride slice
 * of tensor t */
template <typename T>
__global__ void __launch_bounds__(THREADS)
sumsq_part(grads<T> in, float *part, int64_t n)
{
	__shared__ float red[THREADS / 32];
	const T *g = in.g[blockIdx.y];
	float acc = 0.f;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		float v = pkb_to_float(g[i]);
		acc = __fadd_rn(acc, __fmul_rn(v, v));
	}
	float s = block_sum<THREADS>(acc, red);
	if (threadIdx.x == 0)
		part[blockIdx.y * PART_BLOCKS + blockIdx.x] = s;
}

/* one warp: ss_t from the partials, then acc = sum_t fl(sqrt(ss_t)^2) in
 * tensor order, as the original's loop */
__global__ void local_value(const float *part, float *val)
{
	int lane = threadIdx.x;
	float acc = 0.f;
	for (int t = 0; t < NT; t++) {
		float s = 0.f;
		for (int b = lane; b < PART_BLOCKS; b += 32)
			s += part[t * PART_BLOCKS + b];
		for (int o = 16; o > 0; o >>= 1)
			s += __shfl_xor_sync(0xffffffffu, s, o);
		float gn = sqrtf(s);
		acc = __fadd_rn(acc, __fmul_rn(gn, gn));
	}
	if (lane == 0)
		*val = acc;
}

/* grid-stride over the NT tensors; every thread derives total and coef
 * from the all-reduced value (one sqrt and one divide: cheaper than another
 * launch) */
template <typename T>
__global__ void __launch_bounds__(THREADS)
clip(grads<T> in, outs<T> out, const float *val, float *total_norm, int64_t n, float max_norm)
{
	float total = sqrtf(*val);
	bool do_clip = total > max_norm;
	float coef = __fdiv_rn(max_norm, total);
	if (blockIdx.x == 0 && threadIdx.x == 0)
		*total_norm = total;
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < NT * n;
	     k += (int64_t)gridDim.x * THREADS) {
		int t = (int)(k / n);
		int64_t i = k - t * n;
		T g = in.g[t][i];
		out.o[t][i] = do_clip ? pkb_from_float<T>(__fmul_rn(pkb_to_float(g), coef)) : g;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return part_val_init(ctx, NT * PART_BLOCKS, 1);
}

template <typename T>
static int launch(pkb_ctx *ctx, struct part_val *s, cudaStream_t st, ncclComm_t comm)
{
	int64_t n = ctx->in[0].shape[0] * ctx->in[0].shape[1];
	grads<T> in;
	outs<T> out;
	for (int t = 0; t < NT; t++) {
		in.g[t] = (const T *)ctx->in[t].data;
		out.o[t] = (T *)ctx->out[1 + t].data;
	}
	sumsq_part<T><<<dim3(PART_BLOCKS, NT), THREADS, 0, st>>>(in, s->part, n);
	local_value<<<1, 32, 0, st>>>(s->part, s->val);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclAllReduce(s->val, s->val, 1, ncclFloat32, ncclSum, comm, st));
	float max_norm = (float)pkb_param_get(ctx, "max_norm", 1.0);
	clip<T><<<pkb_ref_blocks(NT * n, THREADS, 4096), THREADS, 0, st>>>(
		in, out, s->val, (float *)ctx->out[0].data, n, max_norm);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

PKB_REF_FLOAT_RUN_FINI(struct part_val, launch, part_val_release)
