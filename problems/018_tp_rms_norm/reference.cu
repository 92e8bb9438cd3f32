/*
 * 018_tp_rms_norm reference: per-row sum of squares (fp32), an in-place NCCL
 * all-reduce of the M sums, then one kernel that normalises and applies the
 * weight -- the original's upcast, pow, sum, all_reduce, divide, rsqrt,
 * multiply, cast and weight multiply, fused into two passes over x.
 *
 * Math, exactly as torch evaluates it (T = the dtype, fp32 in between):
 *     ss[i]  = sum_j fl(x[i,j]^2), all-reduced over ranks
 *     var[i] = ss[i] * fl(1 / (W*N))          (torch divides by a scalar this way)
 *     y      = T( x[i,j] * rsqrt(var[i] + eps) )
 *     out    = T( w[j] * y )
 *
 * Bytes: x is read twice (2 MiB each at M = N = 1024, bf16; the second read
 * mostly from L2), out written once; the all-reduce carries 4M bytes.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256
#define WARPS (THREADS / 32)

struct state {
	float *ss;   /* [M] */
};

/* a warp per row */
template <typename T>
__global__ void __launch_bounds__(THREADS)
row_sumsq(const T *x, float *ss, int64_t m, int64_t n)
{
	int lane = threadIdx.x & 31;
	for (int64_t i = blockIdx.x * (int64_t)WARPS + (threadIdx.x >> 5); i < m;
	     i += (int64_t)gridDim.x * WARPS) {
		const T *row = x + i * n;
		float acc = 0.f;
		for (int64_t j = lane; j < n; j += 32) {
			float v = pkb_to_float(row[j]);
			acc += __fmul_rn(v, v);
		}
		for (int o = 16; o > 0; o >>= 1)
			acc += __shfl_xor_sync(0xffffffffu, acc, o);
		if (lane == 0)
			ss[i] = acc;
	}
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
rms_apply(const T *x, const T *w, const float *ss, T *out, int64_t m, int64_t n,
	  float inv_hidden, float eps)
{
	int lane = threadIdx.x & 31;
	for (int64_t i = blockIdx.x * (int64_t)WARPS + (threadIdx.x >> 5); i < m;
	     i += (int64_t)gridDim.x * WARPS) {
		float rs = rsqrtf(__fadd_rn(__fmul_rn(ss[i], inv_hidden), eps));
		const T *row = x + i * n;
		T *o = out + i * n;
		for (int64_t j = lane; j < n; j += 32) {
			float y = pkb_to_float(pkb_from_float<T>(__fmul_rn(pkb_to_float(row[j]), rs)));
			o[j] = pkb_from_float<T>(__fmul_rn(pkb_to_float(w[j]), y));
		}
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->ss, (size_t)ctx->in[0].shape[0] * sizeof(float)));
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	int64_t m = ctx->in[0].shape[0], n = ctx->in[0].shape[1];
	int64_t blocks = (m + WARPS - 1) / WARPS;
	unsigned g = (unsigned)(blocks > 4096 ? 4096 : blocks);
	row_sumsq<T><<<g, THREADS, 0, st>>>((const T *)ctx->in[0].data, s->ss, m, n);
	ncclResult_t r = ncclAllReduce(s->ss, s->ss, (size_t)m, ncclFloat32, ncclSum, comm, st);
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "ncclAllReduce: %s", ncclGetErrorString(r));
		return 1;
	}
	float inv_hidden = 1.0f / (float)((int64_t)ctx->world * n);
	float eps = (float)pkb_param_get(ctx, "variance_epsilon", 1e-5);
	rms_apply<T><<<g, THREADS, 0, st>>>((const T *)ctx->in[0].data, (const T *)ctx->in[1].data,
					    s->ss, (T *)ctx->out[0].data, m, n, inv_hidden, eps);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

static void release(struct state *s)
{
	cudaFree(s->ss);
}

PKB_REF_FLOAT_RUN_FINI(struct state, launch, release)
