/*
 * 056_ring_attention_pp, known-bad: local data only. No ring (each rank's
 * queries see only its own block) and no pipeline transfer: stage 1 runs
 * its block on its own hidden_states (the same tokens stage 0 started
 * from) instead of stage 0's output. Stage 1 is wrong at every W, stage 0
 * from W = 4.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	for (int j = 0; j < nblk; j++) {
/* pkb-with */
	for (int j = rank; j < nblk; j++) {
/* pkb-end */

/* pkb-replace */
		const void *x = s->y0;   /* stage 1's input: stage 0's output */
/* pkb-with */
		const void *x = ctx->in[0].data;
/* pkb-end */
