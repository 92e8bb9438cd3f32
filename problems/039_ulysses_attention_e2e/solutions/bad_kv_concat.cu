/*
 * 039_ulysses_attention_e2e, known-bad: k and v concatenated (k_0..k_7,
 * v_0..v_7) instead of stacked per head before the split into (k, v)
 * pairs, so group j's "pairs" are (k_{2a}, k_{2a+1}) for the low groups and
 * (v_{2a-8}, v_{2a-7}) for the high ones. Wrong at every W. Otherwise
 * identical to ok_local.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_local.cu
 */

/* pkb-replace */
			const T *k = row + HID + (first + a) * HD;
/* pkb-with */
			const T *k = row + HID + 2 * (first + a) * HD;   /* BUG: k|v concatenated */
/* pkb-end */

/* pkb-replace */
				const T *v = row + 2 * HID + (first + a) * HD;
/* pkb-with */
				const T *v = row + HID + (2 * (first + a) + 1) * HD;
/* pkb-end */
