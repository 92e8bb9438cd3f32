/*
 * 087_conv2d_boundary_exchange, known-good: the halo rows pulled from the
 * neighbours over symmetric memory, the conv as nine shifted cuBLAS GEMMs
 * accumulated in fp32. No NCCL.
 *
 * xs (symmetric) holds the padded input channels-last: (lh+2) rows of
 * (128+2) positions of C channels, the two pad columns and the chain's end
 * rows zero (set once in init, never written), plus two spare positions.
 * With q = h (128+2) + w running over lh (128+2) "virtual" output positions
 * (two junk ones per row), tap (kh, kw) reads input position q + kh (128+2)
 * + kw: each tap is one GEMM whose B operand is xs shifted by that many
 * positions, no im2col.
 *   1. x (C, lh, 128) -> interior of xs (transposed per 32 x 32 tile);
 *      weight (K, C, 3, 3) viewed (K, 9C) -> wt (9C, K): tap t's (C, K)
 *      matrix is wt + t K with a row stride of 9K;
 *   2. halo: every block meets its copies on the other ranks (each rank's
 *      interior written), pulls its share of row lh of rank r-1 into row 0
 *      and of row 1 of rank r+1 into row lh+1, and meets them again (the
 *      next call may overwrite the interior);
 *   3. nine GEMMs (K, Q) += wt_t^T (K, C) xs_t (C, Q) into an fp32 (Q, K)
 *      accumulator: fp32 throughout, no rounding between taps;
 *   4. y[k][h][w] = round(acc[h (128+2) + w][k] + bias[k]): one rounding.
 *
 * Traffic: two rows of C 130 elements pulled (one per neighbour).
 */
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define TILE 32
#define THREADS 256            /* 1-d blocks: the barrier counts threadIdx.x */
#define HALO_BLOCKS 64

struct state {
	cublasHandle_t blas;
	pkb_symm xs;           /* ((lh+2) (wd+2) + 2) positions x C */
	void *wt;              /* (9C, K) */
	float *acc;            /* (lh (wd+2), K) */
	int64_t c, lh, wd;
};

/* interior of xs: xs[((h+1) (wd+2) + w+1) c + ci] = x[ci][h][w];
 * grid (P/TILE, C/TILE), P = lh wd */
template <typename T>
__global__ void __launch_bounds__(THREADS)
to_padded(const T *x, T *xs, int64_t c, int64_t lh, int64_t wd)
{
	__shared__ T tile[TILE][TILE + 1];
	int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
	int64_t p0 = (int64_t)blockIdx.x * TILE, c0 = (int64_t)blockIdx.y * TILE, np = lh * wd;
	for (int k = ty; k < TILE; k += THREADS / TILE) {
		int64_t ci = c0 + k, p = p0 + tx;
		if (ci < c && p < np)
			tile[k][tx] = x[ci * np + p];
	}
	__syncthreads();
	for (int k = ty; k < TILE; k += THREADS / TILE) {
		int64_t p = p0 + k, ci = c0 + tx;
		if (ci < c && p < np) {
			int64_t pos = (p / wd + 1) * (wd + 2) + p % wd + 1;
			xs[pos * c + ci] = tile[tx][k];
		}
	}
}

/* dst[j][i] = src[i][j] for a rows x cols src; grid (cols/TILE, rows/TILE) */
template <typename T>
__global__ void __launch_bounds__(THREADS)
transpose(const T *src, T *dst, int64_t rows, int64_t cols)
{
	__shared__ T tile[TILE][TILE + 1];
	int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
	int64_t c0 = (int64_t)blockIdx.x * TILE, r0 = (int64_t)blockIdx.y * TILE;
	for (int k = ty; k < TILE; k += THREADS / TILE) {
		int64_t r = r0 + k, cc = c0 + tx;
		if (r < rows && cc < cols)
			tile[k][tx] = src[r * cols + cc];
	}
	__syncthreads();
	for (int k = ty; k < TILE; k += THREADS / TILE) {
		int64_t cc = c0 + k, r = r0 + tx;
		if (r < rows && cc < cols)
			dst[cc * rows + r] = tile[tx][k];
	}
}

/*
 * Rows 0 and lh+1 of this rank's xs from its neighbours' rows lh and 1, in
 * 16-byte units (a row of (wd+2) C elements is a multiple of 16 bytes).
 * The ends of the chain keep their zero rows.
 */
__global__ void __launch_bounds__(THREADS)
halo(pkb_dev_comm comm, void *const *xs, int64_t row_units, int64_t lh)
{
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	uint4 *mine = (uint4 *)xs[comm.rank];
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < row_units;
	     i += (int64_t)gridDim.x * THREADS) {
		if (comm.rank > 0)
			mine[i] = ((const uint4 *)xs[comm.rank - 1])[lh * row_units + i];
		if (comm.rank < comm.world - 1)
			mine[(lh + 1) * row_units + i] = ((const uint4 *)xs[comm.rank + 1])[row_units + i];
	}
	pkb_barrier_block(comm, blockIdx.x);   /* the neighbours are done reading ours */
}

