/*
 * 048_fsdp_and_tp, known-bad: the cheapest gather of W3, a flat
 * all-gather. The FSDP peers' W3 tiles (Fl, Dl) are laid end to end, as
 * all_gather_into_tensor (a cat along dim 0) leaves them, and read as the
 * (Fl, D) matrix, instead of side by side (the original's cat along dim 1).
 * Only row 0 of W3 keeps its first Dl columns in place: y is off by its own
 * size (host simulation: >= 350 terms of tolerance at W = 2, 4, 8, 9).
 * pkb-mutant-of: ok_symm_mesh.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
				w3full[(k / dl) * dl * nf + f * dl + k % dl] = src[i];
/* pkb-with */
				w3full[f * tile + k] = src[i];
/* pkb-end */
