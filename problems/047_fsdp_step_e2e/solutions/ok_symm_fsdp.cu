/*
 * 047_fsdp_step_e2e, known-good: the FSDP step over symmetric memory, cuBLAS
 * for the local GEMMs.
 *
 *   1. gather: each block copies its range of this rank's parameter shard
 *      into the symmetric `shard` buffer, meets the same block on every
 *      rank, and pulls that range of every rank's shard into the local full
 *      parameter vector.
 *   2. forward and backward as the reference computes them (T-rounded
 *      activations, cuBLAS GEMMs), except that the four gradients land in
 *      fp32, unrounded, in the symmetric `grad` buffer (the GEMMs write an
 *      fp32 C; the bias sums stay fp32). Each layer's bias is added to its
 *      fp32 product before the one rounding to T, as the reference
 *      (lib/linear.cuh) does, in one kernel with relu or the MSE gradient.
 *   3. reduce + AdamW: each block meets its peers, sums its range of this
 *      rank's gradient shard over the W ranks in fp32 (rank order), scales
 *      by 1/W, rounds once to T and runs the AdamW chain with the
 *      reference's roundings.
 * Each kernel's barrier also says that every peer has finished the other
 * kernel of the call before (stream order), so `shard` and `grad` are never
 * overwritten while a peer still reads them: no trailing barrier.
 *
 * Traffic: (W-1) S e of parameters and (W-1) S 4 of fp32 gradients read
 * from peers: 3x the minimum in bf16. Not tuned.
 */
#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define BLOCKS 64    /* per exchange kernel; slots [0, 64) and [64, 128) */

struct state {
	cublasHandle_t blas;
	int64_t d_in, hidden, d_out, ch, s;
	pkb_symm shard;   /* [S] of T: this rank's parameter shard */
	pkb_symm grad;    /* [P] fp32: this rank's flat gradients */
	void *full, *act, *out, *dh;
	float *acc;       /* [ch, max(hidden, d_out)]: the layers' fp32 products */
};

struct hyper {
	float b1, b2, omb1, omb2, eps, nlr, nlrwd, inv_w;
	double b1d, b2d;
};

template <typename T> __device__ __forceinline__ float rt(float x)
{
	return pkb_to_float(pkb_from_float<T>(x));
}

/* this block's range of [0, n) */
__device__ __forceinline__ void block_range(int64_t n, int64_t *e0, int64_t *e1)
{
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	*e0 = min(n, per * blockIdx.x);
	*e1 = min(n, *e0 + per);
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
gather(pkb_dev_comm comm, const T *mine, T *const *shards, T *full, int64_t s)
{
	int64_t e0, e1;
	block_range(s, &e0, &e1);
	for (int64_t i = e0 + threadIdx.x; i < e1; i += THREADS)
		shards[comm.rank][i] = mine[i];
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int j = 0; j < comm.world; j++) {
		const T *src = shards[j];
		for (int64_t i = e0 + threadIdx.x; i < e1; i += THREADS)
			full[j * s + i] = src[i];
	}
}

/* act = relu(T(acc + b1)): addmm's one rounding, then relu */
template <typename T>
__global__ void bias_relu(const float *acc, const T *b, T *act, int64_t rows, int64_t cols)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < rows * cols;
	     i += (int64_t)gridDim.x * THREADS) {
		float pre = rt<T>(acc[i] + pkb_to_float(b[i % cols]));
		act[i] = pkb_from_float<T>(pre > 0.f ? pre : 0.f);
	}
}

/* dout = T(T(2/numel) * T(out - y)) with out = T(acc + b2), never stored
 * (torch's mse backward computes in T) */
template <typename T>
__global__ void bias_mse(const float *acc, const T *b, const T *y, T *dout, float alpha,
			 int64_t rows, int64_t cols)
{
	float a = rt<T>(alpha);
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < rows * cols;
	     i += (int64_t)gridDim.x * THREADS) {
		float out = rt<T>(acc[i] + pkb_to_float(b[i % cols]));
		dout[i] = pkb_from_float<T>(a * rt<T>(out - pkb_to_float(y[i])));
	}
}

