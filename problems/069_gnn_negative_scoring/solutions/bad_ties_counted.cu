/*
 * 069_gnn_negative_scoring, known-bad: negatives equal to the positive
 * (after the sigmoid in T) are counted as ranked ahead of it (>= instead
 * of >), as an unstable or "pessimistic" ranking would. The original's sort
 * keeps the positive first; most rows hold such a tie (922 of 1027 at
 * W = 4 in bf16, host simulation).
 * pkb-mutant-of: ok_symm_ranks.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		c += sigmoid_t(neg[row * nneg + j]) > p;
/* pkb-with */
		c += sigmoid_t(neg[row * nneg + j]) >= p;
/* pkb-end */
