/*
 * 063_deepmd_kalman_filter_optimizer, known-bad: the Kalman gain from this
 * rank's tmp only (the scalar all-reduce skipped; the weights are still
 * gathered). A is W times too large: the weight update (~1e-3) and the P
 * update (~1e-5) are off by (W-1)/W of themselves, ~10^10 fp64 ulps.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_gather.cu
 */
/* pkb-replace */
		for (int r = 0; r < comm.world; r++)
			t += peers[r][0];
/* pkb-with */
		t = peers[comm.rank][0];
/* pkb-end */
