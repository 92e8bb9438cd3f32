/*
 * 076_opensora_conv3d_allreduce, known-bad: ok_gemm_pull with the sum over
 * ranks replaced by this rank's own partial -- the convolution over its
 * Cin = 512/W input channels only, plus the bias. The barriers stay
 * (harmless); no peer data is used.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_gemm_pull.cu
 */

/* pkb-replace */
		for (int j = 0; j < comm.world; j++) {
			vec16<T> p = ((const vec16<T> *)stage[j])[v];
#pragma unroll
			for (int e = 0; e < V; e++)
				acc[e] += pkb_to_float(p.v[e]);
		}
/* pkb-with */
		vec16<T> p = ((const vec16<T> *)stage[comm.rank])[v];   /* the shortcut */
#pragma unroll
		for (int e = 0; e < V; e++)
			acc[e] += pkb_to_float(p.v[e]);
/* pkb-end */
