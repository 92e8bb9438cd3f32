/*
 * 044_quantized_grad_allreduce, known-bad: no communication. Each rank
 * returns its own reconstruction, as if W were 1: one term where the
 * reference has the mean of W independent ones. Otherwise identical to
 * ok_codes_sum.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_codes_sum.cu
 */

/* pkb-replace */
		for (int j = 0; j < comm.world; j++) {
			const int8_t *q = stage[j];
/* pkb-with */
		for (int j = comm.rank; j == comm.rank; j++) {   /* the bug: own term only */
			const int8_t *q = stage[j];
/* pkb-end */

/* pkb-replace */
		out[e] = pkb_from_float<T>(sum * (1.0f / (float)comm.world));
/* pkb-with */
		out[e] = pkb_from_float<T>(sum);
/* pkb-end */
