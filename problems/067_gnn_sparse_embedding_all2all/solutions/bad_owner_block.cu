/*
 * 067_gnn_sparse_embedding_all2all, known-bad: the owner taken as a
 * contiguous block of ids, idx / (num_nodes / W) (068's sharding), instead
 * of idx % W. Every rank receives about as many entries, but the wrong
 * ones.
 * pkb-mutant-of: ok_symm_push.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
__global__ void owners(const int64_t *idx, int64_t nnz, int w, int *key, int *pos,
		       int64_t *hist)
/* pkb-with */
__global__ void owners(const int64_t *idx, int64_t nnz, int64_t block, int *key, int *pos,
		       int64_t *hist)
/* pkb-end */

/* pkb-replace */
	int o = (int)(idx[i] % w);
/* pkb-with */
	int o = (int)(idx[i] / block);
/* pkb-end */

/* pkb-replace */
		idx, s->nnz, w, s->key, s->pos, s->hist);
/* pkb-with */
		idx, s->nnz, (int64_t)pkb_param_get(ctx, "num_nodes", 1) / w, s->key, s->pos,
		s->hist);
/* pkb-end */
