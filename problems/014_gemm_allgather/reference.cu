/*
 * 014_gemm_allgather reference: one cuBLAS GEMM into this rank's slot of a
 * gather buffer, an in-place ncclAllGather, and a concatenation kernel --
 * the original's matmul + all_gather + torch.cat(dim=1).
 *
 * ncclAllGather stacks the blocks: G (W, M, N/W). C (M, W*N/W) row-major
 * wants them side by side (C[i, w*N/W + j] = G[w, i, j]), which no leading
 * dimension can express, hence the concatenation pass. The GEMM writes
 * straight into G's slot `rank`, so the gather runs in place (NCCL's
 * sendbuff = recvbuff + rank*count) and no separate C_r buffer exists.
 *
 * Layout of the GEMM (torch row-major vs cuBLAS column-major): a row-major
 * (r, c) buffer is the column-major c x r matrix of its transpose, so the
 * row-major C_r (M, Nl) = A (M, K) @ B (K, Nl) is the column-major
 * C_r^T = B^T A^T: first operand B's buffer (Nl x K, ld Nl), second A's
 * (K x M, ld K), both op N, m = Nl, n = M, k = K, C ld Nl.
 *
 * Traffic: each rank receives (W-1) * M*Nl*e bytes (1.5 MiB at
 * M = N = 1024, bf16, W = 4); GEMM 2*M*K*Nl = 268 MFLOP per rank there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <cuda_runtime.h>
#include "pkb_ref.cuh"
#include "gemm_ops.cuh"      /* defines: struct gemm_ops, gemm_ops_begin */
#include "cat_columns.cuh"   /* defines: cat_columns, launch_cat */

PKB_SOLUTION;

struct state {
	struct pkb_ref_blas blas;
	void *gathered;         /* (W, M, Nl) */
};

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->gathered, ctx->out[0].bytes));
	return 0;
}

static int run(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	struct gemm_ops g;
	PKB_CK(gemm_ops_begin(ctx, &s->blas, st, &g));
	size_t e = pkb_dtype_size(g.t);
	int64_t m = g.a->shape[0], k = g.a->shape[1], nl = g.b->shape[1];
	size_t count = (size_t)(m * nl);
	char *mine = (char *)s->gathered + (size_t)ctx->rank * count * e;

	/* mine (M, Nl) = A (M, K) @ B (K, Nl), row-major */
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 0, m, nl, k, 1.0, g.a->data, k, g.b->data, nl,
			       0.0, mine, nl, g.t));
	PKB_CK_NCCL(ctx, ncclAllGather(mine, s->gathered, count, g.nt, comm, st));
	launch_cat(s->gathered, ctx->out[0].data, m, nl * (int64_t)e, ctx->world, st);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->gathered);
}

PKB_REF_RUN_FINI(struct state, run, release)
