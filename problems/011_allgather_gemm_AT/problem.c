/*
 * 011_allgather_gemm_AT -- all-gather a K-sharded A (as transposes), then
 * C = A @ B with each rank's own B.
 *
 * K = 512 is fixed. A (M, K) is split along K: rank r holds the column slice
 * A_local = A[:, r*K/W : (r+1)*K/W], shape (M, K/W). Every rank also holds a
 * full B (K, N), but its own: the original seeds every input per rank, so B
 * differs per rank and rank r returns C = A @ B_r, a different (M, N) on every
 * rank. The original transposes A_local, all-gathers the transposes into
 * A^T (K, M), computes C^T = B^T A^T and returns the transposed view; only
 * the values of A @ B_r count.
 *
 * Minimum traffic per rank: receive the other W-1 shards of A,
 * (W-1) * M*K/W*e bytes: 768 KiB at M = 1024, bf16, W = 4. For narrow B
 * (N*(M + K/W) < M*K/W, N < 114 there) it is less to send each rank its
 * K/W rows of B and get back the (M, N) partial products. GEMM: 2*M*K*N
 * FLOPs per rank (1.07 GFLOP at M = N = 1024).
 */
#include "pkb_problem.h"
#include "ag_gemm_host.h"   /* defines: K_DIM, gemm_tol, ag_gemm_describe, ag_gemm_cost */

static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	c->note = ag_gemm_cost(d, c) ? "all-gather of A + one GEMM"
				     : "scatter B rows, gather partial products";
}

const struct pkb_problem pkb_problem_011 = {
	.id = 11,
	.name = "allgather_gemm_AT",
	.title = "All-gather (transposed A) + GEMM",
	.category = "Tensor Parallel",
	.origin = "all_gather_into_tensor of A^T shards + matmul (AG+GEMM)",
	.worlds = PKB_WORLD(2) | PKB_WORLD(4) | PKB_WORLD(8) | PKB_WORLD(16) | PKB_WORLD(32),
	.describe = ag_gemm_describe,
	.cost = cost,
};
