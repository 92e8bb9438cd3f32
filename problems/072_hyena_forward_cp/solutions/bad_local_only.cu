/*
 * 072_hyena_forward_cp, known-bad: ok_symm_direct with every sample of z
 * read from this rank's own buffer -- local data only: a position owned by
 * rank i takes this rank's sample at the same local offset, so each
 * channel is convolved with this rank's two chunks repeated W times
 * instead of the global sequence. The pushes and the meetings stay.
 * Simulated (numpy, this mutant's reads, each channel at its own
 * scale): 1063-3748x the element bound at bf16, 2e4-8e4x at fp32.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_direct.cu
 */

/* pkb-replace */
				int o = owner(q, w, &s);
				v = pkb_to_float(zp[o][c * LOCAL + s]);
/* pkb-with */
				owner(q, w, &s);
				v = pkb_to_float(zp[comm.rank][c * LOCAL + s]);
/* pkb-end */
