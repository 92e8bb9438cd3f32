/*
 * 011_allgather_gemm_AT, known-bad: ok_ce_pipeline.cu with every chunk's GEMM
 * enqueued before the pulls that bring its peers' blocks. The GEMMs run on
 * the main stream ahead of the event that forks the pulls (so the copies of
 * this call start only after the GEMMs end), and their waits bind to the
 * previous call's events, long fired: every GEMM reads the peers' blocks of
 * AT as the previous call left them (zeros on the first call), i.e. another
 * trial's shards. Deterministically wrong in every column block but the
 * rank's own, at any W; the barriers are unchanged, so it cannot hang.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_ce_pipeline.cu
 */

/* pkb-replace */
	if (pull_chunks(ctx, s))
		return 1;
	if (gemm_chunks(ctx, s))
		return 1;
/* pkb-with */
	if (gemm_chunks(ctx, s))   /* the bug: consumes chunks not yet pulled */
		return 1;
	if (pull_chunks(ctx, s))
		return 1;
/* pkb-end */
