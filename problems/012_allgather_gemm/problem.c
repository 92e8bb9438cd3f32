/*
 * 012_allgather_gemm -- all-gather a K-sharded A, then
 * C = A @ B with each rank's own B.
 *
 * K = 512 is fixed. A (M, K) is split along K: rank r holds the column slice
 * A_local = A[:, r*K/W : (r+1)*K/W], shape (M, K/W). Every rank also holds a
 * full B (K, N), but its own: the original seeds every input per rank, so B
 * differs per rank and rank r returns C = A @ B_r, a different (M, N) on every
 * rank. The original all-gathers the shards (list API), concatenates them
 * along columns into A (M, K) and returns A @ B_r: the same values as 011,
 * which gathers transposes instead.
 *
 * Minimum traffic per rank: receive the other W-1 shards of A,
 * (W-1) * M*K/W*e bytes: 768 KiB at M = 1024, bf16, W = 4. GEMM: 2*M*K*N
 * FLOPs per rank (1.07 GFLOP at M = N = 1024).
 */
#include "pkb_problem.h"
#include "ag_gemm_host.h"   /* defines: K_DIM, gemm_tol, ag_gemm_describe, ag_gemm_cost */

/* as 011 (ag_gemm_cost: the shards of A, or for a tiny N the rows of B and
 * the partial products back, whichever is less) */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	ag_gemm_cost(d, c);
	c->note = "all-gather of A + one GEMM";
}

const struct pkb_problem pkb_problem_012 = {
	.id = 12,
	.name = "allgather_gemm",
	.title = "All-gather + GEMM",
	.category = "Tensor Parallel",
	.origin = "all_gather of A shards + cat + matmul (AG+GEMM)",
	.worlds = PKB_WORLD(2) | PKB_WORLD(4) | PKB_WORLD(8) | PKB_WORLD(16) | PKB_WORLD(32),
	.describe = ag_gemm_describe,
	.cost = cost,
};
