/*
 * 040_ddp, known-bad: the cheapest shortcut. Only the parameters are
 * broadcast; each rank keeps its own exp_avg / exp_avg_sq, saving two thirds
 * of the broadcast. With the original's inputs (zero moments on every rank)
 * this passes; here every rank but 0 holds other moments than rank 0, and
 * its moments and parameters come out wrong.
 * pkb-mutant-of: ok_symm_oneshot.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
				((T *)sg.out[s])[i - sg.start[s]] = s0[i];
/* pkb-with */
				((T *)sg.out[s])[i - sg.start[s]] =
					s < 4 ? s0[i] : ((const T *)sg.in[s])[i - sg.start[s]];
/* pkb-end */
