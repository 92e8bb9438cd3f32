/*
 * 067_gnn_sparse_embedding_all2all, known-bad: no peer is written. Each
 * rank keeps the entries it owns itself and returns them alone; the
 * other sources' counts in its area are never written (zero), so R counts
 * this rank's own entries only.
 * pkb-mutant-of: ok_symm_push.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		((int64_t *)(areas[d] + *off))[me] = hist[d];
/* pkb-with */
		if (d == me)
			((int64_t *)(areas[d] + *off))[me] = hist[d];
/* pkb-end */

/* pkb-replace */
		int d = key[q], i = pos[q];
/* pkb-with */
		int d = key[q], i = pos[q];
		if (d != me)
			continue;
/* pkb-end */
