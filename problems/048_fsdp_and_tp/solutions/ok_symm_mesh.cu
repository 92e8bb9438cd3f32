/*
 * 048_fsdp_and_tp, known-good: both collectives over symmetric memory,
 * cuBLAS for the GEMMs.
 *
 *   1. gather: each block copies its range of this rank's three tiles into
 *      the symmetric `tiles` buffer, meets the same block on every rank and
 *      pulls that range of each FSDP peer's tiles (ranks f*n_tp + tp) into
 *      place: W1 and W2 side by side as one (D, 2 Fl) matrix, so that x W1
 *      and x W2 are one GEMM, and W3's tiles as column blocks of (Fl, D).
 *   2. x12 = x [W1 | W2] (T), z = T(T(silu(x1)) * x2), y_tp = z W3 written
 *      in fp32, unrounded, into the symmetric `part` buffer.
 *   3. TP reduce: each block meets its peers and sums its range of y over
 *      the TP group in fp32 (group order), rounding once.
 * Each kernel's barrier also says that every peer finished the other
 * kernel of the call before, so neither buffer is overwritten while a peer
 * reads it: no trailing barrier.
 *
 * Traffic: the FSDP peers' tiles as in the minimum; the TP partials in fp32
 * (n_tp - 1) Bf D 4 bytes, one-shot. Not tuned.
 */
#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define BLOCKS 64    /* per exchange kernel; slots [0, 64) and [64, 128) */

struct state {
	cublasHandle_t blas;
	int n_tp;
	int64_t bf, d, dl, fl;
	pkb_symm tiles;   /* [3][Dl * Fl] of T: this rank's W1, W2, W3 tiles */
	pkb_symm part;    /* [Bf, D] fp32: this rank's y_tp */
	void *w12;        /* [D, 2 Fl] */
	void *w3;         /* [Fl, D] */
	void *x12;        /* [Bf, 2 Fl] */
	void *z;          /* [Bf, Fl] */
};

__device__ __forceinline__ void block_range(int64_t n, int64_t *e0, int64_t *e1)
{
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	*e0 = min(n, per * blockIdx.x);
	*e1 = min(n, *e0 + per);
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
gather(pkb_dev_comm comm, const T *w1, const T *w2, const T *w3, T *const *tiles, T *w12,
       T *w3full, int n_tp, int64_t dl, int64_t fl)
{
	int64_t tile = dl * fl, e0, e1;
	int nf = comm.world / n_tp, tp = comm.rank % n_tp;
	block_range(3 * tile, &e0, &e1);
	T *mine = tiles[comm.rank];
	for (int64_t i = e0 + threadIdx.x; i < e1; i += THREADS)
		mine[i] = i < tile ? w1[i] : i < 2 * tile ? w2[i - tile] : w3[i - 2 * tile];
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int f = 0; f < nf; f++) {
		const T *src = tiles[f * n_tp + tp];
		for (int64_t i = e0 + threadIdx.x; i < e1; i += THREADS) {
			int64_t k = i % tile;
			if (i < 2 * tile) {
				/* W1 or W2 tile f: rows f*Dl.. of the left or right half */
				int64_t r = f * dl + k / fl, c = k % fl + (i >= tile ? fl : 0);
				w12[r * 2 * fl + c] = src[i];
			} else {
				/* W3 tile f: columns f*Dl.. of (Fl, D) */
				w3full[(k / dl) * dl * nf + f * dl + k % dl] = src[i];
			}
		}
	}
}

