/*
 * block_sum.cuh -- the block reduction of 021's, 022's and 086's sums of
 * squares: each warp's values summed by shuffles, then thread 0 adds the
 * warps' sums in warp order. Included by the three reference.cu files.
 */
#ifndef PKB_BLOCK_SUM_CUH
#define PKB_BLOCK_SUM_CUH

/* thread 0's: the sum of every thread's acc over a block of NTHREADS
 * threads (other threads: 0); red: NTHREADS/32 floats of shared memory */
template <int NTHREADS>
__device__ __forceinline__ float block_sum(float acc, float *red)
{
	for (int o = 16; o > 0; o >>= 1)
		acc += __shfl_xor_sync(0xffffffffu, acc, o);
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = acc;
	__syncthreads();
	float s = 0.f;
	if (threadIdx.x == 0)
		for (int w = 0; w < NTHREADS / 32; w++)
			s += red[w];
	return s;
}

#endif /* PKB_BLOCK_SUM_CUH */
