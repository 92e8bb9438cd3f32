/*
 * 081_sam3_allgather_iou_suppression, known-bad: local data only. Every
 * rank's rows of masks_global and scores_global are filled from this
 * rank's own stage (the rows of a rank with more objects than this one
 * read whatever lies beyond), so the gathered masks and scores are wrong
 * wherever another rank's objects belong, and the IoUs with them.
 * pkb-mutant-of: ok_symm_bits.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const T *src = stage[r];
/* pkb-with */
		const T *src = stage[comm.rank];
/* pkb-end */
