/*
 * 014_gemm_allgather, known-bad: the gather is right, the concatenation is
 * skipped. Every rank's block C_w (M, Nl) is copied to out[w*M*Nl ...],
 * stacking the blocks as rows (what an all-gather delivers) while
 * torch.cat(dim=1) puts them side by side. Correct only when M = 1.
 *
 * Otherwise as ok_pull_blocks.cu: GEMM into symmetric memory, pull kernel
 * with a cross-rank barrier before and after.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_pull_blocks.cu
 */

/* pkb-replace */
	int64_t n = m * nl, ncols = nl * comm.world;
/* pkb-with */
	int64_t n = m * nl;
/* pkb-end */

/* pkb-replace */
			out[(e / nl) * ncols + w * nl + e % nl] = src[e];
/* pkb-with */
			out[w * n + e] = src[e];
/* pkb-end */
