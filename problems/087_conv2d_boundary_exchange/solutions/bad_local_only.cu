/*
 * 087_conv2d_boundary_exchange, known-bad: ok_halo_gemm without the halo
 * pulls -- rows 0 and lh+1 stay zero on every rank: a plain conv2d with
 * padding 1 of the local rows only. The first and last output rows miss a
 * row of input (simulated: 90x the element bound at bf16). The barriers
 * stay (harmless).
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_halo_gemm.cu
 */

/* pkb-replace */
		if (comm.rank > 0)
			mine[i] = ((const uint4 *)xs[comm.rank - 1])[lh * row_units + i];
		if (comm.rank < comm.world - 1)
			mine[(lh + 1) * row_units + i] = ((const uint4 *)xs[comm.rank + 1])[row_units + i];
/* pkb-with */
		(void)mine;   /* the shortcut: no halo, local data only */
/* pkb-end */
