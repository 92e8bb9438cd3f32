/*
 * 027_moe_all2all_primitive, known-bad: finds this rank's segment in a
 * peer's input with its own split list instead of the peer's (as if every
 * rank routed alike). The rows come from the right rank, at the wrong
 * offset, unless the two lists agree before this rank's index.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const int64_t *sent = (const int64_t *)(stage[j] + h);   /* rank j's input splits */
/* pkb-with */
		const int64_t *sent = (const int64_t *)(stage[me] + h);   /* ours, not rank j's */
/* pkb-end */
