/*
 * silu_mul.cuh -- the middle of the experts' SwiGLU MLP that the EP MoE
 * references run between their projections, h = T(T(silu(gate)) * up):
 * moe_fused.cuh's (031; 032 adds its LoRA terms in a kernel of its own)
 * and moe_ep_reference.cuh's (049-051).
 */
#ifndef PKB_SILU_MUL_CUH
#define PKB_SILU_MUL_CUH

#include <math.h>
#include <stdint.h>
#include "pkb_device.cuh"   /* defines: pkb_to_float, pkb_from_float */

#define SILU_THREADS 256   /* the block size silu_mul is launched with */

/* h = T(T(silu(gate)) * up), silu(v) = v / (1 + e^-v) in fp32 */
template <typename T>
__global__ void silu_mul(const T *gate, const T *up, T *h, int64_t count)
{
	for (int64_t i = blockIdx.x * (int64_t)SILU_THREADS + threadIdx.x; i < count;
	     i += (int64_t)gridDim.x * SILU_THREADS) {
		float g = pkb_to_float(gate[i]);
		float s = pkb_to_float(pkb_from_float<T>(g / (1.0f + expf(-g))));
		h[i] = pkb_from_float<T>(s * pkb_to_float(up[i]));
	}
}

#endif /* PKB_SILU_MUL_CUH */
