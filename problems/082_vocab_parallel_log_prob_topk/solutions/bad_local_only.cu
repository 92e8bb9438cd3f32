/*
 * 082_vocab_parallel_log_prob_topk, known-bad: no communication. Each rank
 * filters its own vocabulary shard only (the other entries at -inf): a
 * token whose target lies in another shard gets -inf, and the others are
 * filtered against the wrong top-k. Every rank holds such tokens.
 * pkb-mutant-of: ok_symm_rows.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	xs[v] = pkb_to_float(((const T *)(stage[q] + off))[(int64_t)i * k + v % k]);
/* pkb-with */
	xs[v] = q == comm.rank ? pkb_to_float(x[(int64_t)i * k + v % k]) : -INFINITY;
/* pkb-end */
