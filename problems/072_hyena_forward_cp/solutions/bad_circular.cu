/*
 * 072_hyena_forward_cp, known-bad: ok_symm_direct computing a circular
 * convolution of length L -- the FFT shortcut of transforming at length L
 * instead of the zero-padded 2L: the first K-1 = 4095 positions of the
 * sequence take the end of the sequence as their history instead of
 * zeros. Only the ranks holding positions below 4096 go wrong (chunks
 * 0-3: ranks 0-3, all of them at W <= 4), which fails the call.
 * Simulated (each channel at its own scale): 750-1053x the element bound
 * at bf16, 2e4x at fp32.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_direct.cu
 */

/* pkb-replace */
			if (q >= 0) {
				int o = owner(q, w, &s);
/* pkb-with */
			{   /* the shortcut: the history wraps around */
				int o = owner((q + len) % len, w, &s);
/* pkb-end */
