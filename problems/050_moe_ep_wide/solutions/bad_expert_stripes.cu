/*
 * 050_moe_ep_wide, known-bad: experts placed round-robin, expert e on rank
 * e % W (Megatron-style striping), where the original places them in
 * contiguous blocks, experts 2q and 2q+1 on rank q. Half the ranks' experts
 * land on the wrong MLP on every rank (expert 0 is right either way).
 * pkb-mutant-of: ok_symm_weights.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		int owner = base + sel[tj] / el;
/* pkb-with */
		int owner = base + sel[tj] % g;
/* pkb-end */
