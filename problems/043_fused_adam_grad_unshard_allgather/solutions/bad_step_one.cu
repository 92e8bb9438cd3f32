/*
 * 043_fused_adam_grad_unshard_allgather, known-bad: the bias correction of
 * a first step (step = 1) whatever step the trial passes. Trial 0 passes;
 * from trial 1 on the update is too large: with zero moments its size is
 * lr * (1-b1)/bc1 * sqrt(bc2/(1-b2)), 0.74 lr at step 2 and 0.51 lr at
 * step 7, but lr here. Off by 2.6e-4..4.9e-4: caught near zero in bf16,
 * everywhere in fp32 -- why the step follows the trial.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	double t = (double)*step;
/* pkb-with */
	double t = 1.0;
	(void)step;
/* pkb-end */
