/*
 * 012_allgather_gemm, known-bad: no communication. Computes the GEMM on
 * the local shard only, C = A_local @ B[rank*K/W : (rank+1)*K/W, :], the
 * rank's K/W-th of the contraction: the other W-1 shards of A are dropped.
 * pkb-expect: mismatch
 */
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "pkb.h"

PKB_SOLUTION;

static cudaDataType blas_type(pkb_dtype t)
{
	return t == PKB_BF16 ? CUDA_R_16BF : t == PKB_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	cublasHandle_t *h = (cublasHandle_t *)calloc(1, sizeof *h);
	ctx->user = h;
	return !h || cublasCreate(h) != CUBLAS_STATUS_SUCCESS;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	cublasHandle_t h = *(cublasHandle_t *)ctx->user;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], kl = a->shape[1], n = b->shape[1];
	cudaDataType ct = blas_type(a->dtype);
	const char *b_rows = (const char *)b->data +
		(size_t)(ctx->rank * kl * n) * pkb_dtype_size(b->dtype);
	const float one = 1.0f, zero = 0.0f;

	if (cublasSetStream(h, (cudaStream_t)ctx->stream) != CUBLAS_STATUS_SUCCESS)
		return 1;
	/* row-major C = A_local @ B_r as column-major C^T = B_r^T A_local^T */
	return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)kl,
			    &one, b_rows, ct, (int)n, a->data, ct, (int)kl,
			    &zero, ctx->out[0].data, ct, (int)n,
			    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	cublasHandle_t *h = (cublasHandle_t *)ctx->user;
	if (h && *h)
		cublasDestroy(*h);
	free(h);
	return 0;
}
