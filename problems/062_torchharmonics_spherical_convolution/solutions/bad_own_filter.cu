/*
 * 062_torchharmonics_spherical_convolution, known-bad: every channel
 * contracted with the filter of this rank's azimuth column. In the original
 * channel c is contracted on the azimuth rank that owns c after the first
 * transpose, with that rank's psi; the two azimuth ranks' filters differ.
 * Right only when az = 1 (odd W). Otherwise identical to ok_symm_gather.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_gather.cu
 */

/* pkb-replace */
					const char *r = all + (q * g.az + c / cpa) * g.rec;
/* pkb-with */
					const char *r = all + (q * g.az + g.a) * g.rec;   /* own column's */
/* pkb-end */
