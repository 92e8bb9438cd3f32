/*
 * 014_gemm_allgather, known-bad: ok_operand_gather.cu with every chunk's
 * GEMM enqueued before the pulls that bring the peers' operands. The GEMMs
 * run on the main stream ahead of the event that forks the pulls (so this
 * call's copies start only after the GEMMs end), and their waits bind to the
 * previous call's events, long fired: every peer block's GEMM reads the peers'
 * A and B as the previous call left them (never written, on the
 * first call): another trial's operands. Deterministically wrong at any W;
 * the barriers are unchanged, so it cannot hang.
 * The size rule's fused path (the default shape: GEMM, then a pull of the
 * products) would run the swapped calls in the right order, so the mutant
 * also forces the operand pipeline at every shape.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_operand_gather.cu
 */

/* pkb-replace */
	int pipe = k * (m + nl) < m * nl && ops >= MIN_LINK_BYTES;
/* pkb-with */
	int pipe = 1;   /* the operand pipeline at every shape, for the bug below */
/* pkb-end */
/* pkb-replace */
	return stage_and_meet(ctx, s) || pull_chunks(ctx, s) || gemm_chunks(ctx, s) ||
/* pkb-with */
	/* the bug: the GEMMs consume chunks not yet pulled */
	return stage_and_meet(ctx, s) || gemm_chunks(ctx, s) || pull_chunks(ctx, s) ||
/* pkb-end */
