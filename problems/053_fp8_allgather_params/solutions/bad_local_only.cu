/*
 * 053_fp8_allgather_params, known-bad: no communication. Each rank writes
 * only its own slot of full and leaves the other W-1 slots as they were:
 * a quarter of the gathered parameters at W = 4.
 * pkb-mutant-of: ok_symm_codes.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	for (int j = 0; j < comm.world; j++) {
/* pkb-with */
	for (int j = comm.rank; j == comm.rank; j++) {
/* pkb-end */
