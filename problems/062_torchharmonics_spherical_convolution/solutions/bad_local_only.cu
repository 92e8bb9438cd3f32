/*
 * 062_torchharmonics_spherical_convolution, known-bad: no communication.
 * Every rank's slot of the gathered copy is filled with this rank's own x
 * and filter, as if all ranks held the same data. Otherwise identical to
 * ok_symm_gather.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_gather.cu
 */

/* pkb-replace */
			all[p * nu + u] = from[u];
/* pkb-with */
			all[p * nu + u] = mine[u];   /* own record in every slot */
/* pkb-end */
