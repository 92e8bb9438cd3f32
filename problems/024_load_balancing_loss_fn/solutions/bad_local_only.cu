/*
 * 024_load_balancing_loss_fn, known-bad: no communication. Every rank
 * returns its own loss instead of the mean over ranks. With the per-rank
 * router offsets the ranks' losses differ by ~10%: a rank's own is more
 * than the 0.78% bound (bf16) away from the mean on 95% of trials at
 * W = 2 and on every trial at W = 4, 8 (host simulation, 300 trials).
 * pkb-mutant-of: ok_symm_scalar.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		for (int r = 0; r < comm.world; r++)
			s += slot[r][0];
		*out = s / (float)comm.world;
/* pkb-with */
		s = slot[comm.rank][0];
		*out = s;
/* pkb-end */
