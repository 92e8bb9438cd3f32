/*
 * 056_ring_attention_pp, known-bad: the pipeline transfer skipped. Stage 1
 * holds the same hidden_states as stage 0 (the original seeds them by
 * cp_rank) and runs its block on them instead of on stage 0's output: the
 * rings are right, stage 1's output is not.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const void *x = s->y0;   /* stage 1's input: stage 0's output */
/* pkb-with */
		const void *x = ctx->in[0].data;
/* pkb-end */
