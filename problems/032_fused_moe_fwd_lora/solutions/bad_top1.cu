/*
 * 032_fused_moe_fwd_lora, known-bad: only the first choice counts (a top-1
 * combine): out = T(y_0 w_0), the second expert's T(y_1 w_1) dropped --
 * half the traffic and half the expert work of a real dispatch. The
 * router's softmax is sharp (logits ~ N(0, N)), so w_1 is small for most
 * tokens, but not for those whose two best logits are close.
 * pkb-mutant-of: ok_symm_weights.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		out[i] = pkb_from_float<T>(a + b);
/* pkb-with */
		out[i] = pkb_from_float<T>(a);   /* the bug: the second expert dropped */
		(void)b;
/* pkb-end */
