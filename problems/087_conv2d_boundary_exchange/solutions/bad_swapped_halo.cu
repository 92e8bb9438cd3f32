/*
 * 087_conv2d_boundary_exchange, known-bad: ok_halo_gemm with the upper halo
 * taken from the previous rank's first row instead of its last (the
 * original's boundaries[r-1][0] for [r-1][1]): the first output row of
 * every rank but 0 convolves the wrong row.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_halo_gemm.cu
 */

/* pkb-replace */
			mine[i] = ((const uint4 *)xs[comm.rank - 1])[lh * row_units + i];
/* pkb-with */
			mine[i] = ((const uint4 *)xs[comm.rank - 1])[row_units + i];
/* pkb-end */