/* y[k][p] = round(acc[q(p)][k] + bias[k]), q = p / wd (wd+2) + p % wd;
 * grid (K/TILE, P/TILE) */
template <typename T>
__global__ void __launch_bounds__(THREADS)
finish(const float *acc, const T *bias, T *y, int64_t kout, int64_t lh, int64_t wd)
{
	__shared__ float tile[TILE][TILE + 1];
	int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
	int64_t k0 = (int64_t)blockIdx.x * TILE, p0 = (int64_t)blockIdx.y * TILE, np = lh * wd;
	for (int k = ty; k < TILE; k += THREADS / TILE) {
		int64_t p = p0 + k, ko = k0 + tx;
		if (p < np && ko < kout)
			tile[k][tx] = acc[(p / wd * (wd + 2) + p % wd) * kout + ko] +
				      pkb_to_float(bias[ko]);
	}
	__syncthreads();
	for (int k = ty; k < TILE; k += THREADS / TILE) {
		int64_t ko = k0 + k, p = p0 + tx;
		if (p < np && ko < kout)
			y[ko * np + p] = pkb_from_float<T>(tile[tx][k]);
	}
}

static cudaDataType_t cuda_type(pkb_dtype t)
{
	return t == PKB_BF16 ? CUDA_R_16BF : t == PKB_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	pkb_dtype t = ctx->in[0].dtype;
	size_t e = pkb_dtype_size(t);
	s->c = ctx->in[0].shape[1];
	s->lh = ctx->in[0].shape[2];
	s->wd = ctx->in[0].shape[3];
	if ((t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32) || (s->c * e) % 16 ||
	    ctx->in[1].shape[0] != s->c)
		return 1;
	size_t xs_bytes = (size_t)((s->lh + 2) * (s->wd + 2) + 2) * s->c * e;
	if (cudaMalloc(&s->wt, ctx->in[1].bytes) != cudaSuccess ||
	    cudaMalloc(&s->acc, (size_t)s->lh * (s->wd + 2) * s->c * sizeof(float)) != cudaSuccess ||
	    cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS)
		return 1;
	if (ctx->svc->symm_alloc(ctx, xs_bytes, &s->xs))
		return 1;
	/* pad columns, end rows and spare positions: zero for good */
	if (cudaMemset(s->xs.local, 0, xs_bytes) != cudaSuccess ||
	    cudaDeviceSynchronize() != cudaSuccess)
		return 1;
	return ctx->svc->host_barrier(ctx);   /* every xs zeroed before any call pulls */
}

template <typename T>
static int run_t(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t c = s->c, lh = s->lh, wd = s->wd, np = lh * wd, q = lh * (wd + 2);
	T *xs = (T *)s->xs.local;
	cudaDataType_t ct = cuda_type(ctx->in[0].dtype);
	const float one = 1.f, zero = 0.f;

	to_padded<T><<<dim3((unsigned)((np + TILE - 1) / TILE), (unsigned)((c + TILE - 1) / TILE)),
		       THREADS, 0, st>>>((const T *)ctx->in[0].data, xs, c, lh, wd);
	transpose<T><<<dim3((unsigned)((9 * c + TILE - 1) / TILE), (unsigned)((c + TILE - 1) / TILE)),
		       THREADS, 0, st>>>((const T *)ctx->in[1].data, (T *)s->wt, c, 9 * c);
	halo<<<HALO_BLOCKS, THREADS, 0, st>>>(ctx->dev, s->xs.peers_dev,
					      (wd + 2) * c * (int64_t)sizeof(T) / 16, lh);
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS)
		return 1;
	for (int tap = 0; tap < 9; tap++) {
		int64_t off = (tap / 3) * (wd + 2) + tap % 3;
		if (cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)c, (int)q, (int)c, &one,
				 (const T *)s->wt + tap * c, ct, (int)(9 * c), xs + off * c, ct,
				 (int)c, tap ? &one : &zero, s->acc, CUDA_R_32F, (int)c,
				 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
			return 1;
	}
	finish<T><<<dim3((unsigned)((c + TILE - 1) / TILE), (unsigned)((np + TILE - 1) / TILE)),
		    THREADS, 0, st>>>(s->acc, (const T *)ctx->in[2].data, (T *)ctx->out[0].data, c,
				      lh, wd);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return run_t<__nv_bfloat16>(ctx, s);
	case PKB_FP16: return run_t<__half>(ctx, s);
	case PKB_FP32: return run_t<float>(ctx, s);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->blas)
		cublasDestroy(s->blas);
	cudaFree(s->wt);
	cudaFree(s->acc);
	free(s);
	ctx->user = NULL;
	return 0;
}
