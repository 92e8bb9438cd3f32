/*
 * 064_gnn_neighbor_sampling, known-bad: node v is taken to live on rank
 * v % W, the original's layout, instead of node_to_rank[v]. The owners
 * here are random: about (W-1)/W of the lists are read from a rank that
 * does not hold them.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		     const int64_t *colptr, const int64_t *owner, char *const *slots,
/* pkb-with */
		     const int64_t *colptr, int64_t world, char *const *slots,
/* pkb-end */

/* pkb-replace */
	const int64_t *lists = (const int64_t *)(slots[owner[v]] + *half);
/* pkb-with */
	const int64_t *lists = (const int64_t *)(slots[v % world] + *half);
/* pkb-end */

/* pkb-replace */
		pull<<<grid(cap), THREADS, 0, st>>>(s->front, s->take, s->off, colptr, owner,
/* pkb-with */
		pull<<<grid(cap), THREADS, 0, st>>>(s->front, s->take, s->off, colptr,
						    (int64_t)ctx->world,
/* pkb-end */
