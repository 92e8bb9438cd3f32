/*
 * 015_combined_sharded_gemms, known-bad: no communication. Runs the first
 * GEMM on the local shard only: h = x_local[rows of rank r] (Ml, Hl) @
 * W1[r*Hl : (r+1)*Hl, :], i.e. the rank's Hl-th of the contraction, as if
 * the other ranks' columns of x_full were zero; then silu and the second
 * GEMM as the original.
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

struct state {
	cublasHandle_t blas;
	void *h;   /* (Ml, F) */
};

template <typename T>
__global__ void silu_inplace(T *h, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		float v = pkb_to_float(h[i]);
		h[i] = pkb_from_float<T>(v / (1.0f + expf(-v)));
	}
}

static cudaDataType blas_type(pkb_dtype t)
{
	return t == PKB_BF16 ? CUDA_R_16BF : t == PKB_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	size_t bytes = (size_t)(ctx->out[0].shape[0] * ctx->in[1].shape[1]) *
		pkb_dtype_size(ctx->in[0].dtype);
	return cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
	       cudaMalloc(&s->h, bytes) != cudaSuccess;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *xl = &ctx->in[0], *w1 = &ctx->in[1], *w2 = &ctx->in[2];
	pkb_dtype t = xl->dtype;
	size_t e = pkb_dtype_size(t);
	int64_t hl = xl->shape[1], hd = w1->shape[0], f = w1->shape[1];
	int64_t ml = ctx->out[0].shape[0];
	const char *x_rows = (const char *)xl->data + (size_t)(ctx->rank * ml * hl) * e;
	const char *w1_rows = (const char *)w1->data + (size_t)(ctx->rank * hl * f) * e;
	cudaDataType ct = blas_type(t);
	const float one = 1.0f, zero = 0.0f;

	/* row-major C = A B as column-major C^T = B^T A^T */
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS ||
	    cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)f, (int)ml, (int)hl,
			 &one, w1_rows, ct, (int)f, x_rows, ct, (int)hl,
			 &zero, s->h, ct, (int)f,
			 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
		return 1;
	int64_t n = ml * f;
	int sb = (int)((n + 255) / 256);
	sb = sb > 1024 ? 1024 : sb;
	switch (t) {
	case PKB_BF16: silu_inplace<<<sb, 256, 0, st>>>((__nv_bfloat16 *)s->h, n); break;
	case PKB_FP16: silu_inplace<<<sb, 256, 0, st>>>((__half *)s->h, n); break;
	default: silu_inplace<<<sb, 256, 0, st>>>((float *)s->h, n); break;
	}
	if (cudaGetLastError() != cudaSuccess)
		return 1;
	return cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)hd, (int)ml, (int)f,
			    &one, w2->data, ct, (int)hd, s->h, ct, (int)f,
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
	free(s);
	return 0;
}
