/*
 * 071_hyena_conv1d_boundary_exchange, known-bad: ok_symm_halo with zero
 * halos on every rank -- each half convolved as if it started the sequence,
 * local data only: the first 6 outputs of each half miss up to 6 taps
 * (simulated: 68x the element bound at bf16). The staging and the barrier
 * stay (harmless).
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_halo.cu
 */

/* pkb-replace */
		if (h == 0)
			v = comm.rank > 0
				? pkb_to_float(tails[comm.rank - 1][off + (c0 + c) * PAD + k]) : 0.f;
		else if (comm.rank < comm.world - 1)
			v = pkb_to_float(tails[comm.rank + 1][off + (nc + c0 + c) * PAD + k]);
		else   /* chunk W-1 precedes chunk W: both here */
			v = pkb_to_float(x[(c0 + c) * len + chunk - PAD + k]);
/* pkb-with */
		v = 0.f;   /* the shortcut: zero padding */
		(void)h;
/* pkb-end */
