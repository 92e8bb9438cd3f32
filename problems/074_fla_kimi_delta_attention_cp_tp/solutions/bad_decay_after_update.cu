/*
 * 074_fla_kimi_delta_attention_cp_tp, known-bad: the decay applied after
 * the delta update instead of before it, S = diag(dec)(S + k u^T) with u
 * from the undecayed S: an easy misreading of the step order (the new
 * token's write is decayed too, and k^T S sees last step's state before
 * its decay). Wrong at every W: >= 20 u*amax in bf16, 167 in fp16
 * (simulated, dt_bias U(-10, -2): the fast-decaying channels show it).
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		float k[KPL], proj = 0;
#pragma unroll
		for (int e = 0; e < KPL / 4; e++) {
			float4 kk = k4[e], dd = d4[e];
			k[4 * e] = kk.x; k[4 * e + 1] = kk.y; k[4 * e + 2] = kk.z; k[4 * e + 3] = kk.w;
			s[4 * e] *= dd.x; s[4 * e + 1] *= dd.y; s[4 * e + 2] *= dd.z; s[4 * e + 3] *= dd.w;
		}
/* pkb-with */
		float k[KPL], dc[KPL], proj = 0;
#pragma unroll
		for (int e = 0; e < KPL / 4; e++) {
			float4 kk = k4[e], dd = d4[e];
			k[4 * e] = kk.x; k[4 * e + 1] = kk.y; k[4 * e + 2] = kk.z; k[4 * e + 3] = kk.w;
			dc[4 * e] = dd.x; dc[4 * e + 1] = dd.y; dc[4 * e + 2] = dd.z; dc[4 * e + 3] = dd.w;
		}
/* pkb-end */

/* pkb-replace */
			s[e] = fmaf(k[e], u, s[e]);
/* pkb-with */
			s[e] = fmaf(k[e], u, s[e]) * dc[e];
/* pkb-end */
