/*
 * 044_quantized_grad_allreduce, known-bad: the int8 codes are truncated
 * toward zero (a plain float-to-int cast) instead of rounded half to even,
 * the usual shortcut. Every term shrinks by up to one step s ~ 0.02, 0.01
 * on average, against a bound of 2u |r| (one ulp of the dtype). Otherwise
 * identical to ok_codes_sum.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_codes_sum.cu
 */

/* pkb-replace */
			my_q[base + i] = (int8_t)fminf(fmaxf(rintf(v / s), -127.f), 127.f);
/* pkb-with */
			my_q[base + i] = (int8_t)fminf(fmaxf(v / s, -127.f), 127.f);   /* the bug: truncates */
/* pkb-end */
