/*
 * 001_allreduce, known-bad (issue 44, lower precision inside the tolerance):
 * at fp32, every term is carried in bf16 instead of fp32, as a transport of
 * half the bytes would be (KernelBench issue 155: an fp16 downcast scored
 * 11x). Not the computation asked for: host simulation (N(0, 1) terms) puts
 * nearly every element over its bound and the l2 error at 4600x-8000x the
 * limit at W = 2-8. Otherwise identical to ok_oneshot_pull.cu.
 * pkb-expect: mismatch
 * pkb-args: --dtype fp32
 * pkb-mutant-of: ok_oneshot_pull.cu
 */

/* pkb-replace */
#include "pkb_device.cuh"
/* pkb-with */
#include "pkb_device.cuh"

/* the term as bf16 would carry it (round to nearest even) */
__device__ __forceinline__ float narrow(float x) { return __bfloat162float(__float2bfloat16(x)); }
/* pkb-end */

/* pkb-replace */
					acc[k] += pkb_to_float(e[k]);
/* pkb-with */
					acc[k] += narrow(pkb_to_float(e[k]));
/* pkb-end */

/* pkb-replace */
				acc += pkb_to_float(stage[r][i]);
/* pkb-with */
				acc += narrow(pkb_to_float(stage[r][i]));
/* pkb-end */
