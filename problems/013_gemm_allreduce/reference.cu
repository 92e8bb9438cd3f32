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

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	struct pkb_ref_blas *b;
	PKB_CK(pkb_ref_state(ctx, &b));
	return pkb_ref_blas_init(ctx, b);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_ref_blas *b = (struct pkb_ref_blas *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *w = &ctx->in[1];
	pkb_tensor *c = &ctx->out[0];
	pkb_dtype t = a->dtype;
	int64_t m = a->shape[0], k = a->shape[1], n = w->shape[1];
	ncclDataType_t nt;

	PKB_CK(pkb_ref_nccl_type(ctx, t, &nt));
	PKB_CK(pkb_ref_blas_bind(ctx, b, st));
	PKB_CK(pkb_ref_gemm_rm(ctx, b->h, 0, 0, m, n, k, 1.0, a->data, k, w->data, n,
			       0.0, c->data, n, t));
	PKB_CK_NCCL(ctx, ncclAllReduce(c->data, c->data, (size_t)c->numel, nt, ncclSum,
				       (ncclComm_t)ctx->nccl_comm, st));
	return 0;
}

static void release(struct pkb_ref_blas *b)
{
	pkb_ref_blas_fini(b);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
