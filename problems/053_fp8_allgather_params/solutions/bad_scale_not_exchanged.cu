/*
 * 053_fp8_allgather_params, known-bad: the fp8 codes cross, the scales do
 * not. Every peer's codes are dequantized with this rank's own delayed
 * scale, as if one scale served the whole FSDP group. Each rank's scale is
 * its own amax / 448 and the ranks' amax differ by ~10% (the max of 4096
 * normals has std ~0.3 at ~3.6), so every peer slot is off by that ratio:
 * far past the l2 bound of 2^-7.
 * pkb-mutant-of: ok_symm_codes.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		float sj = *(const float *)(src + soff);
/* pkb-with */
		float sj = s;
/* pkb-end */
