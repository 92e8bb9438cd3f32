/*
 * 039_ulysses_attention_e2e, known-bad: the softmax over all 8 heads of a
 * position -- the original's W = 1 formula, what a candidate gets by
 * dropping the head split with the exchanges -- instead of over each group
 * of G = 8/W heads. Wrong at every W (G < 8). Otherwise identical to
 * ok_local.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_local.cu
 */

/* pkb-replace */
		int first = h / g_n * g_n, size = g_n;   /* the group of head h */
/* pkb-with */
		int first = 0, size = HEADS;   /* BUG: all heads, no groups of G */
/* pkb-end */
