/*
 * 040_ddp reference: NCCL broadcasts of the 12 model and optimizer tensors
 * from rank 0 straight into the outputs (one group: the original's three
 * flat broadcasts without the flatten copies), the MLP forward and backward
 * with cuBLAS (fp32 accumulation, one rounding to T per GEMM, as torch's
 * addmm / mm), an in-place ncclAllReduce of the flat gradient, and one
 * elementwise kernel for the mean and the Adam step, in place in the
 * outputs.
 *
 * Roundings, as torch evaluates the original on tensors of dtype T:
 *     pre  = T(X W1^T + b1)           addmm: bias added in fp32, one rounding
 *                                     (lib/linear.cuh: cuBLAS's fp32 product, then
 *                                     the bias and the rounding)
 *     h    = relu(pre)
 *     out  = T(h W2^T + b2)
 *     dout = T(T(2/numel) * T(out - y))   mse_loss_backward runs in T's own
 *                                         arithmetic, alpha a T scalar
 *     dW2  = T(dout^T h),  db2 = T(colsum dout)   (fp32 sums)
 *     dh   = T(dout W2) masked by h > 0
 *     dW1  = T(dh^T X),    db1 = T(colsum dh)
 *     g    = T(allreduce_sum(flat) * (1/W))       NCCL rounds after every add
 * then Adam with every intermediate rounded to T (043's chain):
 *     m = T(T(m b1) + (1-b1) g);  v = T(T(v b2) + (1-b2) g g)
 *     p = T(p + T(T(T(m/bc1) / T(T(sqrt(T(v/bc2))) + eps)) * -lr))
 * bc1, bc2 from the int64 step on the device (fp64 pow, the original's
 * math.pow), so the call never waits on a host copy.
 *
 * Traffic per rank: 3P elements broadcast, 2 (W-1)/W P all-reduced.
 */
#include <stdlib.h>
#include <stdint.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS MLP_THREADS   /* every kernel's block size, mlp_kernels.cuh's too */

/* the 4 parameters, their moments, and where each starts in the flat order */
struct params {
	void *p[4], *m[4], *v[4];
	int64_t start[5];
};

#include "mlp_ref.cuh"
/* defines: struct mlp_ref, mlp_ref_init, mlp_release, MLP_THREADS, struct hyper,
 * adam_hyper, rt, mse_grad, relu_mask, colsum, mlp_fwd_bwd (and linear.cuh's linear) */

template <typename T>
__global__ void adam(const T *gsum, struct params ps, const int64_t *step, struct hyper h)
{
	double t = (double)*step;
	float inv_bc1 = 1.0f / (float)(1.0 - pow(h.b1d, t));
	float inv_bc2 = 1.0f / (float)(1.0 - pow(h.b2d, t));
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < ps.start[4];
	     i += (int64_t)gridDim.x * THREADS) {
		int s = i < ps.start[1] ? 0 : i < ps.start[2] ? 1 : i < ps.start[3] ? 2 : 3;
		int64_t j = i - ps.start[s];
		T *p = (T *)ps.p[s], *m = (T *)ps.m[s], *v = (T *)ps.v[s];
		float g = rt<T>(pkb_to_float(gsum[i]) * h.inv_w);
		float m2 = rt<T>(rt<T>(pkb_to_float(m[j]) * h.b1) + h.one_m_b1 * g);
		float v2 = rt<T>(rt<T>(pkb_to_float(v[j]) * h.b2) + h.one_m_b2 * g * g);
		float mh = rt<T>(m2 * inv_bc1);
		float vh = rt<T>(v2 * inv_bc2);
		float den = rt<T>(rt<T>(sqrtf(vh)) + h.eps);
		float upd = rt<T>(rt<T>(mh / den) * h.neg_lr);
		m[j] = pkb_from_float<T>(m2);
		v[j] = pkb_from_float<T>(v2);
		p[j] = pkb_from_float<T>(pkb_to_float(p[j]) + upd);
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return mlp_ref_init(ctx, 0, 0);   /* no flat copy (the broadcasts land in the outputs) */
}

template <typename T>
static int step(pkb_ctx *ctx, struct mlp_ref *r)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	pkb_dtype t = ctx->in[0].dtype;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, t, &nt));
	int64_t chunk = ctx->in[0].shape[0], d_in = ctx->in[0].shape[1];
	int64_t hidden = ctx->in[2].shape[0], d_out = ctx->in[4].shape[0];

	/* rank 0's parameters and moments into every rank's outputs */
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int i = 0; i < 12; i++)
		PKB_CK_NCCL(ctx, ncclBroadcast(ctx->in[2 + i].data, ctx->out[i].data,
					       ctx->out[i].numel, nt, 0, comm, st));
	PKB_CK_NCCL(ctx, ncclGroupEnd());

	const T *x = (const T *)ctx->in[0].data, *y = (const T *)ctx->in[1].data;
	const T *w1 = (const T *)ctx->out[0].data, *b1 = (const T *)ctx->out[1].data;
	const T *w2 = (const T *)ctx->out[2].data, *b2 = (const T *)ctx->out[3].data;
	T *h = (T *)r->h, *dh = (T *)r->dh, *o = (T *)r->o, *g = (T *)r->g;
	T *g_w1 = g, *g_b1 = g_w1 + hidden * d_in, *g_w2 = g_b1 + hidden;
	T *g_b2 = g_w2 + d_out * hidden;
	int64_t p = hidden * d_in + hidden + d_out * hidden + d_out;
	cublasHandle_t bh = r->blas.h;
	PKB_CK(pkb_ref_blas_bind(ctx, &r->blas, st));

	/* forward and backward (mlp_kernels.cuh) */
	PKB_CK(mlp_fwd_bwd<T>(ctx, bh, st, t, x, y, w1, b1, w2, b2, h, dh, o, r->acc, g_w1, g_b1,
			      g_w2, g_b2, chunk, d_in, hidden, d_out));

	/* the gradient all-reduce (sum; the mean is taken in the Adam kernel) */
	PKB_CK_NCCL(ctx, ncclAllReduce(g, g, (size_t)p, nt, ncclSum, comm, st));

	struct hyper hp = adam_hyper(ctx);
	struct params ps;
	ps.start[0] = 0;
	for (int i = 0; i < 4; i++) {
		ps.p[i] = ctx->out[i].data;
		ps.m[i] = ctx->out[4 + i].data;
		ps.v[i] = ctx->out[8 + i].data;
		ps.start[i + 1] = ps.start[i] + ctx->out[i].numel;
	}
	adam<T><<<pkb_ref_blocks(p, THREADS, 1024), THREADS, 0, st>>>(
		g, ps, (const int64_t *)ctx->in[14].data, hp);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	return PKB_REF_FLOAT_CALL(ctx->in[0].dtype, step, ctx, (struct mlp_ref *)ctx->user);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, mlp_release);
}
