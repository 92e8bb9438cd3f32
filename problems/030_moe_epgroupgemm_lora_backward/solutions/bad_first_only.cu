/*
 * 030_moe_epgroupgemm_lora_backward, known-bad: the cheapest shortcut of a
 * fused bucket -- only the first gradient's range is reduced, the other two
 * are copied from the local inputs (a bucket sized for one tensor). Right
 * on grad_fc1_1_lora_A, wrong on the other two. Otherwise identical to
 * ok_fused_oneshot.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_fused_oneshot.cu
 */

/* pkb-replace */
		for (int r = 0; r < comm.world; r++) {
			int4 raw = ((const int4 *)stage[r])[v];
/* pkb-with */
		for (int r = v < vseg ? 0 : comm.rank; r < (v < vseg ? comm.world : comm.rank + 1); r++) {
			int4 raw = ((const int4 *)stage[r])[v];   /* the bug: tensor 0 only */
/* pkb-end */
