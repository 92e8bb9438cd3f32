/*
 * 012_allgather_gemm, known-good: pull all-gather over symmetric memory into
 * the concatenated layout, then one cuBLAS GEMM.
 *
 * Each block owns a contiguous range of the local shard A_local (M, K/W). It
 * copies that range into this rank's symmetric staging buffer, meets the same
 * block on every rank (pkb_barrier_block), then reads that range from every
 * rank's staging buffer and writes it where torch.cat(dim=1) puts it:
 * A_full[i, w*K/W + j] = A_local_w[i, j]. A second barrier keeps the next
 * call from overwriting a staging range that a peer is still reading.
 * Then C = A_full @ B (row-major C = A B is the column-major C^T = B^T A^T:
 * operands swapped, both op N).
 *
 * Not tuned: element-wise copies, no overlap of the gather with the GEMM.
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
	pkb_symm stage;   /* A_local of each rank */
	void *a_full;     /* (M, K), local */
};

template <typename E>
__global__ void __launch_bounds__(THREADS)
pull_cat(pkb_dev_comm comm, const E *a_local, E *const *stage, E *a_full,
	 int64_t m, int64_t kl)
{
	int64_t n = m * kl, k = kl * comm.world;
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t e0 = min(n, per * blockIdx.x), e1 = min(n, e0 + per);

	for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x)
		stage[comm.rank][e] = a_local[e];
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int w = 0; w < comm.world; w++) {
		const E *src = stage[w];
		for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x)
			a_full[(e / kl) * k + w * kl + e % kl] = src[e];
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
	if (cudaMalloc(&s->a_full, ctx->in[0].bytes * ctx->world) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, ctx->in[0].bytes, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], kl = a->shape[1], k = b->shape[0], n = b->shape[1];
	int blocks = (int)((a->numel + THREADS * 8 - 1) / (THREADS * 8));
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;

	if (pkb_dtype_size(a->dtype) == 2)
		pull_cat<uint16_t><<<blocks, THREADS, 0, st>>>(ctx->dev,
			(const uint16_t *)a->data, (uint16_t *const *)s->stage.peers_dev,
			(uint16_t *)s->a_full, m, kl);
	else
		pull_cat<uint32_t><<<blocks, THREADS, 0, st>>>(ctx->dev,
			(const uint32_t *)a->data, (uint32_t *const *)s->stage.peers_dev,
			(uint32_t *)s->a_full, m, kl);
	if (cudaGetLastError() != cudaSuccess)
		return 1;

	const float one = 1.0f, zero = 0.0f;
	cudaDataType ct = blas_type(a->dtype);
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS)
		return 1;
	return cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k,
			    &one, b->data, ct, (int)n, s->a_full, ct, (int)k,
			    &zero, ctx->out[0].data, ct, (int)n,
			    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->blas)
		cublasDestroy(s->blas);
	cudaFree(s->a_full);
	free(s);
	return 0;
}
