/*
 * 039_ulysses_attention_e2e, known-bad: skips the second all-to-all. The
 * rank's own results (W, tok, G*64) -- its head group for every rank's
 * positions -- go into att (tok, 512) as they lie, the same number of
 * values: the layout of the head owner, not of the position owner. Right
 * nowhere but by chance. Otherwise identical to ok_symm_a2a.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_a2a.cu
 */

/* pkb-replace */
		att[o] = src[(me * tok + p) * gu + u];
/* pkb-with */
		(void)src;   /* BUG: our own results, unexchanged */
		att[o] = ((const int4 *)((const char *)stage[me] + res_off))[o];
/* pkb-end */
