/*
 * 059_physicsnemo_distributed_rfft, known-bad: ok_symm_pull that returns
 * only the real part of the spectrum (imaginary parts 0). The original
 * compared a.float() with b.float(), and .float() of a complex tensor drops
 * the imaginary part, so this passed there; pkb compares both components.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
		out[i] = make_cuComplex(v.x * scale, v.y * scale);
/* pkb-with */
		out[i] = make_cuComplex(v.x * scale, 0.f);
/* pkb-end */
