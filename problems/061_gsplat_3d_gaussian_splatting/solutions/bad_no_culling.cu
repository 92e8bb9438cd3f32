/*
 * 061_gsplat_3d_gaussian_splatting, known-bad: no culling. Every pair is
 * packed, as if nothing were behind the near plane or off the image: with
 * the original's inputs (every Gaussian in front of identical cameras) this
 * is the right answer, and it passes there. Here about a third of the pairs
 * are culled: the count reads W n instead of ~0.68 W n and the rows of
 * culled Gaussians appear among the visible ones.
 * pkb-mutant-of: ok_symm_push.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	bool vis = tz > pr.near && tz < pr.far && mx + rx > 0 && mx - rx < pr.w &&
		   my + ry > 0 && my - ry < pr.h;
/* pkb-with */
	bool vis = true;
/* pkb-end */
