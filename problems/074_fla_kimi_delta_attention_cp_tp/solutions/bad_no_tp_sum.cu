/*
 * 074_fla_kimi_delta_attention_cp_tp, known-bad: the tensor-parallel sum
 * skipped. Each rank of a TP pair returns its own rounded output instead
 * of T(mine + the partner's): the all-reduce the original ends with looks
 * like the part a fast kernel can drop, since the recurrence is done. Only
 * W >= 4 and even has TP pairs (W = 2 and odd W: no TP group, nothing to
 * skip), so it runs at those sizes (pkb-worlds). Off by >= 184 u*amax in
 * bf16 (simulated: the partner's half is as large as the rank's own).
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 * pkb-worlds: 4 6 8
 */

/* pkb-replace */
		out[i] = pkb_from_float<T>(pkb_to_float(mine[i]) + pkb_to_float(peer[i]));
/* pkb-with */
		out[i] = pkb_from_float<T>(pkb_to_float(mine[i]) + 0 * pkb_to_float(peer[i]));
/* pkb-end */
