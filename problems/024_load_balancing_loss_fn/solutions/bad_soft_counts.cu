/*
 * 024_load_balancing_loss_fn, known-bad: the cheapest wrong shortcut, no
 * top-2 selection. The fraction of tokens routed to each expert (for each
 * of the two slots) is replaced by the mean routing weight, so the loss
 * becomes E * sum_e 2 P[e]^2 -- the "soft" balance loss, equal to the
 * right one only for a balanced router. With the per-rank offsets it is
 * beyond the bound on 95-100% of trials (host simulation, 300 trials at
 * W = 2, 4, 8, M = 1024).
 * pkb-mutant-of: ok_symm_scalar.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
			acc[e] += e == a;
			acc[E + e] += e == b;
/* pkb-with */
			acc[e] += v[e];
			acc[E + e] += v[e];
/* pkb-end */
