/*
 * 048_fsdp_and_tp, known-bad: no communication. Every FSDP slot of the
 * gathered weights holds this rank's own tiles, and y is this rank's own
 * partial: wrong rows of W1, W2 and columns of W3 at every W (the FSDP
 * group has n_fsdp >= 2 members), the TP sum missing at n_tp >= 2.
 * pkb-mutant-of: ok_symm_mesh.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const T *src = tiles[f * n_tp + tp];
/* pkb-with */
		const T *src = tiles[comm.rank];
/* pkb-end */

/* pkb-replace */
		for (int t = 0; t < n_tp; t++)
			acc += parts[first + t][i];
/* pkb-with */
		acc = parts[comm.rank][i];
/* pkb-end */
