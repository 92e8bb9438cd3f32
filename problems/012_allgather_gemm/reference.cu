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
#include "gemm_ops.cuh"      /* defines: struct gemm_ops, gemm_ops_begin */
#include "cat_columns.cuh"   /* defines: cat_columns, launch_cat */

PKB_SOLUTION;

struct state {
	struct pkb_ref_blas blas;
	void *gathered;         /* (W, M, K/W) */
	void *a_full;           /* (M, K) */
};

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->gathered, ctx->in[0].bytes * ctx->world));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->a_full, ctx->in[0].bytes * ctx->world));
	return 0;
}

static int run(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	struct gemm_ops g;
	PKB_CK(gemm_ops_begin(ctx, &s->blas, st, &g));
	int64_t m = g.a->shape[0], kl = g.a->shape[1], k = g.b->shape[0], n = g.b->shape[1];

	PKB_CK_NCCL(ctx, ncclAllGather(g.a->data, s->gathered, (size_t)g.a->numel, g.nt, comm, st));
	launch_cat(s->gathered, s->a_full, m, kl * (int64_t)pkb_dtype_size(g.t), ctx->world, st);
	PKB_CK_LAUNCH(ctx);
	/* out (M, N) = A (M, K) @ B (K, N), row-major */
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 0, m, n, k, 1.0, s->a_full, k, g.b->data, n,
			       0.0, ctx->out[0].data, n, g.t));
	return 0;
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->gathered);
	cudaFree(s->a_full);
}

PKB_REF_RUN_FINI(struct state, run, release)
