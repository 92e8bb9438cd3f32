/*
 * 052_fp8_reduce_scatter_grads, known-bad: no communication. Each rank
 * returns its own reconstruction of shard r, as if W were 1: one term
 * where the reference has the mean of W independent ones (off by ~100%
 * rms). updated_hist is right. Otherwise identical to ok_codes_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_codes_pull.cu
 */

/* pkb-replace */
		for (int j = 0; j < comm.world; j++) {
			const uint8_t *src = stage[j];
/* pkb-with */
		for (int j = comm.rank; j == comm.rank; j++) {   /* the bug: own term only */
			const uint8_t *src = stage[j];
/* pkb-end */

/* pkb-replace */
		out[i] = pkb_from_float<T>(sum / (float)comm.world);
/* pkb-with */
		out[i] = pkb_from_float<T>(sum);
/* pkb-end */
