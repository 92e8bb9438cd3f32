/*
 * 018_tp_rms_norm, known-bad: the sums of squares are all-reduced, but the
 * mean divides by the local hidden size N instead of the global W*N -- the
 * single-GPU RMSNorm formula left in place. Every output is off by a factor
 * of about sqrt(W). Otherwise identical to ok_symm_rowsums.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_rowsums.cu
 */

/* pkb-replace */
		1.0f / (float)((int64_t)ctx->world * n),
/* pkb-with */
		1.0f / (float)n,   /* the bug: local hidden size */
/* pkb-end */
