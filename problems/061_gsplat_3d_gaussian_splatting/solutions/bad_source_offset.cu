/*
 * 061_gsplat_3d_gaussian_splatting, known-bad: gaussian_ids offset by the
 * SOURCE rank (s n + local index), the globally unique id one would expect.
 * The original adds the receiver's offset (r n + local index: its camera
 * offsets and Gaussian offsets are both indexed by the destination), so
 * ids of different sources collide; every row from a source other than
 * this rank has the wrong id.
 * pkb-mutant-of: ok_symm_push.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		gid[i] = (int64_t)rank * n + o.g;
/* pkb-with */
		gid[i] = (int64_t)s * n + o.g;
/* pkb-end */
