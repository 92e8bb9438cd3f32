/*
 * 016_gemm_reducescatter, known-bad: ok_operand_gather.cu with every chunk's
 * GEMM enqueued before the pulls that bring the peers' operands. The GEMMs
 * run on the main stream ahead of the event that forks the pulls (so this
 * call's copies start only after the GEMMs end), and their waits bind to the
 * previous call's events, long fired: every GEMM reads the peers' rows of A
 * and blocks of B as the previous call left them (never written, on the
 * first call): another trial's operands. Deterministically wrong at any W;
 * the barriers are unchanged, so it cannot hang.
 * On the size rule's fused path (the default shape) the same swap puts the
 * GEMM ahead of the pull kernel on main: the same stale reads.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_operand_gather.cu
 */

/* pkb-replace */
	return stage_and_meet(ctx, s) || pull_chunks(ctx, s) || gemm_chunks(ctx, s) ||
/* pkb-with */
	/* the bug: the GEMMs consume chunks not yet pulled */
	return stage_and_meet(ctx, s) || gemm_chunks(ctx, s) || pull_chunks(ctx, s) ||
/* pkb-end */
