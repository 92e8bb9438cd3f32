/*
 * 013_gemm_allreduce, known-good: the GEMM writes its product in fp32 (no
 * rounding of the partial) into symmetric memory; a one-shot pull kernel
 * sums the W fp32 partials and rounds once. This is the candidate the
 * tolerance must accept although it never rounds a partial the way the
 * reference (bf16 products, NCCL ring with a rounding per add) does.
 *
 * The reduce kernel: each block owns a contiguous range of C. A first
 * cross-rank barrier (pkb_barrier_block) says every rank's GEMM is done (a
 * rank reaches the kernel only after its GEMM on the same stream); the block
 * then reads its range from all W partial buffers over NVLink, sums in rank
 * order in fp32 and writes the output. A second barrier keeps the next
 * call's GEMM from overwriting a partial that a peer is still reading.
 *
 * Traffic: (W-1) * M*N*4 bytes read from peers -- 4x the bf16 minimum of a
 * two-shot, but one hop. Not tuned.
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
#define MAX_BLOCKS 256

struct state {
	cublasHandle_t blas;
	pkb_symm part;   /* this rank's fp32 product (M, N) */
};

template <typename T>
__global__ void __launch_bounds__(THREADS)
sum_partials(pkb_dev_comm comm, float *const *part, T *out, int64_t n)
{
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t e0 = min(n, per * blockIdx.x), e1 = min(n, e0 + per);

	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x) {
		float acc = 0.f;
		for (int w = 0; w < comm.world; w++)
			acc += part[w][e];
		out[e] = pkb_from_float<T>(acc);
	}
	pkb_barrier_block(comm, blockIdx.x);   /* peers are done reading ours */
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
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS)
		return 1;
	return ctx->svc->symm_alloc(ctx, (size_t)ctx->out[0].numel * sizeof(float), &s->part);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s, int blocks)
{
	sum_partials<T><<<blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(ctx->dev,
		(float *const *)s->part.peers_dev, (T *)ctx->out[0].data, ctx->out[0].numel);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
	cudaDataType ct = blas_type(a->dtype);
	const float one = 1.0f, zero = 0.0f;

	/* row-major C_r = A B is the column-major C_r^T = B^T A^T: operands
	 * swapped, both op N; the product stays fp32 (C type CUDA_R_32F) */
	if (cublasSetStream(s->blas, (cudaStream_t)ctx->stream) != CUBLAS_STATUS_SUCCESS ||
	    cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k,
			 &one, b->data, ct, (int)n, a->data, ct, (int)k,
			 &zero, s->part.local, CUDA_R_32F, (int)n,
			 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
		return 1;

	int64_t numel = ctx->out[0].numel;
	int blocks = (int)((numel + THREADS * 16 - 1) / (THREADS * 16));
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
	switch (a->dtype) {
	case PKB_BF16: launch<__nv_bfloat16>(ctx, s, blocks); break;
	case PKB_FP16: launch<__half>(ctx, s, blocks); break;
	default: launch<float>(ctx, s, blocks); break;
	}
	return cudaGetLastError() != cudaSuccess;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s && s->blas)
		cublasDestroy(s->blas);
	free(s);
	return 0;
}
