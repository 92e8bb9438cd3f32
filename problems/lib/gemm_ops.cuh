/*
 * gemm_ops.cuh -- where pkb_run of a GEMM-and-collective reference (011 to
 * 016) starts: the operands A = in[0] and B = in[1], their dtype and its
 * NCCL type, and the reference's cuBLAS handle bound to the harness stream.
 */
#ifndef PKB_GEMM_OPS_CUH
#define PKB_GEMM_OPS_CUH

#include "pkb_ref.cuh"

struct gemm_ops {
	const pkb_tensor *a, *b;   /* in[0], in[1] */
	pkb_dtype t;               /* A's dtype, B's and the output's */
	ncclDataType_t nt;         /* t for NCCL */
};

static inline int gemm_ops_begin(pkb_ctx *ctx, struct pkb_ref_blas *blas, cudaStream_t st,
				 struct gemm_ops *g)
{
	g->a = &ctx->in[0];
	g->b = &ctx->in[1];
	g->t = g->a->dtype;
	PKB_CK(pkb_ref_nccl_type(ctx, g->t, &g->nt));
	return pkb_ref_blas_bind(ctx, blas, st);
}

#endif /* PKB_GEMM_OPS_CUH */
