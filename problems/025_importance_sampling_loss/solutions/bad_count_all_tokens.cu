/*
 * 025_importance_sampling_loss, known-bad: the cheapest shortcut, Ng = W M
 * -- every token counted as valid, as the original's labels (which never
 * hold ignore_index) would allow. A quarter of the labels are ignore_index
 * here, so the divisions by Ng make ratio_mean, k3 and entropy ~25% low
 * (and loss with them), against rtol = 2W u_T (1.6% at W = 2, 6.3% at
 * W = 8 in bf16).
 * pkb-mutant-of: ok_symm_scalars.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	terms[S_COUNT * m + t] = valid ? 1.f : 0.f;
/* pkb-with */
	terms[S_COUNT * m + t] = 1.f;
/* pkb-end */
