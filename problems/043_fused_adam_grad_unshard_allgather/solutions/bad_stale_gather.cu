/*
 * 043_fused_adam_grad_unshard_allgather, known-bad: the unshard is issued
 * on the master weights as they were before the optimizer step (the
 * prefetch-too-early bug of overlapping the all-gather with the step):
 * every element is off by the whole update, 5e-4..1e-3, which bf16 hides
 * under |w| >= ~0.25 but not near zero (and fp32 nowhere).
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		mine[i] = pkb_from_float<T>(pkb_to_float(w[i]) + u);
/* pkb-with */
		mine[i] = w[i];
		(void)u;
/* pkb-end */
