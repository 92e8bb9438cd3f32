/*
 * 064_gnn_neighbor_sampling, known-bad: no peer is read. Every frontier
 * node's neighbours come from this rank's own local_adj_col, whose lists
 * are real only for the nodes this rank owns: the neighbours of the others
 * are filler, so every hop past the locally owned nodes samples wrong ids.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		     const int64_t *colptr, const int64_t *owner, char *const *slots,
/* pkb-with */
		     const int64_t *colptr, const int64_t *owner, const int64_t *col,
/* pkb-end */

/* pkb-replace */
	const int64_t *lists = (const int64_t *)(slots[owner[v]] + *half);
/* pkb-with */
	const int64_t *lists = col;
	(void)owner;
	(void)half;
/* pkb-end */

/* pkb-replace */
						    slots, s->off_half, s->cnt, cap, s->nbr,
/* pkb-with */
						    col, s->off_half, s->cnt, cap, s->nbr,
/* pkb-end */
