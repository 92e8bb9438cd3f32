/*
 * mlp_kernels.cuh -- the MLP's element-wise kernels, which 040, 041 and 042
 * run alike: rounding to T, relu's backward, mse_loss's backward and the
 * bias gradient's column sums, and the forward and backward they make with
 * cuBLAS and linear.cuh's addmm (mlp_fwd_bwd); Adam's hyper-parameters
 * (adam_hyper) and 041/042's Adam on a slice. Included by mlp_ref.cuh,
 * after pkb_device.cuh and pkb_ref.cuh.
 */
#ifndef PKB_MLP_KERNELS_CUH
#define PKB_MLP_KERNELS_CUH

#include "linear.cuh"   /* defines: linear */

/* the block size of these kernels: their loops assume it, and
 * mlp_fwd_bwd launches them with it (nothing else launches them) */
#define MLP_THREADS 256

template <typename T> __device__ __forceinline__ float rt(float x)
{
	return pkb_to_float(pkb_from_float<T>(x));
}

/* mse_loss_backward with grad_output = 1: alpha * (out - y), each op in T */
template <typename T>
__global__ void mse_grad(T *o, const T *y, float alpha, int64_t n)
{
	float a = rt<T>(alpha);
	for (int64_t i = blockIdx.x * (int64_t)MLP_THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * MLP_THREADS)
		o[i] = pkb_from_float<T>(a * rt<T>(pkb_to_float(o[i]) - pkb_to_float(y[i])));
}

/* relu's backward: the gradient where the activation is > 0, else 0 */
template <typename T>
__global__ void relu_mask(T *dh, const T *h, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)MLP_THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * MLP_THREADS)
		if (!(pkb_to_float(h[i]) > 0.0f))
			dh[i] = pkb_from_float<T>(0.0f);
}

/* column sums of (rows, cols) in fp32, one rounding: a bias gradient */
template <typename T>
__global__ void colsum(const T *x, T *out, int64_t rows, int64_t cols)
{
	int64_t c = blockIdx.x * (int64_t)MLP_THREADS + threadIdx.x;
	if (c >= cols)
		return;
	float acc = 0.0f;
	for (int64_t r = 0; r < rows; r++)
		acc += pkb_to_float(x[r * cols + c]);
	out[c] = pkb_from_float<T>(acc);
}

/* The MLP's forward and backward on this rank's chunk of rows, as the
 * original's autograd: h = relu(T(x W1^T + b1)) and o = T(h W2^T + b2)
 * (linear: the bias added to the fp32 product in acc, (chunk, max(hidden,
 * d_out)) floats, before the one rounding), then the mean squared error's
 * gradient 2 (o - y) / numel into o and the layers' gradients into g_w2,
 * g_b2, g_w1 and g_b1 (dh: the hidden gradient, masked by relu in place).
 * cuBLAS on bh, already bound to st. 0, or 1 after logging a failed call. */

