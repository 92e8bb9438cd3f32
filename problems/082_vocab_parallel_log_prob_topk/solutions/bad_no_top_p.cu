/*
 * 082_vocab_parallel_log_prob_topk, known-bad: the cheapest wrong
 * shortcut, top-k only. The softmax and its cumulative sum in T (the
 * top-p cut, the costly part) are skipped, so all ten largest entries stay
 * and the target's log-prob is never 0: every token moves, by 2.8e-4 to
 * 0.1 (host simulation, 200000 tokens), against atol = 2^-16.
 * pkb-mutant-of: ok_symm_rows.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	bool keep = kk && keep_sorted[pos];
/* pkb-with */
	bool keep = kk;
/* pkb-end */
