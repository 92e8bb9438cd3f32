/*
 * 075_fla_gated_deltanet_cp, known-bad: the cheapest shortcut around the
 * split parameters. a_log and dt_bias hold the hl entries of this rank's
 * heads (the original's head split); a rank that computes all H heads
 * needs the others' slices, and this one skips that exchange and uses its
 * own slice for every head (head h gets entry h % hl of it): every head
 * outside the rank's own decays at another rate. Simulated in bf16: 6.8-40
 * element bounds, L2 2.6-16.5 limits at W = 2, 4, 8.
 * pkb-mutant-of: ok_symm_state_pass.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		int owner = (int)(h / hl);
/* pkb-with */
		int owner = rank;
/* pkb-end */
