/*
 * 072_hyena_forward_cp, known-bad: ok_symm_direct with the filter row
 * loaded reversed -- a correlation instead of a convolution (tap j takes
 * h[K-1-j]). Row g holds values in [g, g+1) (bf16(g K + k) / K), nearly
 * constant for the large channels, so the error is about the size of the
 * smallest channels' outputs in every channel: 100% of channel 0, 0.1% of
 * channel 1023. Judged against one amax over the whole output it passed
 * at bf16 (worst element 0.33-0.41 of the bound, l2 0.17u against 2.9u);
 * with each channel's own amax it fails on the low channels.
 * Simulated (numpy, W = 2, 4, 8): 132-266x the element bound at bf16,
 * 5e3-6e3x at fp32 (l2 9e3 u).
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_direct.cu
 */

/* pkb-replace */
			hs[i] = pkb_to_float(h[c * FILT + i]);
/* pkb-with */
			hs[i] = pkb_to_float(h[c * FILT + FILT - 1 - i]);
/* pkb-end */
