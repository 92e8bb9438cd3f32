/*
 * swap_blocks.cuh -- the block transpose around an all-to-all that the
 * Ulysses references (036, 037, 038, 039) and 077 run alike: a (P, Q)
 * grid of blocks of 16-byte units becomes (Q, P), so that what goes to
 * one rank is contiguous before the exchange, or what came from each rank
 * lands in place after it. Included by the five reference.cu files after
 * pkb_ref.cuh.
 */
#ifndef PKB_SWAP_BLOCKS_CUH
#define PKB_SWAP_BLOCKS_CUH

#include <stdint.h>
#include <cuda_runtime.h>

#define SWAP_THREADS 256

/* dst (Q, P) blocks = src (P, Q) blocks transposed, blocks of blk units */
__global__ void swap_blocks(const int4 *src, int4 *dst, int64_t p_n, int64_t q_n, int64_t blk)
{
	int64_t n = p_n * q_n * blk;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t j = o / blk, c = o - j * blk;
		int64_t q = j / p_n, p = j - q * p_n;
		dst[o] = src[(p * q_n + q) * blk + c];
	}
}

/* swap_blocks on the harness stream: 0, or 1 after logging */
static inline int swap(pkb_ctx *ctx, const void *src, void *dst, int64_t p_n, int64_t q_n,
		       int64_t blk)
{
	int64_t n = p_n * q_n * blk;
	swap_blocks<<<pkb_ref_blocks(n, SWAP_THREADS, 4096), SWAP_THREADS, 0,
		      (cudaStream_t)ctx->stream>>>((const int4 *)src, (int4 *)dst, p_n, q_n, blk);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

#endif /* PKB_SWAP_BLOCKS_CUH */
