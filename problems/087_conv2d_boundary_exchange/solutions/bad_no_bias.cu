/*
 * 087_conv2d_boundary_exchange, known-bad: ok_halo_gemm without the bias.
 * The bias is N(0, 1) and the outputs ~N(0, 9C) (std 107 at C = 1280): it
 * is below an ulp of most bf16 outputs, the cheapest term to drop. The
 * tolerance allows u * amax (~2.4 at bf16) beyond one ulp, so the channels
 * whose |bias| exceeds ~2.7 fail (simulated: 0.5% of the elements at bf16,
 * about half at fp16 and fp32).
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_halo_gemm.cu
 */

/* pkb-replace */
			tile[k][tx] = acc[(p / wd * (wd + 2) + p % wd) * kout + ko] +
				      pkb_to_float(bias[ko]);
/* pkb-with */
			tile[k][tx] = acc[(p / wd * (wd + 2) + p % wd) * kout + ko];
/* pkb-end */
