/*
 * 063_deepmd_kalman_filter_optimizer, known-bad: local data only. The gain
 * from this rank's tmp, and only this rank's slice of the gathered weights
 * is written (the peers' slices are left as the output buffer held them).
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_gather.cu
 */
/* pkb-replace */
		for (int r = 0; r < comm.world; r++)
			t += peers[r][0];
/* pkb-with */
		t = peers[comm.rank][0];
/* pkb-end */

/* pkb-replace */
	if (i < nw)
		for (int r = 0; r < comm.world; r++)
			out[r * nw + i] = peers[r][i];
/* pkb-with */
	if (i < nw)
		out[comm.rank * nw + i] = peers[comm.rank][i];
/* pkb-end */
