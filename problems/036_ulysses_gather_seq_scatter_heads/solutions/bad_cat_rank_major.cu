/*
 * 036_ulysses_gather_seq_scatter_heads, known-bad: the exchange is right,
 * the concatenation is not. The chunk from rank p is written as one
 * contiguous block at element p*B*T*G*64 of the output -- torch.cat along
 * dim 0, what a flat all_to_all_single leaves -- instead of at positions
 * [p*T, (p+1)*T) of every sequence b. The same layout only when B = 1
 * (M < 128). Otherwise identical to ok_symm_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
	int64_t i = a / L.ru, b = i / L.t;
	return ((b * L.w + p) * L.t + (i - b * L.t)) * L.ru + (a - i * L.ru);
/* pkb-with */
	return p * L.nu + a;   /* rank-major: gathered along dim 0 */
/* pkb-end */
