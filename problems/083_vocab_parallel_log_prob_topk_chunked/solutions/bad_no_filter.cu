/*
 * 083_vocab_parallel_log_prob_topk_chunked, known-bad: the cheapest wrong
 * shortcut, no filter at all. The target's plain log-softmax over the full
 * vocabulary: the sort, the threshold and the cumulative sum are skipped,
 * so no token's value is 0: every token moves, by 0.0019 to 1.3 (host
 * simulation, 50000 tokens), against atol = 2^-16.
 * pkb-mutant-of: ok_symm_rows.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	bool keep = kk && keep_sorted[pos];
	float s2 = block_sum(keep ? e : 0.f, red);
/* pkb-with */
	bool keep = true;
	float s2 = block_sum(expf(xv - mx), red);
/* pkb-end */
