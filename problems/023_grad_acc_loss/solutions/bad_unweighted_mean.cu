/*
 * 023_grad_acc_loss, known-bad: the cheapest wrong shortcut, every rank
 * weighted equally. Each rank contributes loss * G / W (its "share" of the
 * tokens) instead of loss * n_r, i.e. the mean of the per-rank losses, as
 * if all ranks had the same token count (as they do in the original's
 * inputs). With n_r spread over [1, MN] the weights are off by ~60% rms
 * and normalized_loss moves by ~0.3 at W = 4: beyond the 0.047 bound on
 * ~90% of draws (the same on every rank), so on any run of a few trials.
 * pkb-mutant-of: ok_symm_scalar.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		slot[comm.rank][0] = rnd<T>(l * nt);
/* pkb-with */
		slot[comm.rank][0] = rnd<T>(l * (gt / comm.world));
/* pkb-end */
