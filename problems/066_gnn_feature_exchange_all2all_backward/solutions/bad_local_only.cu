/*
 * 066_gnn_feature_exchange_all2all_backward, known-bad: no peer is
 * written. Every gradient chunk stays on this rank, at the place the
 * rotation gives it, and the scatter-add sums this rank's own rows: right
 * for the rows of chunk 0 only.
 * pkb-mutant-of: ok_symm_push.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		int d = (int)((me + q) % w);
/* pkb-with */
		int d = me;
/* pkb-end */
