/*
 * 039_ulysses_attention_e2e, known-good: the original's exchanges, as pulls
 * over symmetric memory, with the original's roundings.
 *   1. qkv = hidden @ w_qkv^T (cuBLAS) straight into this rank's symmetric
 *      staging; all ranks meet (pkb_barrier_block);
 *   2. one thread per (position of any rank, head g of this rank's group
 *      r): it reads q, k, v of heads [rG, rG+G) of that position from the
 *      owner's staging over NVLink (the first all-to-all, done on the
 *      loads), computes the G x G attention as the original rounds it
 *      (scores rounded, * 1/8, fp32 softmax rounded, P v rounded) and
 *      writes it to slot `owner` of this rank's result staging;
 *   3. all meet; each rank pulls its positions' results of group j from
 *      rank j (the second all-to-all) into att (tok, 512), heads in order;
 *      all meet again, so the next call does not overwrite a staging a
 *      slower peer still reads;
 *   4. out = att @ w_o^T (cuBLAS).
 * The exchanges change no value (ok_local.cu needs none); this one checks
 * the original's data path. Not tuned.
 */
#include <math.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define HEADS 8
#define HD 64
#define HID (HEADS * HD)

struct state {
	cublasHandle_t blas;
	pkb_symm stage;   /* qkv (tok, 1536) | results (W, tok, G*64) */
	void *att;        /* (tok, 512) */
};

__global__ void barrier(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

/* results[j][p][g] = the attention of head rG + g of rank j's position p */
template <typename T>
__global__ void head_attention(pkb_dev_comm comm, void *const *stage, size_t res_off,
			       int64_t tok, int g_n)
{
	const int me = comm.rank;
	int64_t n = comm.world * tok * g_n;
	T *res = (T *)((char *)stage[me] + res_off);
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t x = i / g_n, j = x / tok, p = x - j * tok;
		int g = (int)(i - x * g_n);
		const T *row = (const T *)stage[j] + p * 3 * HID;   /* owner j's qkv */
		const T *q = row + (me * g_n + g) * HD;
		float s[HEADS], m = -INFINITY, l = 0;
		for (int h = 0; h < g_n; h++) {
			const T *k = row + HID + (me * g_n + h) * HD;
			float acc = 0;
			for (int d = 0; d < HD; d++)
				acc += pkb_to_float(q[d]) * pkb_to_float(k[d]);
			s[h] = pkb_to_float(pkb_from_float<T>(
				pkb_to_float(pkb_from_float<T>(acc)) * 0.125f));
			m = fmaxf(m, s[h]);
		}
		for (int h = 0; h < g_n; h++) {
			s[h] = expf(s[h] - m);
			l += s[h];
		}
		for (int h = 0; h < g_n; h++)
			s[h] = pkb_to_float(pkb_from_float<T>(s[h] / l));
		T *o = res + x * g_n * HD + g * HD;
		for (int d = 0; d < HD; d++) {
			float acc = 0;
			for (int h = 0; h < g_n; h++)
				acc += s[h] * pkb_to_float(row[2 * HID + (me * g_n + h) * HD + d]);
			o[d] = pkb_from_float<T>(acc);
		}
	}
}

/* att[p][j*G*64 + c] = rank j's results[me][p][c], in 16-byte units (a
 * group's G*64 values are at least 128 bytes) */
__global__ void pull_results(pkb_dev_comm comm, void *const *stage, size_t res_off, int4 *att,
			     int64_t tok, int64_t gu)
{
	const int me = comm.rank, w = comm.world;
	int64_t n = tok * w * gu;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t p = o / (w * gu), c = o - p * w * gu;
		int64_t j = c / gu, u = c - j * gu;
		const int4 *src = (const int4 *)((const char *)stage[j] + res_off);
		att[o] = src[(me * tok + p) * gu + u];
	}
}

static cudaDataType blas_type(pkb_dtype t)
{
	return t == PKB_BF16 ? CUDA_R_16BF : t == PKB_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

/* row-major C (m, n) = A (m, k) @ B^T, B (n, k): column-major C^T = B A^T */
static int linear(cublasHandle_t h, pkb_dtype t, int64_t m, int64_t n, int64_t k,
		  const void *a, const void *b, void *c)
{
	const float one = 1, zero = 0;
	cudaDataType ct = blas_type(t);
	return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one,
			    b, ct, (int)k, a, ct, (int)k, &zero, c, ct, (int)n,
			    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;
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
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
	    cudaMalloc(&s->att, ctx->in[0].bytes) != cudaSuccess)
		return 1;
	/* qkv: 3x the hidden states; results: as many values as the hidden
	   states (W*tok positions x G*64) */
	return ctx->svc->symm_alloc(ctx, 4 * ctx->in[0].bytes, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	pkb_dtype t = ctx->in[0].dtype;
	int64_t tok = ctx->in[0].shape[0] * ctx->in[0].shape[1];
	int w = ctx->world, g_n = HEADS / w;
	size_t res_off = 3 * ctx->in[0].bytes;
	int64_t n = w * tok * g_n;
	unsigned blocks = (unsigned)((n + THREADS - 1) / THREADS);
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS ||
	    linear(s->blas, t, tok, 3 * HID, HID, ctx->in[0].data, ctx->in[1].data,
		   s->stage.local))
		return 1;
	barrier<<<1, 64, 0, st>>>(ctx->dev);
	if (t == PKB_BF16)
		head_attention<__nv_bfloat16><<<blocks, THREADS, 0, st>>>(
			ctx->dev, s->stage.peers_dev, res_off, tok, g_n);
	else if (t == PKB_FP16)
		head_attention<__half><<<blocks, THREADS, 0, st>>>(
			ctx->dev, s->stage.peers_dev, res_off, tok, g_n);
	else
		head_attention<float><<<blocks, THREADS, 0, st>>>(
			ctx->dev, s->stage.peers_dev, res_off, tok, g_n);
	barrier<<<1, 64, 0, st>>>(ctx->dev);
	int64_t gu = g_n * HD * (int64_t)pkb_dtype_size(t) / 16;
	pull_results<<<1024, THREADS, 0, st>>>(ctx->dev, s->stage.peers_dev, res_off,
					       (int4 *)s->att, tok, gu);
	barrier<<<1, 64, 0, st>>>(ctx->dev);   /* peers are done reading ours */
	if (cudaGetLastError() != cudaSuccess)
		return 1;
	return linear(s->blas, t, tok, HID, HID, s->att, ctx->in[2].data, ctx->out[0].data);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->blas)
		cublasDestroy(s->blas);
	cudaFree(s->att);
	free(s);
	return 0;
}
