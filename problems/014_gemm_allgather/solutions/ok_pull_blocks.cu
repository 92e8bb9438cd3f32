/*
 * 014_gemm_allgather, known-good: the GEMM writes this rank's block
 * C_r (M, Nl) into symmetric memory; a pull kernel copies every rank's block
 * into its column slot of the output, C[i, w*Nl + j] = C_w[i, j].
 *
 * Each block of the pull kernel owns a contiguous range of the (M, Nl)
 * elements. A first cross-rank barrier (pkb_barrier_block) says every rank's
 * GEMM is done (a rank reaches the kernel only after its GEMM on the same
 * stream); the block then reads its range from all W blocks over NVLink. A
 * second barrier keeps the next call's GEMM from overwriting a block that a
 * peer is still reading.
 *
 * Not tuned: element-wise copies, no overlap of the GEMM with the gather.
 */
#include <stdlib.h>
#include <stdint.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define MAX_BLOCKS 128

struct state {
	cublasHandle_t blas;
	pkb_symm block;   /* this rank's C_r (M, Nl) */
};

template <typename E>
__global__ void __launch_bounds__(THREADS)
pull_blocks(pkb_dev_comm comm, E *const *blk, E *out, int64_t m, int64_t nl)
{
	int64_t n = m * nl, ncols = nl * comm.world;
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t e0 = min(n, per * blockIdx.x), e1 = min(n, e0 + per);

	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int w = 0; w < comm.world; w++) {
		const E *src = blk[w];
		for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x)
			out[(e / nl) * ncols + w * nl + e % nl] = src[e];
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
	size_t bytes = (size_t)(ctx->in[0].shape[0] * ctx->in[1].shape[1]) * pkb_dtype_size(t);
	return ctx->svc->symm_alloc(ctx, bytes, &s->block);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], k = a->shape[1], nl = b->shape[1];
	cudaDataType ct = blas_type(a->dtype);
	const float one = 1.0f, zero = 0.0f;

	/* row-major C_r = A B is the column-major C_r^T = B^T A^T: operands
	 * swapped, both op N */
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS ||
	    cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)nl, (int)m, (int)k,
			 &one, b->data, ct, (int)nl, a->data, ct, (int)k,
			 &zero, s->block.local, ct, (int)nl,
			 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
		return 1;

	int blocks = (int)((m * nl + THREADS * 8 - 1) / (THREADS * 8));
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
	if (pkb_dtype_size(a->dtype) == 2)
		pull_blocks<uint16_t><<<blocks, THREADS, 0, st>>>(ctx->dev,
			(uint16_t *const *)s->block.peers_dev, (uint16_t *)ctx->out[0].data, m, nl);
	else
		pull_blocks<uint32_t><<<blocks, THREADS, 0, st>>>(ctx->dev,
			(uint32_t *const *)s->block.peers_dev, (uint32_t *)ctx->out[0].data, m, nl);
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
