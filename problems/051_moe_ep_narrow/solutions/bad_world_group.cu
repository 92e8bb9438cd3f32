/*
 * 051_moe_ep_narrow, known-bad: the EP sub-groups are ignored: expert e is
 * taken from global rank e, as if the one EP group were ranks 0..E-1 of
 * the world. Right on the first group's ranks; every other group's tokens
 * go through the first group's MLPs.
 * pkb-mutant-of: ok_symm_weights.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const uint4 *src = (const uint4 *)(slots[base + q] + *off);
/* pkb-with */
		const uint4 *src = (const uint4 *)(slots[q] + *off);
		(void)base;
/* pkb-end */
