/*
 * 084_vocab_parallel_log_prob_topk_chunked_backward, known-bad: the
 * cheapest wrong shortcut, the gradient of the plain log-softmax,
 * (onehot - softmax(x)) * g over the whole vocabulary: the filter (sort,
 * threshold, cumulative sum) and its mask are skipped. Every token moves,
 * by >= 0.0019 |g| at its largest entry (host simulation, 50000 tokens)
 * and by ~e^-8 |g| at every entry the filter drops, against atol = 2^-16.
 * pkb-mutant-of: ok_symm_rows.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	bool keep = kk && keep_sorted[pos];
	float s2 = block_sum(keep ? e : 0.f, red);
/* pkb-with */
	bool keep = true;
	e = expf(xv - mx);
	float s2 = block_sum(e, red);
/* pkb-end */
