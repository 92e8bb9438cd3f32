/*
 * 029_moe_post_all2all, known-bad: rows from this rank only. Each routed
 * row is read from this rank's own expert outputs, at the position the
 * expert's rank would hold it: right for experts this rank owns, wrong
 * for the others.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const T *src = (const T *)(stage[j] + h + HDR) + (chunk_off[e] + i - start[e]) * n;
/* pkb-with */
		const T *src = (const T *)(stage[me] + h + HDR) + (chunk_off[e] + i - start[e]) * n;
/* pkb-end */
