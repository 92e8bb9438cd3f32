/*
 * 045_reducescatter_fused_rmsnorm reference: ncclReduceScatter (sum, in the
 * dtype, like the original's reduce_scatter_tensor), then one kernel that
 * divides by W, normalises each row and applies gamma -- the original's div_,
 * upcast, pow, mean, add, rsqrt and two multiplies in one pass.
 *
 * Math (T = the dtype, fp32 in between, as torch evaluates it):
 *     s      = reduce_scatter_sum(rs_input_1d)          (chunk,) in T
 *     x      = T( s * fl(1/W) )                          (torch divides by a scalar this way)
 *     ms[i]  = (sum_j fl(x[i,j]^2)) * fl(1/hidden)
 *     y[i,j] = T( fl(x[i,j] * rsqrt(ms[i] + eps)) * gamma[j] )
 *
 * Bytes: each rank receives (W-1) * chunk*e in the reduce-scatter (192 KiB at
 * the default W = 4) and reads/writes chunk*e locally: a latency problem.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_ref.cuh"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define WARPS (THREADS / 32)
#define MAX_HIDDEN 128
#define PER_LANE (MAX_HIDDEN / 32)

struct state {
	void *rs;   /* [chunk] the reduce-scatter result */
};

/* a warp per row; hidden <= 128, so each lane keeps its <= 4 values */
template <typename T>
__global__ void __launch_bounds__(THREADS)
mean_rmsnorm(const T *s, const T *gamma, T *y, int64_t rows, int hidden, float inv_w,
	     float inv_hidden, float eps)
{
	int lane = threadIdx.x & 31;
	int64_t i = blockIdx.x * (int64_t)WARPS + (threadIdx.x >> 5);
	if (i >= rows)
		return;
	const T *row = s + i * hidden;
	float x[PER_LANE];
	float acc = 0.f;
	for (int k = 0; k < PER_LANE; k++) {
		int j = lane + 32 * k;
		x[k] = j < hidden ? pkb_to_float(pkb_from_float<T>(__fmul_rn(pkb_to_float(row[j]), inv_w))) : 0.f;
		acc += __fmul_rn(x[k], x[k]);
	}
	for (int o = 16; o > 0; o >>= 1)
		acc += __shfl_xor_sync(0xffffffffu, acc, o);
	float rs = rsqrtf(__fadd_rn(__fmul_rn(acc, inv_hidden), eps));
	for (int k = 0; k < PER_LANE; k++) {
		int j = lane + 32 * k;
		if (j < hidden)
			y[i * hidden + j] = pkb_from_float<T>(__fmul_rn(__fmul_rn(x[k], rs), pkb_to_float(gamma[j])));
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	if (ctx->in[1].numel > MAX_HIDDEN) {
		ctx->svc->log(ctx, "045 reference: hidden size %lld over %d",
			      (long long)ctx->in[1].numel, MAX_HIDDEN);
		return 1;
	}
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	if (cudaMalloc(&s->rs, ctx->out[0].bytes) != cudaSuccess) {
		ctx->svc->log(ctx, "045 reference: cudaMalloc failed");
		return 1;
	}
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s)
{
	int64_t rows = ctx->out[0].shape[0];
	int hidden = (int)ctx->out[0].shape[1];
	mean_rmsnorm<T><<<(unsigned)((rows + WARPS - 1) / WARPS), THREADS, 0,
			  (cudaStream_t)ctx->stream>>>(
		(const T *)s->rs, (const T *)ctx->in[1].data, (T *)ctx->out[0].data, rows, hidden,
		1.0f / (float)ctx->world, 1.0f / (float)hidden,
		(float)pkb_param_get(ctx, "eps", 1e-5));
	PKB_CK_LAUNCH(ctx);
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	pkb_dtype t = ctx->in[0].dtype;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, t, &nt));
	PKB_CK_NCCL(ctx, ncclReduceScatter(ctx->in[0].data, s->rs, (size_t)ctx->out[0].numel, nt,
					   ncclSum, (ncclComm_t)ctx->nccl_comm,
					   (cudaStream_t)ctx->stream));
	PKB_CK(pkb_ref_float_dtype(ctx, t));
	PKB_CK(PKB_REF_FLOAT_CALL(t, launch, ctx, s));
	return 0;
}

static void release(struct state *s)
{
	cudaFree(s->rs);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
