/*
 * 012_allgather_gemm, known-bad: ok_ce_pipeline.cu with every chunk's GEMM
 * enqueued before the pulls that bring its peers' blocks. The GEMMs run on
 * the main stream ahead of the event that forks the pulls (so the copies of
 * this call start only after the GEMMs end), and their waits bind to the
 * previous call's events, long fired: every GEMM reads the peers' blocks of
 * AT as the previous call left them (zeros on the first call), i.e. another
 * trial's shards. Deterministically wrong in every column block but the
 * rank's own, at any W; the barriers are unchanged, so it cannot hang.
 * On the size rule's fused path (the default shape) the same swap puts the
 * GEMM ahead of the pull kernel on main: the same stale reads.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_ce_pipeline.cu
 */

/* pkb-replace */
	return pkb_tp_ag_stage(ctx, s) || pkb_tp_ag_pull(ctx, s) || pkb_tp_ag_gemm(ctx, s) ||
/* pkb-with */
	/* the bug: the GEMMs consume chunks not yet pulled */
	return pkb_tp_ag_stage(ctx, s) || pkb_tp_ag_gemm(ctx, s) || pkb_tp_ag_pull(ctx, s) ||
/* pkb-end */
