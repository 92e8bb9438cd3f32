/*
 * 047_fsdp_step_e2e reference: ncclAllGather of the parameter shards, the
 * MLP forward and backward as cuBLAS GEMMs (fp32 accumulation, one rounding
 * to T each) and small kernels, ncclReduceScatter of the flat gradients,
 * then one elementwise AdamW kernel on this rank's shard.
 *
 * Each step rounds to T where the original's torch op does (python floats
 * become fp32 scalars, T-tensor ops compute in fp32 and round once):
 *     pre = T(X W1^T + b1)             (addmm: the bias added to the fp32
 *                                       product before the one rounding;
 *                                       problems/lib/linear.cuh)
 *     h   = relu(pre)
 *     out = T(h W2^T + b2)
 *     d   = T(out - y);  dout = T(T(2/numel) * d)    (mse_loss_backward runs
 *                                  in T arithmetic, its scale a T scalar)
 *     dW2 = T(dout^T h);  db2 = T(sum_rows dout);  dh = T(dout W2)
 *     dpre = h > 0 ? dh : 0
 *     dW1 = T(dpre^T X);  db1 = T(sum_rows dpre)
 *     g   = T(reduce_scatter_sum(dW1, db1, dW2, db2) * (1/W))
 *     m1 = T(m b1);  m' = T(m1 + (1-b1) g)
 *     v1 = T(v b2);  v' = T(fma(1-b2, g g, v1))              (addcmul)
 *     mh = T(m' (1/bc1));  vh = T(v' (1/bc2))      (div by a scalar: times
 *                                                   its fp32 reciprocal)
 *     q  = T(mh / T(T(sqrt(vh)) + eps))
 *     t1 = T(p - lr q);  theta = T(t1 - (lr wd) p)
 * bc1 = 1 - b1^step, bc2 = 1 - b2^step in fp64 (math.pow), computed on the
 * device from the int64 step input so that the call never waits on a copy.
 *
 * Traffic: the gather and the reduce-scatter each receive (W-1) S e bytes
 * per rank (394 KB each at the default, W = 4, bf16).
 */
#include <stdlib.h>
#include <cuda_bf16.h>
#include "pkb_device.cuh"
#include "pkb_ref.cuh"
#include "linear.cuh"   /* defines: linear */

PKB_SOLUTION;

#define THREADS 256

struct ref47 {
	struct pkb_ref_blas blas;
	int64_t d_in, hidden, d_out, ch, p, s;
	void *full;    /* [P] gathered parameters */
	void *act;     /* [ch, hidden] pre, then h in place */
	void *out;     /* [ch, d_out] out, then dout in place */
	void *dh;      /* [ch, hidden] dh, then dpre in place */
	void *grad;    /* [P] flat gradients */
	void *gs;      /* [S] this rank's summed gradient shard */
	float *acc;    /* [ch, max(hidden, d_out)] linear's fp32 products */
};

struct hyper {
	float b1, b2, omb1, omb2, eps, nlr, nlrwd, inv_w;
	double b1d, b2d;
};

template <typename T> __device__ __forceinline__ float rt(float x)
{
	return pkb_to_float(pkb_from_float<T>(x));
}

/* in place: out -> dout = T(alpha_T * T(out - y)) (times grad_output 1) */
template <typename T>
__global__ void mse_grad(T *out, const T *y, float alpha, int64_t n)
{
	float a = rt<T>(alpha);
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		float d = rt<T>(pkb_to_float(out[i]) - pkb_to_float(y[i]));
		out[i] = pkb_from_float<T>(a * d);
	}
}

/* in place: dh -> dh where h > 0, else 0 (relu's backward on its output) */
template <typename T>
__global__ void relu_grad(T *dh, const T *h, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS)
		if (!(pkb_to_float(h[i]) > 0.f))
			dh[i] = pkb_from_float<T>(0.f);
}

