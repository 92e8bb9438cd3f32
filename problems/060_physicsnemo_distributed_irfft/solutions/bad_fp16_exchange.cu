/*
 * 060_physicsnemo_distributed_irfft, known-bad: ok_symm_pull with the
 * row-transformed spectrum rounded to fp16 on its way through the
 * transpose -- what an exchange in half the bytes delivers (the values,
 * ~38 N(0, 1) before the 1/sqrt(Wd) scale, fit fp16's range). Simulated on
 * the host: l2 3500u (limit 12.8u), the worst element 81x its bound.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
				tile[k][tx] = src[i * wd + c];
/* pkb-with */
			{
				cufftComplex e = src[i * wd + c];
				float2 q = __half22float2(__float22half2_rn(make_float2(e.x, e.y)));
				tile[k][tx] = make_cuComplex(q.x, q.y);
			}
/* pkb-end */
