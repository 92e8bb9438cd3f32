/*
 * 015_combined_sharded_gemms, known-bad: an off-by-rank in the row blocks.
 * Same as ok_push_rows.cu, but every rank receives row block 0 of x_full
 * (rows 0 .. Ml-1) instead of its own block r. Rank 0's output is right;
 * every other rank's is wrong -- which only a check of every rank catches.
 * pkb-expect: mismatch
 */
#include <stdlib.h>
#include <stdint.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define MAX_BLOCKS 64

struct state {
	cublasHandle_t blas;
	pkb_symm x;     /* (Ml, H): row block `rank` of x_full */
	float *h;       /* (Ml, F), fp32 */
	void *a;        /* (Ml, F), working dtype */
};

template <typename E>
__global__ void __launch_bounds__(THREADS)
push_rows(pkb_dev_comm comm, const E *x_local, E *const *x, int64_t ml, int64_t hl)
{
	int64_t n = ml * hl, hd = hl * comm.world;
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t e0 = min(n, per * blockIdx.x), e1 = min(n, e0 + per);

	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int d = 0; d < comm.world; d++) {
		E *dst = x[d];
		for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x)
			dst[(e / hl) * hd + comm.rank * hl + e % hl] = x_local[e];
	}
	pkb_barrier_block(comm, blockIdx.x);
}

template <typename T>
__global__ void silu_round(const float *h, T *a, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		a[i] = pkb_from_float<T>(h[i] / (1.0f + expf(-h[i])));
}

static cudaDataType blas_type(pkb_dtype t)
{
	return t == PKB_BF16 ? CUDA_R_16BF : t == PKB_FP16 ? CUDA_R_16F : CUDA_R_32F;
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
	int64_t ml = ctx->out[0].shape[0], f = ctx->in[1].shape[1];
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
	    cudaMalloc(&s->h, (size_t)(ml * f) * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->a, (size_t)(ml * f) * pkb_dtype_size(t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, ctx->out[0].bytes, &s->x);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *xl = &ctx->in[0], *w1 = &ctx->in[1], *w2 = &ctx->in[2];
	pkb_dtype t = xl->dtype;
	int64_t hl = xl->shape[1], hd = w1->shape[0], f = w1->shape[1];
	int64_t ml = ctx->out[0].shape[0];

	int blocks = (int)((ml * hl + THREADS * 4 - 1) / (THREADS * 4));
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
	if (pkb_dtype_size(t) == 2)
		push_rows<uint16_t><<<blocks, THREADS, 0, st>>>(ctx->dev,
			(const uint16_t *)xl->data, (uint16_t *const *)s->x.peers_dev, ml, hl);
	else
		push_rows<uint32_t><<<blocks, THREADS, 0, st>>>(ctx->dev,
			(const uint32_t *)xl->data, (uint32_t *const *)s->x.peers_dev, ml, hl);
	if (cudaGetLastError() != cudaSuccess)
		return 1;

	const float one = 1.0f, zero = 0.0f;
	cudaDataType ct = blas_type(t);
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS ||
	    cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)f, (int)ml, (int)hd,
			 &one, w1->data, ct, (int)f, s->x.local, ct, (int)hd,
			 &zero, s->h, CUDA_R_32F, (int)f,
			 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
		return 1;

	int64_t n = ml * f;
	int sb = (int)((n + 255) / 256);
	sb = sb > 1024 ? 1024 : sb;
	switch (t) {
	case PKB_BF16: silu_round<<<sb, 256, 0, st>>>(s->h, (__nv_bfloat16 *)s->a, n); break;
	case PKB_FP16: silu_round<<<sb, 256, 0, st>>>(s->h, (__half *)s->a, n); break;
	default: silu_round<<<sb, 256, 0, st>>>(s->h, (float *)s->a, n); break;
	}
	if (cudaGetLastError() != cudaSuccess)
		return 1;

	return cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)hd, (int)ml, (int)f,
			    &one, w2->data, ct, (int)hd, s->a, ct, (int)f,
			    &zero, ctx->out[0].data, ct, (int)hd,
			    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->blas)
		cublasDestroy(s->blas);
	cudaFree(s->h);
	cudaFree(s->a);
	free(s);
	return 0;
}
