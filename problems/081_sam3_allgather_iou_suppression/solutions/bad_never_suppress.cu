/*
 * 081_sam3_allgather_iou_suppression, known-bad: the cheapest shortcut, no
 * suppression at all -- right for the original's inputs, whose masks never
 * reach IoU 0.7. Here same-phase masks overlap from IoU ~0.5 to ~0.99:
 * at W = 4 (trial 0 layout, 7 objects) about 3.6 objects a trial must be
 * suppressed (simulated over 60 draws, never none); at W = 2 none in ~28%
 * of the trials, so it slips through an eval of 5 trials with probability
 * 0.28^5 = 0.2%.
 * pkb-mutant-of: ok_symm_bits.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	sup[x] = s;
/* pkb-with */
	sup[x] = s && false;
/* pkb-end */
