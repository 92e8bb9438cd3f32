/*
 * 072_hyena_forward_cp, known-bad: ok_symm_direct ignoring the zigzag --
 * the ranks' 2048 positions taken as contiguous pieces of the sequence in
 * rank order (rank i holding positions [2048 i, 2048 (i+1))), for the
 * samples read and the results pushed alike: the cheapest reading of a
 * context-parallel layout, and what the original computes with
 * with_zigzag_splitting = False. Each rank's second chunk is convolved
 * with the wrong history. Simulated (each channel at its own scale):
 * 835-1434x the element bound at bf16, 2e4-4e4x at fp32.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_direct.cu
 */

/* pkb-replace */
	int q = (int)(p / CHUNK);
	*s = (q < w ? 0 : CHUNK) + p % CHUNK;
	return q < w ? q : 2 * w - 1 - q;
/* pkb-with */
	(void)w;
	*s = p % LOCAL;
	return (int)(p / LOCAL);
/* pkb-end */
