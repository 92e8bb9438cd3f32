/*
 * 013_gemm_allreduce, known-bad: an off-by-one in the reduction. Same as
 * ok_fp32_partials.cu (fp32 partials in symmetric memory, one-shot pull with
 * a barrier before and after), but the sum starts at rank 1: rank 0's
 * product is missing from every rank's output.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_fp32_partials.cu
 */

/* pkb-replace */
		for (int w = 0; w < comm.world; w++)
/* pkb-with */
		for (int w = 1; w < comm.world; w++)
/* pkb-end */
