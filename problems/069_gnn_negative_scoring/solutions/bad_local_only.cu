/*
 * 069_gnn_negative_scoring, known-bad: no communication. Each rank ranks its
 * own rows and leaves the other ranks' entries of the output unwritten.
 * Otherwise identical to ok_symm_count.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_count.cu
 */

/* pkb-replace */
	for (int64_t g = blockIdx.x; g < total; g += BLOCKS) {
		while (g >= lay.off[owner + 1])
			owner++;
/* pkb-with */
	for (int64_t g = blockIdx.x; g < total; g += BLOCKS) {
		while (g >= lay.off[owner + 1])
			owner++;
		if (owner != comm.rank)   /* the bug: own rows only */
			continue;
/* pkb-end */
