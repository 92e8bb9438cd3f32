/*
 * 016_gemm_reducescatter reference: one cuBLAS GEMM into a partial buffer,
 * then ncclReduceScatter (sum) into the output -- the original's matmul +
 * reduce_scatter_tensor.
 *
 * Layout of the GEMM (torch row-major vs cuBLAS column-major): a row-major
 * (r, c) buffer is the column-major c x r matrix of its transpose, so the
 * row-major C_r (M, N) = A (M, Kl) @ B (Kl, N) is the column-major
 * C_r^T = B^T A^T: first operand B's buffer (N x Kl, ld N), second A's
 * (Kl x M, ld Kl), both op N, m = N, n = M, k = Kl, C ld N. Row-major rows
 * are contiguous, so rank r's share -- rows r*M/W .. -- is the contiguous
 * r-th chunk of M/W * N elements that ncclReduceScatter hands to rank r.
 *
 * The partials are rounded to the working dtype before the reduction, and
 * NCCL rounds after every add (ring order), as in the original.
 *
 * Traffic: (W-1)/W * M*N*e bytes received per rank (1.5 MiB at
 * M = N = 1024, bf16, W = 4); GEMM 2*M*Kl*N = 268 MFLOP per rank there.
 */
#include <stdlib.h>
#include "pkb_ref.cuh"
#include "gemm_ops.cuh"   /* defines: struct gemm_ops, gemm_ops_begin */

PKB_SOLUTION;

struct state {
	struct pkb_ref_blas blas;
	void *partial;          /* C_r (M, N) */
};

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->partial, ctx->out[0].bytes * ctx->world));
	return 0;
}

static int run(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	struct gemm_ops g;
	PKB_CK(gemm_ops_begin(ctx, &s->blas, st, &g));
	pkb_tensor *c = &ctx->out[0];
	int64_t m = g.a->shape[0], kl = g.a->shape[1], n = g.b->shape[1];

	/* C_r (M, N) = A_r (M, Kl) @ B_r (Kl, N), row-major */
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 0, m, n, kl, 1.0, g.a->data, kl, g.b->data, n,
			       0.0, s->partial, n, g.t));
	PKB_CK_NCCL(ctx, ncclReduceScatter(s->partial, c->data, (size_t)c->numel, g.nt, ncclSum,
					   comm, st));
	return 0;
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->partial);
}

PKB_REF_RUN_FINI(struct state, run, release)
