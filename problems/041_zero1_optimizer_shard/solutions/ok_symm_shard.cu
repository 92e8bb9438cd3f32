/*
 * 041_zero1_optimizer_shard, known-good: the broadcast, the gradient
 * reduction and the all-gather over symmetric memory, the GEMMs with cuBLAS.
 *
 * 1. bcast: rank 0 stages its four parameters (P elements, flat) in its
 *    symmetric buffer and keeps them as its outputs; after a barrier every
 *    other rank pulls them into its outputs, where the forward reads them.
 *    Block b stages and pulls the same range: one barrier slot per block.
 * 2. The MLP: cuBLAS GEMMs with fp32 results, the bias, relu and the MSE
 *    gradient applied in fp32 and rounded once to T in small epilogue
 *    kernels (the rounding points of the original); the weight gradients go
 *    straight into this rank's symmetric gradient buffer, the bias
 *    gradients by fp32 column sums.
 * 3. shard_step: after a barrier, each rank pulls only ITS slice of the W
 *    partial gradients (a reduce-scatter, (W-1)/W P elements: the original
 *    all-reduces the whole vector and keeps the slice), sums them in fp32 in
 *    rank order, rounds once (NCCL's ring rounds after every add: a correct
 *    reordering), takes the mean and runs the Adam chain of the original
 *    (every intermediate rounded to T) into m_part, v_part and its
 *    symmetric slice buffer; a barrier; every rank pulls the W updated
 *    slices into its parameter outputs (the all-gather); a last barrier, so
 *    that no peer's next call overwrites a slice (or a gradient, or rank 0's
 *    staging) still being read. Block b owns the same sub-range of every
 *    slice on every rank.
 *
 * bcast uses barrier slots [0, 64), shard_step [64, 64 + 256). Not tuned.
 */
#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define BCAST_BLOCKS 64
#define REDUCE_BLOCKS 256

struct state {
	cublasHandle_t blas;
	pkb_symm stage;   /* rank 0's P parameters, flat */
	pkb_symm grad;    /* this rank's P-element gradient, flat */
	pkb_symm slice;   /* this rank's updated part = P/W parameters */
	float *acc;       /* GEMM results in fp32, (chunk, max(hidden, d_out)) */
	void *h, *dpre;   /* (chunk, hidden) of T */
	void *dout;       /* (chunk, d_out) of T */
};

/* the 4 parameters in the flat order W1 b1 W2 b2 */
struct segs {
	const void *in[4];
	void *out[4];
	int64_t start[5];
};

struct hyper {
	float b1, b2, one_m_b1, one_m_b2, eps, neg_lr, inv_w;
	double b1d, b2d;
};

template <typename T> __device__ __forceinline__ float rt(float x)
{
	return pkb_to_float(pkb_from_float<T>(x));
}

/* this block's share [e0, e1) of n elements */
__device__ __forceinline__ void block_range(int64_t n, int64_t *e0, int64_t *e1)
{
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	*e0 = min(n, per * (int64_t)blockIdx.x);
	*e1 = min(n, *e0 + per);
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
bcast(pkb_dev_comm comm, struct segs sg, T *const *stage)
{
	int64_t e0, e1;
	block_range(sg.start[4], &e0, &e1);
	T *s0 = stage[0];
	if (comm.rank == 0)
		for (int s = 0; s < 4; s++) {
			int64_t a = max(e0, sg.start[s]), b = min(e1, sg.start[s + 1]);
			for (int64_t i = a + threadIdx.x; i < b; i += THREADS) {
				T x = ((const T *)sg.in[s])[i - sg.start[s]];
				s0[i] = x;
				((T *)sg.out[s])[i - sg.start[s]] = x;
			}
		}
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	if (comm.rank != 0)
		for (int s = 0; s < 4; s++) {
			int64_t a = max(e0, sg.start[s]), b = min(e1, sg.start[s + 1]);
			for (int64_t i = a + threadIdx.x; i < b; i += THREADS)
				((T *)sg.out[s])[i - sg.start[s]] = s0[i];
		}
}

/* h = relu(T(X W1^T + b1)) */
template <typename T>
__global__ void bias_relu(const float *acc, const T *b, T *h, int64_t rows, int64_t cols)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < rows * cols;
	     i += (int64_t)gridDim.x * THREADS) {
		float x = rt<T>(acc[i] + pkb_to_float(b[i % cols]));
		h[i] = pkb_from_float<T>(x > 0.0f ? x : 0.0f);
	}
}

/* dout = T(T(alpha) * T(T(h W2^T + b2) - y)), in place of the fp32 result */
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

/* the gradient of the pre-activation: T(dout W2) where h > 0, else 0 */
template <typename T>
__global__ void relu_grad(const float *acc, const T *h, T *dpre, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS)
		dpre[i] = pkb_from_float<T>(pkb_to_float(h[i]) > 0.0f ? acc[i] : 0.0f);
}

