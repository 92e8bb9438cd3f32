/*
 * 062_torchharmonics_spherical_convolution, known-bad: the contraction over
 * this rank's own polar row only -- the polar all-reduce skipped, every
 * output missing the other latitude tiles' contributions. Right only when
 * pol = 1 (W = 2). Otherwise identical to ok_symm_gather.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_gather.cu
 */

/* pkb-replace */
				for (int q = 0; q < g.pol; q++) {
/* pkb-with */
				for (int q = g.p; q == g.p; q++) {   /* own polar row only */
/* pkb-end */
