/*
 * 074_fla_kimi_delta_attention_cp_tp, known-bad: a truncated history.
 * The recurrence starts from a zero state 32 tokens before this rank's
 * chunk instead of at position 0 (a sliding window of half a chunk: at
 * cp = 2 a window of one whole chunk would be the full history), with the
 * TP sum kept. At the original's inputs (decay ~e^-2.5 a token) this
 * passed; at this problem's (dt_bias U(-10, -2), median decay 0.987)
 * the last CP rank is off by >= 118 u*amax in bf16, 950 in fp16, 7.8e6
 * in fp32 at every W from 2 to 8 (simulated, 2 seeds; allowed 1-2 and
 * 129-130).
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	for (int64_t p = 0; p < npos; p++) {
/* pkb-with */
	for (int64_t p = own > 32 ? own - 32 : 0; p < npos; p++) {
/* pkb-end */
