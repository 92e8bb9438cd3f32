/*
 * 085_distributed_sample_sort, known-bad: the shortcut that the original's
 * inputs admit. There every rank's values lie in a band of width 100 around
 * -r*L, so at L >= 100 the bands are disjoint and the sorted shards,
 * concatenated from rank W-1 down to rank 0, are the global sort. This
 * candidate places value j of shard s at j plus the counts of the ranks
 * above s, no merge. pkb's bands overlap their neighbours' by half: wrong
 * wherever two bands meet, on every rank (trial % 4 == 3 excepted, where
 * the active even ranks' bands only touch).
 * pkb-mutant-of: ok_symm_merge.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		for (int t = 0; t < world; t++)
			if (t != s)
				pos += count_below(all + t * l, counts[t], x, t < s);
/* pkb-with */
		for (int t = s + 1; t < world; t++)
			pos += counts[t];
		(void)x;
/* pkb-end */