template <typename T>
static int mlp_fwd_bwd(pkb_ctx *ctx, cublasHandle_t bh, cudaStream_t st, pkb_dtype t,
		       const T *x, const T *y, const T *w1, const T *b1, const T *w2, const T *b2,
		       T *h, T *dh, T *o, float *acc, T *g_w1, T *g_b1, T *g_w2, T *g_b2,
		       int64_t chunk, int64_t d_in, int64_t hidden, int64_t d_out)
{
	int64_t nh = chunk * hidden, no = chunk * d_out;
	/* forward */
	PKB_CK(linear<T>(ctx, bh, st, t, chunk, hidden, d_in, x, d_in, w1, d_in, b1, acc, h,
			 hidden, 1));
	PKB_CK(linear<T>(ctx, bh, st, t, chunk, d_out, hidden, h, hidden, w2, hidden, b2, acc, o,
			 d_out, 0));

	/* backward of the mean squared error, then of both layers */
	mse_grad<T><<<pkb_ref_blocks(no, MLP_THREADS, 1024), MLP_THREADS, 0, st>>>(
		o, y, (float)(2.0 / (double)no), no);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_gemm_rm(ctx, bh, 1, 0, d_out, hidden, chunk, 1.0, o, d_out, h, hidden,
			       0.0, g_w2, hidden, t));
	colsum<T><<<pkb_ref_blocks(d_out, MLP_THREADS, 1024), MLP_THREADS, 0, st>>>(o, g_b2, chunk,
										     d_out);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_gemm_rm(ctx, bh, 0, 0, chunk, hidden, d_out, 1.0, o, d_out, w2, hidden,
			       0.0, dh, hidden, t));
	relu_mask<T><<<pkb_ref_blocks(nh, MLP_THREADS, 1024), MLP_THREADS, 0, st>>>(dh, h, nh);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_gemm_rm(ctx, bh, 1, 0, hidden, d_in, chunk, 1.0, dh, hidden, x, d_in,
			       0.0, g_w1, d_in, t));
	colsum<T><<<pkb_ref_blocks(hidden, MLP_THREADS, 1024), MLP_THREADS, 0, st>>>(dh, g_b1,
										      chunk, hidden);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

/* Adam's hyper-parameters from the params (torch's defaults where one is
 * missing), as the kernels take them: fp32 and, for the bias corrections'
 * powers, fp64; the mean over the W ranks as a product with 1/W */
struct hyper {
	float b1, b2, one_m_b1, one_m_b2, eps, neg_lr, inv_w;
	double b1d, b2d;
};

static struct hyper adam_hyper(pkb_ctx *ctx)
{
	double b1d = pkb_param_get(ctx, "beta1", 0.9), b2d = pkb_param_get(ctx, "beta2", 0.999);
	struct hyper hp;
	hp.b1 = (float)b1d;
	hp.b2 = (float)b2d;
	hp.one_m_b1 = (float)(1.0 - b1d);
	hp.one_m_b2 = (float)(1.0 - b2d);
	hp.eps = (float)pkb_param_get(ctx, "eps", 1e-8);
	hp.neg_lr = (float)-pkb_param_get(ctx, "lr", 1e-3);
	hp.inv_w = 1.0f / (float)ctx->world;   /* div_ by a scalar: times its reciprocal */
	hp.b1d = b1d;
	hp.b2d = b2d;
	return hp;
}

/* 041/042 (ZeRO): Adam on this rank's slice: p in place in the flat
 * buffer, m and v from the inputs into the outputs */
template <typename T>
__global__ void adam_slice(const T *gsum, T *p, const T *m_in, const T *v_in, T *m_out,
			   T *v_out, int64_t part, const int64_t *step, struct hyper h)
{
	double t = (double)*step;
	float inv_bc1 = 1.0f / (float)(1.0 - pow(h.b1d, t));
	float inv_bc2 = 1.0f / (float)(1.0 - pow(h.b2d, t));
	for (int64_t j = blockIdx.x * (int64_t)MLP_THREADS + threadIdx.x; j < part;
	     j += (int64_t)gridDim.x * MLP_THREADS) {
		float g = rt<T>(pkb_to_float(gsum[j]) * h.inv_w);
		float m2 = rt<T>(rt<T>(pkb_to_float(m_in[j]) * h.b1) + h.one_m_b1 * g);
		float v2 = rt<T>(rt<T>(pkb_to_float(v_in[j]) * h.b2) + h.one_m_b2 * g * g);
		float mh = rt<T>(m2 * inv_bc1);
		float vh = rt<T>(v2 * inv_bc2);
		float den = rt<T>(rt<T>(sqrtf(vh)) + h.eps);
		float upd = rt<T>(rt<T>(mh / den) * h.neg_lr);
		m_out[j] = pkb_from_float<T>(m2);
		v_out[j] = pkb_from_float<T>(v2);
		p[j] = pkb_from_float<T>(pkb_to_float(p[j]) + upd);
	}
}

#endif
