/*
 * 012_allgather_gemm reference: the original's steps -- ncclAllGather of the
 * shards, a concatenation kernel (torch.cat along columns), one cuBLAS GEMM.
 *
 * ncclAllGather stacks the shards: G (W, M, K/W). A (M, K) row-major wants
 * them side by side (A[i, w*K/W + j] = G[w, i, j]), which no leading
 * dimension can express, hence the concatenation pass (M*K elements).
 *
 * Layout of the GEMM (torch row-major vs cuBLAS column-major): a row-major
 * (r, c) buffer is the column-major c x r matrix of its transpose, so the
 * row-major product C (M, N) = A (M, K) @ B (K, N) is the column-major
 * C^T = B^T A^T: first operand B's buffer (N x K, ld N), second A's
 * (K x M, ld K), both op N, m = N, n = M, k = K, C ld N.
 *
 * Traffic: each rank receives (W-1) * M*K/W*e bytes (768 KiB at M = 1024,
 * bf16, W = 4); GEMM 2*M*K*N = 1.07 GFLOP at M = N = 1024.
 */
#include <stdlib.h>
#include "pkb_ref.cuh"
#include "cat_columns.cuh"   /* defines: cat_columns, launch_cat */

PKB_SOLUTION;

struct state {
	struct pkb_ref_blas blas;
	void *gathered;         /* (W, M, K/W) */
	void *a_full;           /* (M, K) */
};

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->gathered, ctx->in[0].bytes * ctx->world));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->a_full, ctx->in[0].bytes * ctx->world));
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	pkb_dtype t = a->dtype;
	int64_t m = a->shape[0], kl = a->shape[1], k = b->shape[0], n = b->shape[1];

	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, t, &nt));
	PKB_CK_NCCL(ctx, ncclAllGather(a->data, s->gathered, (size_t)a->numel, nt,
				       (ncclComm_t)ctx->nccl_comm, st));
	launch_cat(s->gathered, s->a_full, m, kl * (int64_t)pkb_dtype_size(t), ctx->world, st);
	PKB_CK_LAUNCH(ctx);
	/* out (M, N) = A (M, K) @ B (K, N), row-major */
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 0, m, n, k, 1.0, s->a_full, k, b->data, n,
			       0.0, ctx->out[0].data, n, t));
	return 0;
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->gathered);
	cudaFree(s->a_full);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
