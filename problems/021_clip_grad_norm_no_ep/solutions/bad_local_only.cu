/*
 * 021_clip_grad_norm_no_ep, known-bad: no communication. The norm is taken
 * over this rank's shards only, as if the FSDP group were this rank: it is
 * 1/sqrt(W) of the global norm (half at W = 4), and every clipped gradient
 * is scaled by sqrt(W) too much.
 * pkb-mutant-of: ok_symm_scalar.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		for (int r = 0; r < comm.world; r++)
			sum += val[r][0];
/* pkb-with */
		sum = val[comm.rank][0];
/* pkb-end */