template <typename T>
__global__ void swiglu(const T *x12, T *z, int64_t rows, int64_t fl)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < rows * fl;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t r = i / fl, c = i % fl;
		float a = pkb_to_float(x12[r * 2 * fl + c]);
		float s = pkb_to_float(pkb_from_float<T>(a / (1.0f + expf(-a))));
		z[i] = pkb_from_float<T>(s * pkb_to_float(x12[r * 2 * fl + fl + c]));
	}
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
tp_reduce(pkb_dev_comm comm, float *const *parts, T *y, int n_tp, int64_t n)
{
	int64_t e0, e1;
	block_range(n, &e0, &e1);
	int first = comm.rank / n_tp * n_tp;
	if (!pkb_barrier_block(comm, BLOCKS + blockIdx.x))
		return;
	for (int64_t i = e0 + threadIdx.x; i < e1; i += THREADS) {
		float acc = 0.f;
		for (int t = 0; t < n_tp; t++)
			acc += parts[first + t][i];
		y[i] = pkb_from_float<T>(acc);
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	if (t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->n_tp = (int)pkb_param_get(ctx, "n_tp", 1);
	s->bf = ctx->in[0].shape[0];
	s->d = ctx->in[0].shape[1];
	s->dl = ctx->in[1].shape[0];
	s->fl = ctx->in[1].shape[1];
	if (ctx->world > THREADS || s->n_tp < 1 || ctx->world % s->n_tp)
		return 1;
	size_t e = pkb_dtype_size(t);
	if (cudaMalloc(&s->w12, (size_t)(2 * s->d * s->fl) * e) != cudaSuccess ||
	    cudaMalloc(&s->w3, (size_t)(s->d * s->fl) * e) != cudaSuccess ||
	    cudaMalloc(&s->x12, (size_t)(2 * s->bf * s->fl) * e) != cudaSuccess ||
	    cudaMalloc(&s->z, (size_t)(s->bf * s->fl) * e) != cudaSuccess)
		return 1;
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS)
		return 1;
	if (ctx->svc->symm_alloc(ctx, (size_t)(3 * s->dl * s->fl) * e, &s->tiles) != 0)
		return 1;
	return ctx->svc->symm_alloc(ctx, (size_t)(s->bf * s->d) * sizeof(float), &s->part);
}

/* row-major C (m, n) = A (m, k) B (k, n), C of type ct: the column-major
 * C^T = B^T A^T, operands swapped */
static int gemm(cublasHandle_t h, int64_t m, int64_t n, int64_t k, const void *a,
		const void *b, void *c, cudaDataType t, cudaDataType ct)
{
	const float one = 1.0f, zero = 0.0f;
	return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, t,
			    (int)n, a, t, (int)k, &zero, c, ct, (int)n, CUBLAS_COMPUTE_32F,
			    CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;
}

template <typename T>
static int forward(pkb_ctx *ctx, struct state *s, cudaDataType t)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t bf = s->bf, d = s->d, fl = s->fl;

	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS)
		return 1;
	gather<T><<<BLOCKS, THREADS, 0, st>>>(ctx->dev, (const T *)ctx->in[1].data,
		(const T *)ctx->in[2].data, (const T *)ctx->in[3].data,
		(T *const *)s->tiles.peers_dev, (T *)s->w12, (T *)s->w3, s->n_tp, s->dl, fl);
	if (gemm(s->blas, bf, 2 * fl, d, ctx->in[0].data, s->w12, s->x12, t, t))
		return 1;
	swiglu<T><<<256, THREADS, 0, st>>>((const T *)s->x12, (T *)s->z, bf, fl);
	if (gemm(s->blas, bf, d, fl, s->z, s->w3, s->part.local, t, CUDA_R_32F))
		return 1;
	tp_reduce<T><<<BLOCKS, THREADS, 0, st>>>(ctx->dev, (float *const *)s->part.peers_dev,
		(T *)ctx->out[0].data, s->n_tp, bf * d);
	return cudaGetLastError() != cudaSuccess;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return forward<__nv_bfloat16>(ctx, s, CUDA_R_16BF);
	case PKB_FP16: return forward<__half>(ctx, s, CUDA_R_16F);
	case PKB_FP32: return forward<float>(ctx, s, CUDA_R_32F);
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
	cudaFree(s->w12);
	cudaFree(s->w3);
	cudaFree(s->x12);
	cudaFree(s->z);
	free(s);
	ctx->user = NULL;
	return 0;
}
