/*
 * 075_fla_gated_deltanet_cp, known-bad: local data only. Every rank runs
 * the recurrence of its own 64 tokens from a zero state, as if its chunk
 * began the sequence (what skipping the exchange gives): rank 0 is right,
 * the first ~20 tokens of every other rank miss the state they inherit
 * (simulated in bf16: 48-75 element bounds, L2 4.7-7.1 limits at W = 2,
 * 4, 8). The pushes to rank+1 still happen; nobody reads them.
 * pkb-mutant-of: ok_symm_state_pass.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	int from_prev = ctx->rank > 0, to_next = ctx->rank < ctx->world - 1;
/* pkb-with */
	int from_prev = 0, to_next = ctx->rank < ctx->world - 1;
/* pkb-end */
