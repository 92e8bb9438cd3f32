/*
 * 071_hyena_conv1d_boundary_exchange, known-bad: ok_symm_halo treating the
 * chain's end like a plain sequence split: rank W-1 pads its second half
 * (chunk W) with zeros instead of its own first half's tail (chunk W-1,
 * which precedes it in the zigzag layout). Only rank W-1's output is wrong,
 * in the first 6 samples of its second half.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_halo.cu
 */

/* pkb-replace */
			v = pkb_to_float(x[(c0 + c) * len + chunk - PAD + k]);
/* pkb-with */
			v = 0.f;
/* pkb-end */
