/*
 * 042_zero2_optimizer_shard_grad, known-bad: the reduce-scatter's sum is
 * used as the gradient without the division by W (a SUM reduce-scatter
 * taken for an AVG one). The moments take W times the gradient, and the
 * update moves with them (host simulation: m 42-87x its bound in bf16).
 * pkb-mutant-of: ok_symm_shard.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		float g = rt<T>(rt<T>(sum) * h.inv_w);
/* pkb-with */
		float g = rt<T>(sum);
/* pkb-end */
