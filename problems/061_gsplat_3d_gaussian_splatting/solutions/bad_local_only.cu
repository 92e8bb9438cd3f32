/*
 * 061_gsplat_3d_gaussian_splatting, known-bad: only this rank's own
 * Gaussians. The rows the peers pushed for this camera are ignored (their
 * counts read as 0), so the output holds the local Gaussians visible in the
 * local camera: what a rank can compute without any exchange. The count is
 * about 1/W of the true one and every row after the first source's block
 * is off.
 * pkb-mutant-of: ok_symm_push.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
			int c = cnt[k];
/* pkb-with */
			int c = k == rank ? cnt[k] : 0;
/* pkb-end */
