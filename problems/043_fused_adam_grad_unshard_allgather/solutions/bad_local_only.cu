/*
 * 043_fused_adam_grad_unshard_allgather, known-bad: no communication. Every
 * slot of the gathered vector gets this rank's own updated slice, as if
 * the group were this rank: W-1 of the W slices are wrong on every rank.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		out[k] = slices[r][k - r * p];
/* pkb-with */
		out[k] = mine[k - r * p];
/* pkb-end */
