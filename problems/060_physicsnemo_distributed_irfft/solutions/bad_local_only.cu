/*
 * 060_physicsnemo_distributed_irfft, known-bad: ok_symm_pull with every
 * peer's rows taken from this rank's own buffer -- local data only: the H
 * transform sees this rank's rows W times over instead of the whole column.
 * The barriers stay (harmless).
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
		const cufftComplex *src = a[j] + bc * hl * wd + (int64_t)comm.rank * wl;
/* pkb-with */
		const cufftComplex *src = a[comm.rank] + bc * hl * wd + (int64_t)comm.rank * wl;
/* pkb-end */