/* bias gradient: column sums of x (rows, cols) in fp32, rounded once */
template <typename T>
__global__ void col_sum(const T *x, T *out, int64_t rows, int64_t cols)
{
	for (int64_t j = blockIdx.x * (int64_t)THREADS + threadIdx.x; j < cols;
	     j += (int64_t)gridDim.x * THREADS) {
		float acc = 0.f;
		for (int64_t i = 0; i < rows; i++)
			acc += pkb_to_float(x[i * cols + j]);
		out[j] = pkb_from_float<T>(acc);
	}
}

template <typename T>
__global__ void adamw(const T *gs, const T *p, const T *m, const T *v, const int64_t *step,
		      struct hyper h, T *theta, T *m_out, T *v_out, int64_t s)
{
	double t = (double)*step;
	float ib1 = 1.0f / (float)(1.0 - pow(h.b1d, t));
	float ib2 = 1.0f / (float)(1.0 - pow(h.b2d, t));
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < s;
	     i += (int64_t)gridDim.x * THREADS) {
		float g = rt<T>(pkb_to_float(gs[i]) * h.inv_w);
		float pf = pkb_to_float(p[i]);
		float m2 = rt<T>(fmaf(h.omb1, g, rt<T>(pkb_to_float(m[i]) * h.b1)));
		float v2 = rt<T>(fmaf(h.omb2, g * g, rt<T>(pkb_to_float(v[i]) * h.b2)));
		float mh = rt<T>(m2 * ib1);
		float vh = rt<T>(v2 * ib2);
		float q = rt<T>(mh / rt<T>(rt<T>(sqrtf(vh)) + h.eps));
		float t1 = rt<T>(fmaf(h.nlr, q, pf));
		theta[i] = pkb_from_float<T>(fmaf(h.nlrwd, pf, t1));
		m_out[i] = pkb_from_float<T>(m2);
		v_out[i] = pkb_from_float<T>(v2);
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	if (t != PKB_BF16 && t != PKB_FP32) {
		ctx->svc->log(ctx, "problem 47 reference: unsupported dtype %s",
			      pkb_ref_dtype_name(t));
		return 1;
	}
	struct ref47 *r;
	PKB_CK(pkb_ref_state(ctx, &r));
	r->ch = ctx->in[0].shape[0];
	r->d_in = ctx->in[0].shape[1];
	r->d_out = ctx->in[1].shape[1];
	r->hidden = (int64_t)pkb_param_get(ctx, "hidden", 0);
	r->s = ctx->in[2].shape[0];
	r->p = r->s * ctx->world;
	if (r->hidden * (r->d_in + 1 + r->d_out) + r->d_out != r->p) {
		ctx->svc->log(ctx, "problem 47 reference: param_shapes do not add up to W*S");
		return 1;
	}
	size_t e = pkb_dtype_size(t);
	PKB_CK_CUDA(ctx, cudaMalloc(&r->full, r->p * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->act, r->ch * r->hidden * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->out, r->ch * r->d_out * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->dh, r->ch * r->hidden * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->grad, r->p * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->gs, r->s * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->acc, r->ch * (r->hidden > r->d_out ? r->hidden : r->d_out) *
					     (int64_t)sizeof(float)));
	return pkb_ref_blas_init(ctx, &r->blas);
}

