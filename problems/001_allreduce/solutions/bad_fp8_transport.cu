/*
 * 001_allreduce, known-bad (issue 44, lower precision inside the tolerance):
 * every term is carried in fp8 e4m3 (3 mantissa bits) instead of the bf16
 * it came in, as a transport of half the bytes would be (KernelBench issue
 * 155: an fp16 downcast scored 11x). Not the computation asked for; the
 * whole-output bound catches it: host simulation (N(0, 1) terms, the
 * reference's ring order) puts its l2 error at 1.97x the limit at W = 2,
 * 1.54x at W = 4 (3849 elements over their bound), 1.15x at W = 8.
 * Otherwise identical to ok_oneshot_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_oneshot_pull.cu
 */

/* pkb-replace */
#include "pkb_device.cuh"
/* pkb-with */
#include "pkb_device.cuh"
#include <cuda_fp8.h>

/* the term as fp8 e4m3 would carry it (round to nearest, saturating) */
__device__ __forceinline__ float narrow(float x) { return float(__nv_fp8_e4m3(x)); }
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
