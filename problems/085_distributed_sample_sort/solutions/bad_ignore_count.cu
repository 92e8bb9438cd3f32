/*
 * 085_distributed_sample_sort, known-bad: local_n is ignored and all L
 * values of local_shard are sorted. Right while every shard is full (trials
 * 0, 1, 2), wrong at trial 3, where the odd ranks' shards are empty and
 * their L values are filler that must not be counted: the totals, the
 * shares and the values all change. Four trials, so that trial 3 runs (the
 * GPU suite runs three).
 * pkb-args: --trials 4
 * pkb-mutant-of: ok_symm_merge.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	int64_t n = *local_n;
/* pkb-with */
	int64_t n = l;
	(void)local_n;
/* pkb-end */
