/*
 * 029_moe_post_all2all, known-bad: each row scaled by the token's other
 * weight (routing_weights' column taken by slot order, the wrong way
 * round). Off by (w_a - w_b)(x_a - x_b): most elements, by far more than
 * the rounding the tolerance allows.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		int k = sel[t * TOPK] == e ? 0 : 1;
/* pkb-with */
		int k = sel[t * TOPK] == e ? 1 : 0;
/* pkb-end */
