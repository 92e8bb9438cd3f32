/*
 * 059_physicsnemo_distributed_rfft, known-bad: ok_symm_pull with every
 * peer's piece taken from this rank's own buffer -- local data only: the
 * Wd transform sees this rank's columns W times over instead of the global
 * rows. The barriers stay (harmless).
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
		const cufftComplex *src = a[j] + b * wl * h + (int64_t)comm.rank * hl;
/* pkb-with */
		const cufftComplex *src = a[comm.rank] + b * wl * h + (int64_t)comm.rank * hl;
/* pkb-end */
