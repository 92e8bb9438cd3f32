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

PKB_SOLUTION;

struct state {
	struct pkb_ref_blas blas;
	void *partial;          /* C_r (M, N) */
};

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->partial, ctx->out[0].bytes * ctx->world));
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	pkb_tensor *c = &ctx->out[0];
	pkb_dtype t = a->dtype;
	int64_t m = a->shape[0], kl = a->shape[1], n = b->shape[1];

	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));
	/* C_r (M, N) = A_r (M, Kl) @ B_r (Kl, N), row-major */
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 0, m, n, kl, 1.0, a->data, kl, b->data, n,
			       0.0, s->partial, n, t));
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, t, &nt));
	PKB_CK_NCCL(ctx, ncclReduceScatter(s->partial, c->data, (size_t)c->numel, nt, ncclSum,
					   (ncclComm_t)ctx->nccl_comm, st));
	return 0;
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->partial);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
