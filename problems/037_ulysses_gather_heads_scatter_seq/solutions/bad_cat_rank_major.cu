/*
 * 037_ulysses_gather_heads_scatter_seq, known-bad: the exchange is right,
 * the concatenation is not. The chunk from rank p is written as one
 * contiguous block at element p*B*S*512 of the output -- torch.cat along
 * dim 0, what a flat all_to_all_single leaves -- instead of at heads
 * [8p, 8p+8) of every position. The same layout only when B*S = 1.
 * Otherwise identical to ok_symm_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
	int64_t i = a / L.ru;
	return (i * L.w + p) * L.ru + (a - i * L.ru);
/* pkb-with */
	return p * L.nu + a;   /* rank-major: gathered along dim 0 */
/* pkb-end */
