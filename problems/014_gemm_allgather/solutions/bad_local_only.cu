/*
 * 014_gemm_allgather, known-bad: no communication. Computes this rank's
 * block A_r @ B_r and writes it into every column slot of C -- the gathered
 * answer if every rank held the same A and B. They differ per rank, so only
 * slot `rank` is right.
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
	int64_t m = a->shape[0], k = a->shape[1], nl = b->shape[1];
	int64_t ncols = ctx->out[0].shape[1];
	cudaDataType ct = blas_type(a->dtype);
	const float one = 1.0f, zero = 0.0f;

	if (cublasSetStream(h, (cudaStream_t)ctx->stream) != CUBLAS_STATUS_SUCCESS)
		return 1;
	/* slot w of row-major C is the column-major Nl x M matrix at column
	 * offset w*Nl with ld = ncols: C_slot^T = B^T A^T */
	for (int w = 0; w < ctx->world; w++) {
		char *slot = (char *)ctx->out[0].data + (size_t)(w * nl) * pkb_dtype_size(a->dtype);
		if (cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)nl, (int)m, (int)k,
				 &one, b->data, ct, (int)nl, a->data, ct, (int)k,
				 &zero, slot, ct, (int)ncols,
				 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
			return 1;
	}
	return 0;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	cublasHandle_t *h = (cublasHandle_t *)ctx->user;
	if (h && *h)
		cublasDestroy(*h);
	free(h);
	return 0;
}
