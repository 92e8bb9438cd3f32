/*
 * 084_vocab_parallel_log_prob_topk_chunked_backward, known-bad: no
 * communication. Each rank filters its own vocabulary shard only (the
 * other entries at -inf): the shard's largest entries pass the filter
 * against its own max, so tokens whose gradient is 0 (only the target
 * kept, usually on another rank) get -q * g on several entries, and the
 * others are normalised over the wrong set.
 * pkb-mutant-of: ok_symm_rows.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	xs[v] = pkb_to_float(((const T *)(stage[q] + off))[(int64_t)i * k + v % k]);
/* pkb-with */
	xs[v] = q == comm.rank ? pkb_to_float(x[(int64_t)i * k + v % k]) : -INFINITY;
/* pkb-end */
