/*
 * 062_torchharmonics_spherical_convolution, known-bad: the contraction over
 * this rank's own polar row only -- the polar all-reduce skipped, every
 * output missing the other latitude tiles' contributions. Right only when
 * pol = 1 (W = 2), so it runs at W >= 3 only (pkb-worlds). Otherwise
 * identical to ok_symm_gather.cu.
 * pkb-expect: mismatch
 * pkb-worlds: 3 4 5 6 7 8 9 10 11 12 13 14 15 16
 * pkb-mutant-of: ok_symm_gather.cu
 */

/* pkb-replace */
				for (int q = 0; q < g.pol; q++) {
/* pkb-with */
				for (int q = g.p; q == g.p; q++) {   /* own polar row only */
/* pkb-end */
