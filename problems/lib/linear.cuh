/*
 * linear.cuh -- F.linear as torch evaluates it on tensors of a float dtype
 * T: c = T(a w^T + bias), the bias added to the fp32 product before the one
 * rounding to T (addmm). The references of 031, 032, 040-042, 047 and
 * 049-051 take every biased layer through linear().
 *
 * They once filled c with the bias rows and let cuBLAS add its product with
 * beta = 1 into that T-typed c: 040's reference so came out as
 * T(T(a w^T) + bias) on H200 -- the product rounded before the bias -- and a
 * pre-activation where the two cancel (x w1^T = 1.63524, b1 = -1.6328125:
 * exactly 0 after the first rounding, +0.00243 in truth) lost its relu: a
 * whole row of dW1 moved and a correct candidate failed at seed 9
 * (2026-11-28, 040's README). The fp32 product is now cuBLAS's own output
 * and the bias is added here, so no rounding stands between them whatever
 * algorithm cuBLAS picks.
 */
#ifndef PKB_LINEAR_CUH
#define PKB_LINEAR_CUH

#include "pkb_device.cuh"   /* defines: pkb_to_float, pkb_from_float */
#include "pkb_ref.cuh"      /* defines: pkb_ref_blas_type, pkb_ref_blocks, PKB_CK_BLAS */

#define LINEAR_THREADS 256

/* c[r, j] = T(acc[r, j] + bias[j]), 0 where relu and not > 0 */
template <typename T>
__global__ void linear_bias_round(const float *acc, const T *bias, T *c, int64_t rows,
				  int64_t cols, int64_t ldc, int relu)
{
	for (int64_t i = blockIdx.x * (int64_t)LINEAR_THREADS + threadIdx.x; i < rows * cols;
	     i += (int64_t)gridDim.x * LINEAR_THREADS) {
		int64_t r = i / cols, j = i % cols;
		float x = pkb_to_float(pkb_from_float<T>(acc[i] + pkb_to_float(bias[j])));
		c[r * ldc + j] = pkb_from_float<T>(relu && !(x > 0.0f) ? 0.0f : x);
	}
}

/* c (m, n; row stride ldc) = T(a (m, k; lda) w^T + bias), relu'd when
 * `relu`; w is F.linear's weight, (n, k) with row stride ldw; acc: m * n
 * floats of scratch. cuBLAS on h, bound to st. 0, or 1 after logging. */
template <typename T>
static int linear(pkb_ctx *ctx, cublasHandle_t h, cudaStream_t st, pkb_dtype t, int64_t m,
		  int64_t n, int64_t k, const T *a, int64_t lda, const T *w, int64_t ldw,
		  const T *bias, float *acc, T *c, int64_t ldc, int relu)
{
	if (m <= 0 || n <= 0)
		return 0;
	if (t == PKB_FP64) {   /* an fp32 product would round fp64 operands */
		ctx->svc->log(ctx, "linear: fp64 is not one of its dtypes");
		return 1;
	}
	cudaDataType dt;
	PKB_CK(pkb_ref_blas_type(ctx, t, &dt));
	const float one = 1.0f, zero = 0.0f;
	/* row-major acc = a w^T is column-major acc^T = w a^T */
	PKB_CK_BLAS(ctx, cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one,
				      w, dt, (int)ldw, a, dt, (int)lda, &zero, acc, CUDA_R_32F,
				      (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	linear_bias_round<T><<<pkb_ref_blocks(m * n, LINEAR_THREADS, 2048), LINEAR_THREADS, 0,
				st>>>(acc, bias, c, m, n, ldc, relu);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

#endif /* PKB_LINEAR_CUH */
