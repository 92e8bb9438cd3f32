/*
 * 016_gemm_reducescatter, known-bad: no communication. Returns this rank's
 * own partial for its rows, A_local[r*M/W : (r+1)*M/W] @ B_local, without
 * the other W-1 ranks' contributions.
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
	int64_t kl = a->shape[1], n = b->shape[1], ml = ctx->out[0].shape[0];
	const char *a_rows = (const char *)a->data +
		(size_t)(ctx->rank * ml * kl) * pkb_dtype_size(a->dtype);
	cudaDataType ct = blas_type(a->dtype);
	const float one = 1.0f, zero = 0.0f;

	if (cublasSetStream(h, (cudaStream_t)ctx->stream) != CUBLAS_STATUS_SUCCESS)
		return 1;
	/* row-major C = A B as column-major C^T = B^T A^T */
	return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)ml, (int)kl,
			    &one, b->data, ct, (int)n, a_rows, ct, (int)kl,
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
