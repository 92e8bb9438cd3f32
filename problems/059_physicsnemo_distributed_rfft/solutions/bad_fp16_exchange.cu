/*
 * 059_physicsnemo_distributed_rfft, known-bad: ok_symm_pull with the
 * intermediate spectrum rounded to fp16 on its way through the transpose --
 * what an exchange in half the bytes delivers (the values, ~32 N(0, 1)
 * before the 1/sqrt(H) scale at H = 1024, fit fp16's range). fp16 keeps 11
 * significant bits: simulated on the host at 1024 x 1024, the result is off
 * by l2 3500u (limit 12.8u) and the worst element by 94x its bound.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
				tile[k][tx] = src[c * h + r];
/* pkb-with */
			{
				cufftComplex v = src[c * h + r];
				float2 q = __half22float2(__float22half2_rn(make_float2(v.x, v.y)));
				tile[k][tx] = make_cuComplex(q.x, q.y);
			}
/* pkb-end */
