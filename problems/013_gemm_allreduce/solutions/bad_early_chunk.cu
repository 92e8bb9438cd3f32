/*
 * 013_gemm_allreduce, known-bad: ok_operand_gather.cu with the consumers
 * enqueued ahead of their producers, on both of its paths.
 * Pipeline (8192 x 8192): every chunk's GEMM is enqueued before the pulls
 * that bring the peers' A rows and B columns. The GEMMs run on main ahead of
 * the event that forks this call's copies, and their waits bind to the
 * previous call's landed events, long fired: every GEMM reads the operands
 * the previous call left (never written, on the first call), another
 * trial's. The row gather still follows each GEMM's READY barrier, so every
 * rank returns the same wrong rows.
 * Fused (the default shape): the two-shot kernel runs before the GEMM that
 * writes P, so it sums the previous call's products.
 * Deterministically wrong at any W, every call; the barriers are the ok_
 * file's, in the same order on every rank, so it cannot hang.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_operand_gather.cu
 */

/* pkb-replace */
		return gemm_chunks(ctx, s) || allreduce_fused(ctx, s);
/* pkb-with */
		return allreduce_fused(ctx, s) || gemm_chunks(ctx, s);
/* pkb-end */

/* pkb-replace */
	return stage_and_meet(ctx, s) || pull_operands(ctx, s) || gemm_chunks(ctx, s) ||
/* pkb-with */
	/* the bug: the GEMMs consume chunks not yet pulled */
	return stage_and_meet(ctx, s) || gemm_chunks(ctx, s) || pull_operands(ctx, s) ||
/* pkb-end */
