/*
 * 074_fla_kimi_delta_attention_cp_tp, known-bad: local data only. The
 * recurrence starts from a zero state at this rank's first position
 * instead of carrying it over the earlier ranks' chunks, and no TP sum
 * (this rank's own output is returned). Rank 0 of each CP group is right
 * at W = 2 (its chunk is the start of the sequence); every other rank's
 * outputs are off by >= 178 u*amax in bf16 (simulated, dt_bias U(-10, -2)).
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	for (int64_t p = 0; p < npos; p++) {
/* pkb-with */
	for (int64_t p = own; p < npos; p++) {
/* pkb-end */

/* pkb-replace */
		out[i] = pkb_from_float<T>(pkb_to_float(mine[i]) + pkb_to_float(peer[i]));
/* pkb-with */
		out[i] = pkb_from_float<T>(pkb_to_float(mine[i]) + 0 * pkb_to_float(peer[i]));
/* pkb-end */
