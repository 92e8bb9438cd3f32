/*
 * 025_importance_sampling_loss, known-bad: delta not clamped to [-20, 20].
 * With randn inputs almost every delta is about -130 (CE ~ 130 at N =
 * 1024), so ratio = T(exp(delta)) underflows to 0 where the reference has
 * T(e^-20) = 2.06e-9: per_token_loss becomes 0 instead of -2.06e-9 * adv,
 * min_ratio 0, and k3 ~130 instead of 19.
 * pkb-mutant-of: ok_symm_scalars.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		d = fminf(fmaxf(rnd<T>(lp - pkb_to_float(old_lp[t])), -20.f), 20.f);
/* pkb-with */
		d = rnd<T>(lp - pkb_to_float(old_lp[t]));
/* pkb-end */
