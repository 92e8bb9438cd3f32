/*
 * 015_combined_sharded_gemms, known-bad: an off-by-rank in the row blocks.
 * Same as ok_push_rows.cu, but every rank receives row block 0 of x_full
 * (rows 0 .. Ml-1) instead of its own block r. Rank 0's output is right;
 * every other rank's is wrong -- which only a check of every rank catches.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_push_rows.cu
 */

/* pkb-replace */
			dst[(e / hl) * hd + comm.rank * hl + e % hl] = x_local[d * n + e];
/* pkb-with */
			dst[(e / hl) * hd + comm.rank * hl + e % hl] = x_local[e];
/* pkb-end */
