/*
 * 027_moe_all2all_primitive, known-bad: rows from this rank only. Each
 * output segment is read from this rank's own staged input (at the offset
 * where the peer's rows would be): right for the segment a rank keeps,
 * wrong for the W-1 others.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const U *src = (const U *)(stage[j] + h + HDR) + (src_off[j] + i - out_off[j]) * upr;
/* pkb-with */
		const U *src = (const U *)(stage[me] + h + HDR) + (src_off[j] + i - out_off[j]) * upr;
/* pkb-end */
