/*
 * 038_ulysses_gather_seq_scatter_heads_qkv, known-bad: splits the flat 1536
 * values of a position into W runs of 1536/W -- 036's exchange on the packed
 * projection, without the (3, 512) view -- so a rank gets a slice across
 * the q|k|v boundaries (at W = 4, rank 1 gets the last 128 of q and the
 * first 256 of k) instead of its heads of each. Right nowhere but where
 * the two splits coincide (rank 0's first C columns of q). Otherwise
 * identical to ok_symm_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
	int64_t i = a / L.ru;
	return (i * L.w + d) * L.ru + (a - i * L.ru);
/* pkb-with */
	int64_t r3 = 3 * L.ru, i = a / r3;   /* BUG: the flat 1536 split in W */
	return (i * L.w + d) * r3 + (a - i * r3);
/* pkb-end */
