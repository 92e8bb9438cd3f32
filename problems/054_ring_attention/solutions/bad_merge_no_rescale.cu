/*
 * 054_ring_attention, known-bad: the online softmax without the max
 * rescale. What earlier tiles (earlier ranks' blocks: at the default a
 * block is one tile) summed relative to their own max is added to sums
 * relative to the new max unchanged, as a merge of partials that forgets
 * to weigh them by exp(m_old - m_new): right where the running max never
 * grows (rank 0 at the default), wrong elsewhere.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
			float alpha = mnew == -INFINITY ? 1.0f : expf(m - mnew);
/* pkb-with */
			float alpha = 1.0f;
/* pkb-end */
