/*
 * 011_allgather_gemm_AT, known-good: push all-gather over symmetric memory,
 * then one cuBLAS GEMM.
 *
 * Every rank owns a symmetric buffer A_full (M, K), row-major. Each block
 * takes a contiguous range of the local shard A_local (M, K/W) and writes it
 * into column slice [rank*K/W, (rank+1)*K/W) of A_full on every rank,
 * itself included. Two cross-rank barriers per block:
 *   - before pushing: every rank has finished the previous call's GEMM,
 *     which reads its A_full (a rank reaches this kernel only after its GEMM
 *     on the same stream);
 *   - after pushing: every rank's copy of this block has landed, so once the
 *     whole kernel is done on a rank, all W shards are in its A_full.
 * Then C = A_full @ B with cuBLAS (row-major C = A B is the column-major
 * C^T = B^T A^T: operands swapped, both op N).
 *
 * Not tuned: element-wise stores, no overlap of the gather with the GEMM.
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
	pkb_symm afull;
};

template <typename E>
__global__ void __launch_bounds__(THREADS)
push_shard(pkb_dev_comm comm, const E *a_local, E *const *afull, int64_t m, int64_t kl)
{
	int64_t n = m * kl, k = kl * comm.world;
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t e0 = min(n, per * blockIdx.x), e1 = min(n, e0 + per);

	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x) {
		int64_t i = e / kl, kk = e % kl;
		E v = a_local[e];
		for (int w = 0; w < comm.world; w++)
			afull[w][i * k + comm.rank * kl + kk] = v;
	}
	pkb_barrier_block(comm, blockIdx.x);
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
	return ctx->svc->symm_alloc(ctx, ctx->in[0].bytes * ctx->world, &s->afull);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], kl = a->shape[1], k = b->shape[0], n = b->shape[1];
	int64_t units = m * kl;
	int blocks = (int)((units + THREADS * 8 - 1) / (THREADS * 8));
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;

	if (pkb_dtype_size(a->dtype) == 2)
		push_shard<uint16_t><<<blocks, THREADS, 0, st>>>(ctx->dev,
			(const uint16_t *)a->data, (uint16_t *const *)s->afull.peers_dev, m, kl);
	else
		push_shard<uint32_t><<<blocks, THREADS, 0, st>>>(ctx->dev,
			(const uint32_t *)a->data, (uint32_t *const *)s->afull.peers_dev, m, kl);
	if (cudaGetLastError() != cudaSuccess)
		return 1;

	const float one = 1.0f, zero = 0.0f;
	cudaDataType ct = blas_type(a->dtype);
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS)
		return 1;
	return cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k,
			    &one, b->data, ct, (int)n, s->afull.local, ct, (int)k,
			    &zero, ctx->out[0].data, ct, (int)n,
			    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s && s->blas)
		cublasDestroy(s->blas);
	free(s);
	return 0;
}
