/*
 * 025_importance_sampling_loss, known-bad: no communication. Each rank
 * finishes from its own slot only: Ng is its own count (about Ng / W), and
 * every sum, the min and the max are its own, so the metrics and the loss
 * are this rank's means -- off by far more than rtol = 2W u_T wherever
 * W >= 2 (the min and max differ too as soon as the global extremes sit on
 * another rank). The per-token outputs stay right.
 * pkb-mutant-of: ok_symm_scalars.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		for (int r = 0; r < comm.world; r++) {
/* pkb-with */
		for (int r = comm.rank; r == comm.rank; r++) {
/* pkb-end */
