/*
 * 013_gemm_allreduce reference: one cuBLAS GEMM straight into the output,
 * then an in-place ncclAllReduce (sum) of it -- the original's matmul +
 * clone + all_reduce without the clone.
 *
 * Layout of the GEMM (torch row-major vs cuBLAS column-major): a row-major
 * (r, c) buffer is the column-major c x r matrix of its transpose, so the
 * row-major C_r (M, N) = A (M, K) @ B (K, N) is the column-major
 * C_r^T = B^T A^T: first operand B's buffer (N x K, ld N), second A's
 * (K x M, ld K), both op N, m = N, n = M, k = K, C ld N.
 *
 * The products are rounded to the working dtype before the reduction, and
 * NCCL rounds after every add (ring order), as in the original.
 *
 * Traffic: 2 (W-1)/W * M*N*e bytes received per rank (3 MiB at M = N = 1024,
 * bf16, W = 4); GEMM 2*M*K*N = 1.07 GFLOP per rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include "pkb_ref.cuh"
#include "gemm_ops.cuh"   /* defines: struct gemm_ops, gemm_ops_begin */

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct pkb_ref_blas *b;
	PKB_CK(pkb_ref_float_state(ctx, &b));
	return pkb_ref_blas_init(ctx, b);
}

static int run(pkb_ctx *ctx, struct pkb_ref_blas *blas, cudaStream_t st, ncclComm_t comm)
{
	struct gemm_ops g;
	PKB_CK(gemm_ops_begin(ctx, blas, st, &g));
	pkb_tensor *c = &ctx->out[0];
	int64_t m = g.a->shape[0], k = g.a->shape[1], n = g.b->shape[1];

	PKB_CK(pkb_ref_gemm_rm(ctx, blas->h, 0, 0, m, n, k, 1.0, g.a->data, k, g.b->data, n,
			       0.0, c->data, n, g.t));
	PKB_CK_NCCL(ctx, ncclAllReduce(c->data, c->data, (size_t)c->numel, g.nt, ncclSum,
				       comm, st));
	return 0;
}

PKB_REF_RUN_FINI(struct pkb_ref_blas, run, pkb_ref_blas_fini)
