/*
 * 049_moe_ep_balanced, known-bad: only the first choice counts (a top-1
 * combine): out = T(y_0 w_0), the second expert's T(y_1 w_1) dropped. The
 * router's softmax is sharp (logits ~ N(0, N)), so w_1 is small for most
 * tokens, but not for those whose two best logits are close.
 * pkb-mutant-of: ok_symm_weights.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		out[i] = k == 1 ? parts[i]
				: pkb_from_float<T>(pkb_to_float(parts[i]) + pkb_to_float(parts[mn + i]));
/* pkb-with */
		out[i] = parts[i];
		(void)k;
/* pkb-end */
