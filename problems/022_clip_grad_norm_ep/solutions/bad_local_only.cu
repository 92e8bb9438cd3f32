/*
 * 022_clip_grad_norm_ep, known-bad: no communication. Both sums are this
 * rank's own, so total_norm is about 1/sqrt(W) of the global one and every
 * gradient is clipped sqrt(W)-fold too little.
 * pkb-mutant-of: ok_symm_scalars.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		for (int r = 0; r < comm.world; r++)
			non_ep += val[r][0];
		for (int r = 0; r < comm.world; r++)
			ep += val[r][1];
/* pkb-with */
		non_ep = val[comm.rank][0];
		ep = val[comm.rank][1];
/* pkb-end */
