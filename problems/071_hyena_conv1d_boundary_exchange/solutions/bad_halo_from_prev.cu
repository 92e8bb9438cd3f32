/*
 * 071_hyena_conv1d_boundary_exchange, known-bad: ok_symm_halo with the
 * second half's halo taken from rank r-1 (its second-half tail) as in a
 * contiguous split, instead of from rank r+1: in the zigzag layout rank r's
 * second half is chunk 2W-1-r, preceded by chunk 2W-2-r on rank r+1.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_halo.cu
 */

/* pkb-replace */
		else if (comm.rank < comm.world - 1)
			v = pkb_to_float(tails[comm.rank + 1][off + (nc + c0 + c) * PAD + k]);
/* pkb-with */
		else if (comm.rank > 0)
			v = pkb_to_float(tails[comm.rank - 1][off + (nc + c0 + c) * PAD + k]);
/* pkb-end */
