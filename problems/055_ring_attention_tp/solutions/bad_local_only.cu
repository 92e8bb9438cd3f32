/*
 * 055_ring_attention_tp, known-bad: local data only. No ring (each rank's
 * queries see only its own block) and no TP sum (this rank's partial is
 * returned as the output): wrong on every rank at every W.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	for (int j = 0; j < nblk; j++) {
/* pkb-with */
	for (int j = rank; j < nblk; j++) {
/* pkb-end */

/* pkb-replace */
		out[i] = pkb_from_float<T>(pkb_to_float(mine[i]) + pkb_to_float(peer[i]));
/* pkb-with */
		out[i] = pkb_from_float<T>(pkb_to_float(mine[i]) + 0 * pkb_to_float(peer[i]));
/* pkb-end */
