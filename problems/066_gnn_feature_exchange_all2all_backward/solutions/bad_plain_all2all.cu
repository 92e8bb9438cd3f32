/*
 * 066_gnn_feature_exchange_all2all_backward, known-bad: a plain
 * all-to-all, the rotation left out: chunk q of rank j goes to rank q as
 * its chunk j (out_j[chunk c] = grad_output_c[chunk j]) instead of to rank
 * j + q as its chunk -q. The scatter-add then sums the wrong rows.
 * pkb-mutant-of: ok_symm_push.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		int d = (int)((me + q) % w);
		int64_t at = ((w - q) % w) * rpp + i % rpp;
/* pkb-with */
		int d = (int)q;
		int64_t at = (int64_t)me * rpp + i % rpp;
/* pkb-end */
