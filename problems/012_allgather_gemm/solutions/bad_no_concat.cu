/*
 * 012_allgather_gemm, known-bad: the all-gather is right, the concatenation
 * is skipped. The gathered buffer (W, M, K/W) -- shards stacked, as an
 * all-gather delivers them -- is used as A (M, K) directly, while
 * torch.cat(dim=1) puts the shards side by side. Correct only when M = 1.
 *
 * The gather itself is a correct pull over symmetric memory (stage, barrier,
 * read every rank's stage, barrier).
 * pkb-expect: mismatch
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
	pkb_symm stage;
	void *gathered;   /* (W, M, K/W), local */
};

template <typename E>
__global__ void __launch_bounds__(THREADS)
pull_stacked(pkb_dev_comm comm, const E *a_local, E *const *stage, E *gathered, int64_t n)
{
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t e0 = min(n, per * blockIdx.x), e1 = min(n, e0 + per);

	for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x)
		stage[comm.rank][e] = a_local[e];
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int w = 0; w < comm.world; w++)
		for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x)
			gathered[w * n + e] = stage[w][e];
	pkb_barrier_block(comm, blockIdx.x);
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
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS)
		return 1;
	if (cudaMalloc(&s->gathered, ctx->in[0].bytes * ctx->world) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, ctx->in[0].bytes, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], k = b->shape[0], n = b->shape[1];
	int blocks = (int)((a->numel + THREADS * 8 - 1) / (THREADS * 8));
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;

	if (pkb_dtype_size(a->dtype) == 2)
		pull_stacked<uint16_t><<<blocks, THREADS, 0, st>>>(ctx->dev,
			(const uint16_t *)a->data, (uint16_t *const *)s->stage.peers_dev,
			(uint16_t *)s->gathered, a->numel);
	else
		pull_stacked<uint32_t><<<blocks, THREADS, 0, st>>>(ctx->dev,
			(const uint32_t *)a->data, (uint32_t *const *)s->stage.peers_dev,
			(uint32_t *)s->gathered, a->numel);
	if (cudaGetLastError() != cudaSuccess)
		return 1;

	const float one = 1.0f, zero = 0.0f;
	cudaDataType ct = blas_type(a->dtype);
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS)
		return 1;
	return cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k,
			    &one, b->data, ct, (int)n, s->gathered, ct, (int)k,
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
	cudaFree(s->gathered);
	free(s);
	return 0;
}