template <typename T>
__global__ void colsum(const T *x, T *out, int64_t rows, int64_t cols)
{
	int64_t c = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (c >= cols)
		return;
	float s = 0.0f;
	for (int64_t r = 0; r < rows; r++)
		s += pkb_to_float(x[r * cols + c]);
	out[c] = pkb_from_float<T>(s);
}

/* the flat element i of the parameters, in whichever tensor holds it */
template <typename T>
__device__ __forceinline__ T *param_at(const struct segs &sg, int64_t i)
{
	int s = i < sg.start[1] ? 0 : i < sg.start[2] ? 1 : i < sg.start[3] ? 2 : 3;
	return (T *)sg.out[s] + (i - sg.start[s]);
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
shard_step(pkb_dev_comm comm, T *const *parts, T *const *slices, struct segs sg,
	   const T *m_in, const T *v_in, T *m_out, T *v_out, int64_t part,
	   const int64_t *step, struct hyper h)
{
	int slot = BCAST_BLOCKS + blockIdx.x;
	int64_t e0, e1, base = (int64_t)comm.rank * part;
	block_range(part, &e0, &e1);
	if (!pkb_barrier_block(comm, slot))
		return;
	double t = (double)*step;
	float inv_bc1 = 1.0f / (float)(1.0 - pow(h.b1d, t));
	float inv_bc2 = 1.0f / (float)(1.0 - pow(h.b2d, t));
	T *mine = slices[comm.rank];
	for (int64_t j = e0 + threadIdx.x; j < e1; j += THREADS) {
		float sum = 0.0f;
		for (int r = 0; r < comm.world; r++)
			sum += pkb_to_float(parts[r][base + j]);
		float g = rt<T>(rt<T>(sum) * h.inv_w);
		float m2 = rt<T>(rt<T>(pkb_to_float(m_in[j]) * h.b1) + h.one_m_b1 * g);
		float v2 = rt<T>(rt<T>(pkb_to_float(v_in[j]) * h.b2) + h.one_m_b2 * g * g);
		float mh = rt<T>(m2 * inv_bc1);
		float vh = rt<T>(v2 * inv_bc2);
		float den = rt<T>(rt<T>(sqrtf(vh)) + h.eps);
		float upd = rt<T>(rt<T>(mh / den) * h.neg_lr);
		m_out[j] = pkb_from_float<T>(m2);
		v_out[j] = pkb_from_float<T>(v2);
		mine[j] = pkb_from_float<T>(pkb_to_float(*param_at<T>(sg, base + j)) + upd);
	}
	if (!pkb_barrier_block(comm, slot))   /* every slice's part of this block landed */
		return;
	for (int q = 0; q < comm.world; q++)
		for (int64_t j = e0 + threadIdx.x; j < e1; j += THREADS)
			*param_at<T>(sg, (int64_t)q * part + j) = slices[q][j];
	pkb_barrier_block(comm, slot);   /* peers are done reading our slice */
}

/* row-major C (m, n) = op(A) (m, k) op(B) (k, n), fp32 accumulation: the
 * column-major C^T = op(B)^T op(A)^T */
static int gemm(cublasHandle_t hd, int ta, int tb, int64_t m, int64_t n, int64_t k,
		const void *a, int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc,
		cudaDataType ab, cudaDataType ct)
{
	const float one = 1.0f, zero = 0.0f;
	return cublasGemmEx(hd, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
			    (int)n, (int)m, (int)k, &one, b, ab, (int)ldb, a, ab, (int)lda,
			    &zero, c, ct, (int)ldc, CUBLAS_COMPUTE_32F,
			    CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	if (t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS)
		return 1;
	int64_t chunk = ctx->in[0].shape[0], hidden = ctx->in[2].shape[0];
	int64_t d_out = ctx->in[4].shape[0], e = (int64_t)pkb_dtype_size(t), p = 0;
	for (int i = 0; i < 4; i++)
		p += ctx->in[2 + i].numel;
	int64_t wide = hidden > d_out ? hidden : d_out;
	if (cudaMalloc(&s->acc, chunk * wide * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->h, chunk * hidden * e) != cudaSuccess ||
	    cudaMalloc(&s->dpre, chunk * hidden * e) != cudaSuccess ||
	    cudaMalloc(&s->dout, chunk * d_out * e) != cudaSuccess)
		return 1;
	if (ctx->svc->symm_alloc(ctx, p * e, &s->stage) ||
	    ctx->svc->symm_alloc(ctx, p * e, &s->grad) ||
	    ctx->svc->symm_alloc(ctx, p / ctx->world * e, &s->slice))
		return 1;
	return 0;
}

template <typename T>
static int step(pkb_ctx *ctx, struct state *s, cudaDataType ab)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t chunk = ctx->in[0].shape[0], d_in = ctx->in[0].shape[1];
	int64_t hidden = ctx->in[2].shape[0], d_out = ctx->in[4].shape[0];
	int64_t nh = chunk * hidden, no = chunk * d_out;
	struct segs sg;
	sg.start[0] = 0;
	for (int i = 0; i < 4; i++) {
		sg.in[i] = ctx->in[2 + i].data;
		sg.out[i] = ctx->out[i].data;
		sg.start[i + 1] = sg.start[i] + ctx->out[i].numel;
	}
	bcast<T><<<BCAST_BLOCKS, THREADS, 0, st>>>(ctx->dev, sg, (T *const *)s->stage.peers_dev);

	const T *x = (const T *)ctx->in[0].data, *y = (const T *)ctx->in[1].data;
	const T *w1 = (const T *)ctx->out[0].data, *b1 = (const T *)ctx->out[1].data;
	const T *w2 = (const T *)ctx->out[2].data, *b2 = (const T *)ctx->out[3].data;
	T *h = (T *)s->h, *dpre = (T *)s->dpre, *dout = (T *)s->dout;
	T *g_w1 = (T *)s->grad.local, *g_b1 = g_w1 + hidden * d_in, *g_w2 = g_b1 + hidden;
	T *g_b2 = g_w2 + d_out * hidden;
	unsigned gb = (unsigned)((nh + THREADS - 1) / THREADS);
	gb = gb > 1024 ? 1024 : gb;
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS)
		return 1;

	/* forward: acc = X W1^T, h = relu(T(acc + b1)); acc = h W2^T */
	if (gemm(s->blas, 0, 1, chunk, hidden, d_in, x, d_in, w1, d_in, s->acc, hidden, ab,
		 CUDA_R_32F))
		return 1;
	bias_relu<T><<<gb, THREADS, 0, st>>>(s->acc, b1, h, chunk, hidden);
	if (gemm(s->blas, 0, 1, chunk, d_out, hidden, h, hidden, w2, hidden, s->acc, d_out, ab,
		 CUDA_R_32F))
		return 1;
	bias_mse<T><<<gb, THREADS, 0, st>>>(s->acc, b2, y, dout, (float)(2.0 / (double)no),
					    chunk, d_out);

	/* backward into the symmetric gradient buffer */
	if (gemm(s->blas, 1, 0, d_out, hidden, chunk, dout, d_out, h, hidden, g_w2, hidden, ab,
		 ab))
		return 1;
	colsum<T><<<(unsigned)((d_out + THREADS - 1) / THREADS), THREADS, 0, st>>>(dout, g_b2,
										   chunk, d_out);
	if (gemm(s->blas, 0, 0, chunk, hidden, d_out, dout, d_out, w2, hidden, s->acc, hidden, ab,
		 CUDA_R_32F))
		return 1;
	relu_grad<T><<<gb, THREADS, 0, st>>>(s->acc, h, dpre, nh);
	if (gemm(s->blas, 1, 0, hidden, d_in, chunk, dpre, hidden, x, d_in, g_w1, d_in, ab, ab))
		return 1;
	colsum<T><<<(unsigned)((hidden + THREADS - 1) / THREADS), THREADS, 0, st>>>(dpre, g_b1,
										    chunk, hidden);

	double b1d = pkb_param_get(ctx, "beta1", 0.9), b2d = pkb_param_get(ctx, "beta2", 0.999);
	struct hyper hp = { (float)b1d, (float)b2d, (float)(1.0 - b1d), (float)(1.0 - b2d),
			    (float)pkb_param_get(ctx, "eps", 1e-8),
			    (float)-pkb_param_get(ctx, "lr", 1e-3), 1.0f / (float)ctx->world,
			    b1d, b2d };
	shard_step<T><<<REDUCE_BLOCKS, THREADS, 0, st>>>(
		ctx->dev, (T *const *)s->grad.peers_dev, (T *const *)s->slice.peers_dev, sg,
		(const T *)ctx->in[6].data, (const T *)ctx->in[7].data, (T *)ctx->out[4].data,
		(T *)ctx->out[5].data, ctx->in[6].numel, (const int64_t *)ctx->in[8].data, hp);
	return cudaGetLastError() != cudaSuccess;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return step<__nv_bfloat16>(ctx, s, CUDA_R_16BF);
	case PKB_FP16: return step<__half>(ctx, s, CUDA_R_16F);
	case PKB_FP32: return step<float>(ctx, s, CUDA_R_32F);
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
	cudaFree(s->acc);
	cudaFree(s->h);
	cudaFree(s->dpre);
	cudaFree(s->dout);
	free(s);
	ctx->user = NULL;
	return 0;
}
