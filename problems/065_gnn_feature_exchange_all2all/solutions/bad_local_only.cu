/*
 * 065_gnn_feature_exchange_all2all, known-bad: no peer is written. Every
 * chunk stays on this rank, at the place the rotation gives it: output
 * chunk c holds this rank's own gathered chunk (-c) mod W instead of rank
 * (j + c)'s. Right for chunk 0 only.
 * pkb-mutant-of: ok_symm_push.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		int d = (int)((me + q) % w);
/* pkb-with */
		int d = me;
/* pkb-end */
