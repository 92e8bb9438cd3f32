/*
 * 021_clip_grad_norm_no_ep, known-bad: the ranks all-reduce their local
 * norms instead of their squared norms, total = sum_r ||g_r|| rather than
 * sqrt(sum_r ||g_r||^2): a sqrt(W)-fold overestimate with equal shards
 * (2x at W = 4), so total_norm is wrong and every gradient is clipped too
 * hard. The cheap shortcut of treating a norm as an additive quantity.
 * pkb-mutant-of: ok_symm_scalar.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
			val[comm.rank][0] = acc;
/* pkb-with */
			val[comm.rank][0] = sqrtf(acc);
/* pkb-end */

/* pkb-replace */
		*total = sqrtf(sum);
/* pkb-with */
		*total = sum;
/* pkb-end */
