/*
 * 069_gnn_negative_scoring, known-bad: no peer is written. Each rank
 * stores its ranks in its own staging buffer only; the places of the
 * other ranks' rows keep zeros (or an older call's ranks).
 * pkb-mutant-of: ok_symm_ranks.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		int d = (me + threadIdx.x) % w, total = 0;
/* pkb-with */
		int d = me, total = 0;
/* pkb-end */
