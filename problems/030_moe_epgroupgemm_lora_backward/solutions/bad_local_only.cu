/*
 * 030_moe_epgroupgemm_lora_backward, known-bad: no communication. Each rank
 * returns its own gradients, as if W were 1. Otherwise identical to
 * ok_fused_oneshot.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_fused_oneshot.cu
 */

/* pkb-replace */
		for (int r = 0; r < comm.world; r++) {
			int4 raw = ((const int4 *)stage[r])[v];
/* pkb-with */
		for (int r = comm.rank; r == comm.rank; r++) {   /* the bug: own term only */
			int4 raw = ((const int4 *)stage[r])[v];
/* pkb-end */
