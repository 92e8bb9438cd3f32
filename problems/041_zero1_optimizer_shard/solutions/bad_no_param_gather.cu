/*
 * 041_zero1_optimizer_shard, known-bad: the cheapest shortcut. The updated
 * slices are not all-gathered: each rank writes only its own slice, and the
 * other W-1 slices keep the broadcast, pre-step values. They are off by the
 * update, lr * 0.3..3, which the parameters' atol (64 u lr) does not excuse
 * (host simulation: thousands of elements in bf16, all in fp32).
 * pkb-mutant-of: ok_symm_shard.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
			*param_at<T>(sg, (int64_t)q * part + j) = slices[q][j];
/* pkb-with */
			if (q == comm.rank)
				*param_at<T>(sg, (int64_t)q * part + j) = slices[q][j];
/* pkb-end */
