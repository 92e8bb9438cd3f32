/*
 * 047_fsdp_step_e2e, known-bad: the reduce-scatter's SUM is used as the
 * gradient without the division by W (the mean over ranks of the per-rank
 * mean losses). g is W times too large: m needs 245-1900 terms of
 * tolerance (host simulation, bf16, W = 2, 4, 8), and theta moves too.
 * pkb-mutant-of: ok_symm_fsdp.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		float g = rt<T>(acc * h.inv_w);
/* pkb-with */
		float g = rt<T>(acc);
/* pkb-end */
