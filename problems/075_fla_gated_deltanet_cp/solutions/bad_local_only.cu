/*
 * 075_fla_gated_deltanet_cp, known-bad: local data only. Every rank runs
 * the recurrence of its own 64 tokens from a zero state, as if its chunk
 * began the sequence (what skipping the exchange gives): rank 0 is right,
 * every other rank misses the state it inherits (simulated in bf16:
 * 107-130 element bounds, L2 71-83 limits at W = 2 .. 8). The pushes to
 * rank+1 still happen; nobody reads them.
 * pkb-mutant-of: ok_symm_state_pass.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	int from_prev = ctx->rank > 0, to_next = ctx->rank < ctx->world - 1;
/* pkb-with */
	int from_prev = 0, to_next = ctx->rank < ctx->world - 1;
/* pkb-end */
