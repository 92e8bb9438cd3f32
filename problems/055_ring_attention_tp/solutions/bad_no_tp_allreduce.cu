/*
 * 055_ring_attention_tp, known-bad: the TP all-reduce skipped. The ring is
 * right, but each rank returns the output projection of its own 4 heads
 * only, the partner's half of the heads missing.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		out[i] = pkb_from_float<T>(pkb_to_float(mine[i]) + pkb_to_float(peer[i]));
/* pkb-with */
		out[i] = pkb_from_float<T>(pkb_to_float(mine[i]) + 0 * pkb_to_float(peer[i]));
/* pkb-end */
