/*
 * 085_distributed_sample_sort, known-bad: no peer's shard is read. Every
 * peer counts as empty, so the rank "sorts" its own values alone and
 * returns its share of them: the slice of a different, smaller multiset.
 * pkb-mutant-of: ok_symm_merge.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
			counts[k] = *(const int64_t *)(slots[k] + o);
/* pkb-with */
			counts[k] = k == rank ? *(const int64_t *)(slots[k] + o) : 0;
/* pkb-end */

/* pkb-replace */
pull_shards(char *const *slots, const size_t *off, T *all, int64_t *counts, int world,
	    int64_t l)
/* pkb-with */
pull_shards(char *const *slots, const size_t *off, T *all, int64_t *counts, int world,
	    int64_t l, int rank)
/* pkb-end */

/* pkb-replace */
	pull_shards<T><<<grid, THREADS, 0, st>>>(slots, s->off, (T *)s->all, s->counts,
						 ctx->world, l);
/* pkb-with */
	pull_shards<T><<<grid, THREADS, 0, st>>>(slots, s->off, (T *)s->all, s->counts,
						 ctx->world, l, ctx->rank);
/* pkb-end */
