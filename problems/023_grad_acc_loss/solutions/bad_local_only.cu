/*
 * 023_grad_acc_loss, known-bad: no communication. loss_sum is this rank's
 * own term, so loss_sum and normalized_loss miss the other W-1 ranks'
 * contributions (off by ~0.5 rms in normalized_loss at W = 4, against a
 * bound of 0.047). grad_loss, which is local, stays right.
 * pkb-mutant-of: ok_symm_scalar.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		for (int r = 0; r < comm.world; r++)
			s += slot[r][0];
/* pkb-with */
		s = slot[comm.rank][0];
/* pkb-end */
