/*
 * 033_ulysses_all_to_all_tensor_primitive, known-bad: the exchange is right,
 * the concatenation is not. The chunk from rank p is written as one
 * contiguous block at element p*(M/W)*N of the output -- all_to_all_single's
 * buffer, torch.cat along dim 0, viewed as (M/W, W*N) -- instead of at
 * columns [p*N, (p+1)*N) of every row. The two layouts agree on the first N
 * elements only (row 0 of chunk 0), everywhere only when M = W (one row a
 * chunk). Otherwise identical to ok_symm_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
	int64_t i = a / L.upr;
	return (i * L.w + p) * L.upr + (a - i * L.upr);
/* pkb-with */
	return p * L.nu + a;   /* rank-major: gathered along dim 0 */
/* pkb-end */
