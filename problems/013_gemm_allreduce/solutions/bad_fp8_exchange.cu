/*
 * 013_gemm_allreduce, known-bad: exchanges the partial products in fp8 (e4m3,
 * unscaled: |C_r| stays below its 448 maximum) to cut the traffic by 2x
 * against bf16 -- the cheap shortcut for a communication-bound all-reduce.
 * Here the partials stay fp32 in symmetric memory and are rounded through
 * e4m3 where they are read, which gives the same numbers. The partials
 * carry a relative error of ~2.7% rms; the element bounds catch some
 * elements at W = 2 and 4 but none at W = 8, where only the whole-output
 * (l2) bound fails it, by 1.15x (bf16, simulated on the host: l2 error
 * 0.027 against a bound of 0.0234; 1.5x at W = 4, 2x at W = 2).
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_fp32_partials.cu
 */

/* pkb-replace */
#include <cuda_fp16.h>
/* pkb-with */
#include <cuda_fp16.h>
#include <cuda_fp8.h>
/* pkb-end */

/* pkb-replace */
			acc += part[w][e];
/* pkb-with */
			acc += float(__nv_fp8_e4m3(part[w][e]));
/* pkb-end */