template <typename T>
static int step(pkb_ctx *ctx, struct ref47 *r)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	cublasHandle_t bh = r->blas.h;
	pkb_dtype t = ctx->in[0].dtype;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	ncclDataType_t nt;
	int64_t ch = r->ch, di = r->d_in, hd = r->hidden, dout = r->d_out;
	const T *x = (const T *)ctx->in[0].data, *y = (const T *)ctx->in[1].data;
	T *full = (T *)r->full, *act = (T *)r->act, *out = (T *)r->out, *dh = (T *)r->dh;
	T *grad = (T *)r->grad;
	/* the flat layout (W1, b1, W2, b2) of both params and gradients */
	int64_t o_b1 = hd * di, o_w2 = o_b1 + hd, o_b2 = o_w2 + dout * hd;

	PKB_CK(pkb_ref_nccl_type(ctx, t, &nt));
	PKB_CK(pkb_ref_blas_bind(ctx, &r->blas, st));
	PKB_CK_NCCL(ctx, ncclAllGather(ctx->in[2].data, full, (size_t)r->s, nt, comm, st));

	/* forward */
	PKB_CK(linear<T>(ctx, bh, st, t, ch, hd, di, x, di, full, di, full + o_b1, r->acc, act, hd,
			 1));
	PKB_CK(linear<T>(ctx, bh, st, t, ch, dout, hd, act, hd, full + o_w2, hd, full + o_b2,
			 r->acc, out, dout, 0));

	/* backward: mse_loss (mean over this rank's ch * d_out), then the
	 * layers; X needs no gradient */
	mse_grad<T><<<pkb_ref_blocks(ch * dout, THREADS, 1024), THREADS, 0, st>>>(out, y,
		(float)(2.0 / (double)(ch * dout)), ch * dout);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_gemm_rm(ctx, bh, 1, 0, dout, hd, ch, 1.0, out, dout, act, hd, 0.0,
			       grad + o_w2, hd, t));
	col_sum<T><<<pkb_ref_blocks(dout, THREADS, 1024), THREADS, 0, st>>>(out, grad + o_b2,
		ch, dout);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_gemm_rm(ctx, bh, 0, 0, ch, hd, dout, 1.0, out, dout, full + o_w2, hd,
			       0.0, dh, hd, t));
	relu_grad<T><<<pkb_ref_blocks(ch * hd, THREADS, 1024), THREADS, 0, st>>>(dh, act,
		ch * hd);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_gemm_rm(ctx, bh, 1, 0, hd, di, ch, 1.0, dh, hd, x, di, 0.0, grad, di, t));
	col_sum<T><<<pkb_ref_blocks(hd, THREADS, 1024), THREADS, 0, st>>>(dh, grad + o_b1, ch,
		hd);
	PKB_CK_LAUNCH(ctx);

	PKB_CK_NCCL(ctx, ncclReduceScatter(grad, r->gs, (size_t)r->s, nt, ncclSum, comm, st));

	double b1 = pkb_param_get(ctx, "beta1", 0.9), b2 = pkb_param_get(ctx, "beta2", 0.999);
	double lr = pkb_param_get(ctx, "lr", 1e-3), wd = pkb_param_get(ctx, "weight_decay", 0.01);
	struct hyper h;
	h.b1 = (float)b1;
	h.b2 = (float)b2;
	h.omb1 = (float)(1.0 - b1);
	h.omb2 = (float)(1.0 - b2);
	h.eps = (float)pkb_param_get(ctx, "eps", 1e-8);
	h.nlr = (float)-lr;
	h.nlrwd = (float)(-lr * wd);
	h.inv_w = 1.0f / (float)ctx->world;
	h.b1d = b1;
	h.b2d = b2;
	adamw<T><<<pkb_ref_blocks(r->s, THREADS, 1024), THREADS, 0, st>>>((const T *)r->gs,
		(const T *)ctx->in[2].data, (const T *)ctx->in[3].data,
		(const T *)ctx->in[4].data, (const int64_t *)ctx->in[5].data, h,
		(T *)ctx->out[0].data, (T *)ctx->out[1].data, (T *)ctx->out[2].data, r->s);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct ref47 *r = (struct ref47 *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return step<__nv_bfloat16>(ctx, r);
	case PKB_FP32: return step<float>(ctx, r);
	default: return 1;
	}
}

static void release(struct ref47 *r)
{
	pkb_ref_blas_fini(&r->blas);
	cudaFree(r->full);
	cudaFree(r->act);
	cudaFree(r->out);
	cudaFree(r->dh);
	cudaFree(r->grad);
	cudaFree(r->gs);
	cudaFree(r->acc);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
