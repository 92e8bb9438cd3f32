/*
 * 057_ring_attention_backward_dp, known-bad: the DP all-reduce's SUM
 * taken for the mean (the div_ by dp_size forgotten): every gradient is
 * twice the average.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
			g[i] = pkb_from_float<T>(sum * 0.5f);
/* pkb-with */
			g[i] = pkb_from_float<T>(sum);
/* pkb-end */
