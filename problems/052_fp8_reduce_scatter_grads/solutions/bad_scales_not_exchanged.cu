/*
 * 052_fp8_reduce_scatter_grads, known-bad: the peers' codes are read but
 * decoded with this rank's own scale -- the shortcut of assuming one scale
 * everywhere, when each rank's comes from its own amax. Ranks' amax of
 * 16K randn differ by several % (bf16(amax) steps of 2^-5 near 4), so each
 * peer's term is off by that ratio and the mean by ~5% rms, against l2
 * 2u*sqrt(W+1) <= 2.4%. Otherwise identical to ok_codes_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_codes_pull.cu
 */

/* pkb-replace */
			float sj = *(const float *)(src + scale_off(n));
/* pkb-with */
			float sj = s;   /* the bug: the scales are never exchanged */
/* pkb-end */
