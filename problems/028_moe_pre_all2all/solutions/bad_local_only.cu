/*
 * 028_moe_pre_all2all, known-bad: rows from this rank only. Each output
 * row is read from this rank's own permutation and rows, at the position
 * the source rank's row would have: right where the source is this rank,
 * wrong for every chunk from a peer.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const char *src = stage[j] + h;
/* pkb-with */
		const char *src = stage[me] + h;
/* pkb-end */
