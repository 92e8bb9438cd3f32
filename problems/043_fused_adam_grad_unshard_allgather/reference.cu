/*
 * 043_fused_adam_grad_unshard_allgather reference: one elementwise kernel for
 * the Adam step on this rank's slice, written straight into its place in the
 * gathered output, then an in-place ncclAllGather of the slices.
 *
 * Math, as torch evaluates it on tensors of dtype T (fp32 opmath inside each
 * op, a rounding to T after each; python floats become fp32 scalars):
 *     m1  = T(m * b1);           m2 = T(m1 + (1-b1) * g)
 *     v1  = T(v * b2);           v2 = T(v1 + (1-b2) * g * g)
 *     mh  = T(m2 * (1/bc1));     vh = T(v2 * (1/bc2))   (div by a scalar is a
 *                                                        mul by its reciprocal)
 *     den = T(T(sqrt(vh)) + eps)
 *     upd = T(T(mh / den) * -lr)
 *     w'  = T(w + upd)
 * bc1 = 1 - b1^step and bc2 = 1 - b2^step in fp64 (the original's math.pow),
 * here computed on the device from the int64 step input so the call never
 * waits on a host copy.
 *
 * Bytes: 4 slices of P read (32 KiB at P = 4096 bf16), W*P written; the
 * gather moves (W-1)*P*e per rank.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <stdint.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256

struct hyper {
	float b1, b2, one_m_b1, one_m_b2, eps, neg_lr;
	double b1d, b2d;
};

/* round through T */
template <typename T> __device__ __forceinline__ float rt(float x)
{
	return pkb_to_float(pkb_from_float<T>(x));
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
adam_step(const T *g, const T *w, const T *m, const T *v, const int64_t *step,
	  struct hyper h, T *out, int64_t p)
{
	double t = (double)*step;
	float inv_bc1 = 1.0f / (float)(1.0 - pow(h.b1d, t));
	float inv_bc2 = 1.0f / (float)(1.0 - pow(h.b2d, t));
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < p;
	     i += (int64_t)gridDim.x * THREADS) {
		float gf = pkb_to_float(g[i]);
		float m2 = rt<T>(rt<T>(pkb_to_float(m[i]) * h.b1) + h.one_m_b1 * gf);
		float v2 = rt<T>(rt<T>(pkb_to_float(v[i]) * h.b2) + h.one_m_b2 * gf * gf);
		float mh = rt<T>(m2 * inv_bc1);
		float vh = rt<T>(v2 * inv_bc2);
		float den = rt<T>(rt<T>(sqrtf(vh)) + h.eps);
		float upd = rt<T>(rt<T>(mh / den) * h.neg_lr);
		out[i] = pkb_from_float<T>(pkb_to_float(w[i]) + upd);
	}
}

template <typename T>
static int launch(pkb_ctx *ctx, cudaStream_t st, ncclComm_t comm)
{
	int64_t p = ctx->in[0].shape[0];
	double b1 = pkb_param_get(ctx, "beta1", 0.9), b2 = pkb_param_get(ctx, "beta2", 0.999);
	struct hyper h;
	h.b1 = (float)b1;
	h.b2 = (float)b2;
	h.one_m_b1 = (float)(1.0 - b1);
	h.one_m_b2 = (float)(1.0 - b2);
	h.eps = (float)pkb_param_get(ctx, "eps", 1e-8);
	h.neg_lr = (float)-pkb_param_get(ctx, "lr", 1e-3);
	h.b1d = b1;
	h.b2d = b2;
	T *out = (T *)ctx->out[0].data;
	T *mine = out + (int64_t)ctx->rank * p;
	adam_step<T><<<pkb_ref_blocks(p, THREADS, 64), THREADS, 0, st>>>(
		(const T *)ctx->in[0].data, (const T *)ctx->in[1].data, (const T *)ctx->in[2].data,
		(const T *)ctx->in[3].data, (const int64_t *)ctx->in[4].data, h, mine, p);
	PKB_CK_LAUNCH(ctx);
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));
	/* in place: the send buffer is this rank's slot of the receive buffer */
	PKB_CK_NCCL(ctx, ncclAllGather(mine, out, (size_t)p, nt, comm, st));
	return 0;
}

PKB_REF_FLOAT_STATELESS(pkb_ref_init_float, launch)
