/*
 * 034_ulysses_all_gather_into_tensor_primitive, known-bad: every block is
 * moved, but placed by its distance from this rank instead of by its rank --
 * rank p's x lands at rows [((p - r) mod W)*M, ...), this rank's own first,
 * the order a ring all-gather receives them in. Right on rank 0 only.
 * Otherwise identical to ok_symm_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
					out[dst_at(L, me, u)] = v;
/* pkb-with */
					out[dst_at(L, 0, u)] = v;   /* own block first */
/* pkb-end */

/* pkb-replace */
		rk[threadIdx.x] = p;
/* pkb-with */
		rk[threadIdx.x] = 1 + threadIdx.x;   /* the step, not the rank */
/* pkb-end */
