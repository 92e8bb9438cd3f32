/*
 * cat_columns.cuh -- torch.cat(dim=1) of the W row blocks an NCCL gather
 * stacks: 012's gathered A, 014's gathered C and 015's received X are
 * (W, rows, cols) where the problem wants (rows, W*cols). No leading
 * dimension can express that, hence one copy pass (rows*W*cols elements),
 * in the widest unit the row and both buffers allow. Included by the
 * three reference.cu files after pkb_ref.cuh.
 */
#ifndef PKB_CAT_COLUMNS_CUH
#define PKB_CAT_COLUMNS_CUH

#include <stdint.h>
#include <cuda_runtime.h>

/* dst (rows, W*cols)[i, w*cols + j] = src (W, rows, cols)[w, i, j], in units
 * U of sizeof(U) bytes (cols counted in units). */
template <typename U>
__global__ void cat_columns(const U *src, U *dst, int64_t rows, int64_t cols, int world)
{
	int64_t total = (int64_t)world * rows * cols;
	for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
	     t += (int64_t)gridDim.x * blockDim.x) {
		int64_t j = t % cols, i = (t / cols) % rows, w = t / (cols * rows);
		dst[(i * world + w) * cols + j] = src[t];
	}
}

/* The widest unit (16, 8, 4 or 2 bytes) that divides a row of one block and
 * both base addresses. */
static inline void launch_cat(const void *src, void *dst, int64_t rows, int64_t row_bytes,
			      int world, cudaStream_t st)
{
	uintptr_t al = (uintptr_t)src | (uintptr_t)dst | (uintptr_t)row_bytes;
	int64_t units = world * rows * row_bytes;
	int unit = al % 16 == 0 ? 16 : al % 8 == 0 ? 8 : al % 4 == 0 ? 4 : 2;
	units /= unit;
	int blocks = (int)((units + 255) / 256);
	blocks = blocks < 1 ? 1 : blocks > 2048 ? 2048 : blocks;
	switch (unit) {
	case 16: cat_columns<int4><<<blocks, 256, 0, st>>>((const int4 *)src, (int4 *)dst,
				rows, row_bytes / 16, world); break;
	case 8: cat_columns<int2><<<blocks, 256, 0, st>>>((const int2 *)src, (int2 *)dst,
				rows, row_bytes / 8, world); break;
	case 4: cat_columns<int><<<blocks, 256, 0, st>>>((const int *)src, (int *)dst,
				rows, row_bytes / 4, world); break;
	default: cat_columns<short><<<blocks, 256, 0, st>>>((const short *)src, (short *)dst,
				rows, row_bytes / 2, world); break;
	}
}

#endif /* PKB_CAT_COLUMNS_CUH */