template <typename T>
__global__ void relu_grad(T *dh, const T *h, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS)
		if (!(pkb_to_float(h[i]) > 0.f))
			dh[i] = pkb_from_float<T>(0.f);
}

/* fp32 column sums, left unrounded for the exchange */
template <typename T>
__global__ void col_sum(const T *x, float *out, int64_t rows, int64_t cols)
{
	for (int64_t j = blockIdx.x * (int64_t)THREADS + threadIdx.x; j < cols;
	     j += (int64_t)gridDim.x * THREADS) {
		float acc = 0.f;
		for (int64_t i = 0; i < rows; i++)
			acc += pkb_to_float(x[i * cols + j]);
		out[j] = acc;
	}
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
reduce_adamw(pkb_dev_comm comm, float *const *grads, const T *p, const T *m, const T *v,
	     const int64_t *step, struct hyper h, T *theta, T *m_out, T *v_out, int64_t s)
{
	int64_t e0, e1;
	block_range(s, &e0, &e1);
	double t = (double)*step;
	float ib1 = 1.0f / (float)(1.0 - pow(h.b1d, t));
	float ib2 = 1.0f / (float)(1.0 - pow(h.b2d, t));
	int64_t base = (int64_t)comm.rank * s;
	if (!pkb_barrier_block(comm, BLOCKS + blockIdx.x))
		return;
	for (int64_t i = e0 + threadIdx.x; i < e1; i += THREADS) {
		float acc = 0.f;
		for (int j = 0; j < comm.world; j++)
			acc += grads[j][base + i];
		float g = rt<T>(acc * h.inv_w);
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
	if (t != PKB_BF16 && t != PKB_FP32)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->ch = ctx->in[0].shape[0];
	s->d_in = ctx->in[0].shape[1];
	s->d_out = ctx->in[1].shape[1];
	s->hidden = (int64_t)pkb_param_get(ctx, "hidden", 0);
	s->s = ctx->in[2].shape[0];
	if (ctx->world > THREADS ||
	    s->hidden * (s->d_in + 1 + s->d_out) + s->d_out != s->s * ctx->world)
		return 1;
	size_t e = pkb_dtype_size(t);
	if (cudaMalloc(&s->full, s->s * ctx->world * e) != cudaSuccess ||
	    cudaMalloc(&s->act, s->ch * s->hidden * e) != cudaSuccess ||
	    cudaMalloc(&s->out, s->ch * s->d_out * e) != cudaSuccess ||
	    cudaMalloc(&s->dh, s->ch * s->hidden * e) != cudaSuccess ||
	    cudaMalloc(&s->acc, s->ch * (s->hidden > s->d_out ? s->hidden : s->d_out) *
				sizeof(float)) != cudaSuccess)
		return 1;
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS)
		return 1;
	if (ctx->svc->symm_alloc(ctx, s->s * e, &s->shard) != 0)
		return 1;
	return ctx->svc->symm_alloc(ctx, s->s * ctx->world * sizeof(float), &s->grad);
}

/* row-major C (m, n) = op(A) (m, k) op(B) (k, n), C of type ct: the
 * column-major C^T = op(B)^T op(A)^T, operands swapped */
static int gemm(cublasHandle_t hdl, int ta, int tb, int64_t m, int64_t n, int64_t k,
		const void *a, int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc,
		cudaDataType t, cudaDataType ct)
{
	const float one = 1.0f, zero = 0.0f;
	return cublasGemmEx(hdl, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
			    (int)n, (int)m, (int)k, &one, b, t, (int)ldb, a, t, (int)lda, &zero,
			    c, ct, (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) !=
	       CUBLAS_STATUS_SUCCESS;
}

template <typename T>
static int step(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	cudaDataType t = ctx->in[0].dtype == PKB_BF16 ? CUDA_R_16BF : CUDA_R_32F;
	int64_t ch = s->ch, di = s->d_in, hd = s->hidden, dout = s->d_out;
	int64_t o_b1 = hd * di, o_w2 = o_b1 + hd, o_b2 = o_w2 + dout * hd;
	const T *x = (const T *)ctx->in[0].data, *y = (const T *)ctx->in[1].data;
	T *full = (T *)s->full, *act = (T *)s->act, *out = (T *)s->out, *dh = (T *)s->dh;
	float *grad = (float *)s->grad.local;
	unsigned nb = 256;

	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS)
		return 1;
	gather<T><<<BLOCKS, THREADS, 0, st>>>(ctx->dev, (const T *)ctx->in[2].data,
		(T *const *)s->shard.peers_dev, full, s->s);

	/* forward: acc = X W1^T, act = relu(T(acc + b1)); acc = act W2^T, and
	 * the output goes straight to its MSE gradient (into `out`) */
	if (gemm(s->blas, 0, 1, ch, hd, di, x, di, full, di, s->acc, hd, t, CUDA_R_32F))
		return 1;
	bias_relu<T><<<nb, THREADS, 0, st>>>(s->acc, full + o_b1, act, ch, hd);
	if (gemm(s->blas, 0, 1, ch, dout, hd, act, hd, full + o_w2, hd, s->acc, dout, t,
		 CUDA_R_32F))
		return 1;
	bias_mse<T><<<nb, THREADS, 0, st>>>(s->acc, full + o_b2, y, out,
					    (float)(2.0 / (double)(ch * dout)), ch, dout);

	if (gemm(s->blas, 1, 0, dout, hd, ch, out, dout, act, hd, grad + o_w2, hd, t,
		 CUDA_R_32F))
		return 1;
	col_sum<T><<<nb, THREADS, 0, st>>>(out, grad + o_b2, ch, dout);
	if (gemm(s->blas, 0, 0, ch, hd, dout, out, dout, full + o_w2, hd, dh, hd, t, t))
		return 1;
	relu_grad<T><<<nb, THREADS, 0, st>>>(dh, act, ch * hd);
	if (gemm(s->blas, 1, 0, hd, di, ch, dh, hd, x, di, grad, di, t, CUDA_R_32F))
		return 1;
	col_sum<T><<<nb, THREADS, 0, st>>>(dh, grad + o_b1, ch, hd);

	double b1 = pkb_param_get(ctx, "beta1", 0.9), b2 = pkb_param_get(ctx, "beta2", 0.999);
	double lr = pkb_param_get(ctx, "lr", 1e-3), wd = pkb_param_get(ctx, "weight_decay", 0.01);
	struct hyper h = { (float)b1, (float)b2, (float)(1.0 - b1), (float)(1.0 - b2),
			   (float)pkb_param_get(ctx, "eps", 1e-8), (float)-lr, (float)(-lr * wd),
			   1.0f / (float)ctx->world, b1, b2 };
	reduce_adamw<T><<<BLOCKS, THREADS, 0, st>>>(ctx->dev, (float *const *)s->grad.peers_dev,
		(const T *)ctx->in[2].data, (const T *)ctx->in[3].data,
		(const T *)ctx->in[4].data, (const int64_t *)ctx->in[5].data, h,
		(T *)ctx->out[0].data, (T *)ctx->out[1].data, (T *)ctx->out[2].data, s->s);
	return cudaGetLastError() != cudaSuccess;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return step<__nv_bfloat16>(ctx, s);
	case PKB_FP32: return step<float>(ctx, s);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->blas)
		cublasDestroy(s->blas);
	cudaFree(s->full);
	cudaFree(s->act);
	cudaFree(s->out);
	cudaFree(s->dh);
	cudaFree(s->acc);
	free(s);
	ctx->user = NULL;
	return 0;
}
