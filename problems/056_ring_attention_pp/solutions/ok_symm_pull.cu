/*
 * 056_ring_attention_pp, known-good: no ring, no NCCL. The slot of every
 * rank holds its K and V and, on stage 0, its block's output y0. All ranks
 * run the same sequence of three barriers:
 *   stage 0: q, k, v by cuBLAS from hidden_states, K and V into the slot;
 *   barrier 1;
 *   stage 0: 054's pull kernel over the stage's CP group (ranks 0..cp-1),
 *            the output projection into stage_output and into the slot;
 *   barrier 2;
 *   stage 1: y0 pulled from rank - cp's slot, q, k, v from it, K and V
 *            into the slot;
 *   barrier 3;
 *   stage 1: the pull kernel over ranks cp..2cp-1 and the projection.
 * Stage 0 idles through barrier 3 and stage 1 through the first two: the
 * pipeline has one micro-batch, so one stage waits whatever the method.
 *
 * Back to back: two halves of the slot by call parity (pkb_call_half). A
 * rank writes a half again two calls later, after the barriers of the call
 * in between, which every peer reaches only once it has read this call's
 * half.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define HD 64        /* head_dim */
#define QT 32        /* query rows a thread block */
#define KT 32        /* keys a tile */
#define NT 128       /* threads: 4 a query row */
#define COPY_THREADS 256
#define PP 2
#define HIDDEN 512

struct state {
	cublasHandle_t blas;
	void *ws;
	int64_t b, s, heads, x, y;  /* x = B*S*heads*64 (q, k or v), y = B*S*512 */
	int cp, c, p;               /* CP size, cp_idx, pp_idx */
	pkb_symm slot;              /* two halves of [K | V | y0] */
	size_t half;
	uint32_t *calls;
	size_t *off;                /* this call's half */
	void *qkv, *ctx, *y0;
};

__global__ void pick_half(uint32_t *calls, size_t half, size_t *off)
{
	size_t o = pkb_call_half(calls, half);
	if (threadIdx.x == 0)
		*off = o;
}

/* units 16-byte units of src into rank `to`'s half at byte `at` */
__global__ void stage(const uint4 *src, char *const *slots, int to, const size_t *off,
		      size_t at, int64_t units)
{
	uint4 *dst = (uint4 *)(slots[to] + *off + at);
	for (int64_t i = blockIdx.x * (int64_t)COPY_THREADS + threadIdx.x; i < units;
	     i += (int64_t)gridDim.x * COPY_THREADS)
		dst[i] = src[i];
}

/* units 16-byte units of rank `from`'s half at byte `at` into dst */
__global__ void pull(uint4 *dst, char *const *slots, int from, const size_t *off, size_t at,
		     int64_t units)
{
	const uint4 *src = (const uint4 *)(slots[from] + *off + at);
	for (int64_t i = blockIdx.x * (int64_t)COPY_THREADS + threadIdx.x; i < units;
	     i += (int64_t)gridDim.x * COPY_THREADS)
		dst[i] = src[i];
}

__global__ void meet(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

/*
 * 054's kernel, over a CP group: queries q (B, S, H, 64) of CP rank `rank`
 * against the keys of blocks 0..nblk-1 (nblk = rank + 1: causal), block j
 * as [K | V] of (B, S, H, 64) in the slot half of global rank peer0 +
 * pstride*j.
 */
template <typename T>
__global__ void __launch_bounds__(NT)
attn(const T *q, char *const *slots, const size_t *off, int rank, int nblk, int peer0,
     int pstride, int s_len, int heads, int64_t x, float scale, T *out)
{
	__shared__ float ks[KT][HD + 1], vs[KT][HD], ps[QT][KT + 1];
	int tid = threadIdx.x, row = tid >> 2, sub = tid & 3;
	int q0 = blockIdx.x * QT, h = blockIdx.y, b = blockIdx.z, qi = q0 + row;
	int64_t ts = (int64_t)heads * HD;
	int64_t base = (int64_t)b * s_len * ts + (int64_t)h * HD;
	float qr[HD], o[HD / 4], m = -INFINITY, l = 0;
#pragma unroll
	for (int d = 0; d < HD; d++)
		qr[d] = qi < s_len ? pkb_to_float(q[base + qi * ts + d]) : 0.0f;
#pragma unroll
	for (int i = 0; i < HD / 4; i++)
		o[i] = 0;
	for (int j = 0; j < nblk; j++) {
		const T *k = (const T *)(slots[peer0 + pstride * j] + *off), *v = k + x;
		/* the diagonal block: keys past the tile's last query are masked */
		int kend = j == rank ? min(s_len, q0 + QT) : s_len;
		for (int k0 = 0; k0 < kend; k0 += KT) {
			__syncthreads();
			for (int i = tid; i < KT * HD; i += NT) {
				int r = i / HD, d = i % HD;
				bool in = k0 + r < s_len;
				int64_t at = base + (k0 + r) * ts + d;
				ks[r][d] = in ? pkb_to_float(k[at]) : 0.0f;
				vs[r][d] = in ? pkb_to_float(v[at]) : 0.0f;
			}
			__syncthreads();
			float sc[KT / 4], tmax = -INFINITY;
#pragma unroll
			for (int i = 0; i < KT / 4; i++) {
				int kj = k0 + sub + 4 * i;
				float dot = 0;
#pragma unroll
				for (int d = 0; d < HD; d++)
					dot = fmaf(qr[d], ks[sub + 4 * i][d], dot);
				/* global positions: block j's key kj against query qi of ours */
				bool ok = kj < s_len && (j != rank || kj <= qi);
				sc[i] = ok ? dot * scale : -INFINITY;
				tmax = fmaxf(tmax, sc[i]);
			}
			tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
			tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
			float mnew = fmaxf(m, tmax);
			float alpha = mnew == -INFINITY ? 1.0f : expf(m - mnew);
			float psum = 0;
#pragma unroll
			for (int i = 0; i < KT / 4; i++) {
				float p = sc[i] == -INFINITY ? 0.0f : expf(sc[i] - mnew);
				ps[row][sub + 4 * i] = p;
				psum += p;
			}
			psum += __shfl_xor_sync(0xffffffffu, psum, 1);
			psum += __shfl_xor_sync(0xffffffffu, psum, 2);
			l = l * alpha + psum;
			m = mnew;
			__syncwarp();
#pragma unroll
			for (int i = 0; i < HD / 4; i++)
				o[i] *= alpha;
			for (int jj = 0; jj < KT; jj++) {
				float p = ps[row][jj];
#pragma unroll
				for (int i = 0; i < HD / 4; i++)
					o[i] = fmaf(p, vs[jj][sub + 4 * i], o[i]);
			}
		}
	}
	if (qi >= s_len)
		return;
	float inv = 1.0f / l;
#pragma unroll
	for (int i = 0; i < HD / 4; i++)
		out[base + qi * ts + sub + 4 * i] = pkb_from_float<T>(o[i] * inv);
}

static unsigned blocks(int64_t n, unsigned cap)
{
	int64_t b = (n + COPY_THREADS - 1) / COPY_THREADS;
	return b < 1 ? 1u : b > cap ? cap : (unsigned)b;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > NT || ctx->world % PP)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->b = ctx->in[0].shape[0];
	s->s = ctx->in[0].shape[1];
	s->heads = ctx->in[1].shape[0] / 3 / HD;
	s->x = s->b * s->s * s->heads * HD;
	s->y = s->b * s->s * HIDDEN;
	s->cp = ctx->world / PP;
	s->c = ctx->rank % s->cp;
	s->p = ctx->rank / s->cp;
	size_t e = pkb_dtype_size(ctx->in[0].dtype);
	s->half = (2 * s->x + s->y) * e;     /* every part a multiple of 16 bytes */
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetMathMode(s->blas, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
			      CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) != CUBLAS_STATUS_SUCCESS ||
	    cudaMalloc(&s->ws, 32u << 20) != cudaSuccess ||
	    cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, sizeof(size_t)) != cudaSuccess ||
	    cudaMalloc(&s->qkv, 3 * s->x * e) != cudaSuccess ||
	    cudaMalloc(&s->ctx, s->x * e) != cudaSuccess ||
	    cudaMalloc(&s->y0, s->y * e) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->slot);
}

/* q, k, v (B*S, 512) each = x w_qkv[slab]^T; K and V into this rank's half */
template <typename T>
static int project_qkv(pkb_ctx *ctx, struct state *s, cudaDataType dt, const void *x)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int bs = (int)(s->b * s->s), local = (int)(s->heads * HD);
	float one = 1.0f, zero = 0.0f;
	T *q = (T *)s->qkv;
	if (cublasGemmStridedBatchedEx(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, local, bs, HIDDEN, &one,
				       ctx->in[1].data, dt, HIDDEN, (int64_t)local * HIDDEN, x, dt,
				       HIDDEN, 0, &zero, q, dt, local, s->x, 3, CUBLAS_COMPUTE_32F,
				       CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
		return 1;
	int64_t kv_units = (int64_t)(2 * s->x * sizeof(T) / 16);
	stage<<<blocks(kv_units, 264), COPY_THREADS, 0, st>>>(
		(const uint4 *)(q + s->x), (char *const *)s->slot.peers_dev, ctx->rank, s->off, 0,
		kv_units);
	return 0;
}

/* attention over this stage's CP group (global ranks p*cp + j), then the
 * output projection into stage_output */
template <typename T>
static int attend_project(pkb_ctx *ctx, struct state *s, cudaDataType dt)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int bs = (int)(s->b * s->s), local = (int)(s->heads * HD);
	float one = 1.0f, zero = 0.0f;
	float scale = (float)pkb_param_get(ctx, "softmax_scale", 0.125);
	dim3 grid((unsigned)((s->s + QT - 1) / QT), (unsigned)s->heads, (unsigned)s->b);
	int nblk = s->c + 1;   /* blocks 0..c: the earlier positions and ours */
	attn<T><<<grid, NT, 0, st>>>((const T *)s->qkv, (char *const *)s->slot.peers_dev, s->off,
				     s->c, nblk, s->p * s->cp, 1, (int)s->s, (int)s->heads, s->x,
				     scale, (T *)s->ctx);
	if (cublasGemmEx(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, HIDDEN, bs, local, &one,
			 ctx->in[2].data, dt, local, s->ctx, dt, local, &zero, ctx->out[0].data, dt,
			 HIDDEN, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
		return 1;
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaDataType dt)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	char *const *slots = (char *const *)s->slot.peers_dev;
	size_t at = 2 * s->x * sizeof(T);    /* y0's place in a half */
	int64_t y_units = (int64_t)(s->y * sizeof(T) / 16);
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetWorkspace(s->blas, s->ws, 32u << 20) != CUBLAS_STATUS_SUCCESS)
		return 1;
	pick_half<<<1, 32, 0, st>>>(s->calls, s->half, s->off);
	if (s->p == 0 && project_qkv<T>(ctx, s, dt, ctx->in[0].data))
		return 1;
	meet<<<1, NT, 0, st>>>(ctx->dev);
	if (s->p == 0) {
		if (attend_project<T>(ctx, s, dt))
			return 1;
		stage<<<blocks(y_units, 264), COPY_THREADS, 0, st>>>(
			(const uint4 *)ctx->out[0].data, slots, ctx->rank, s->off, at, y_units);
	}
	meet<<<1, NT, 0, st>>>(ctx->dev);
	if (s->p == 1) {
		pull<<<blocks(y_units, 264), COPY_THREADS, 0, st>>>((uint4 *)s->y0, slots,
								    ctx->rank - s->cp, s->off, at,
								    y_units);
		const void *x = s->y0;   /* stage 1's input: stage 0's output */
		if (project_qkv<T>(ctx, s, dt, x))
			return 1;
	}
	meet<<<1, NT, 0, st>>>(ctx->dev);
	if (s->p == 1 && attend_project<T>(ctx, s, dt))
		return 1;
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return launch<__nv_bfloat16>(ctx, s, CUDA_R_16BF);
	case PKB_FP16: return launch<__half>(ctx, s, CUDA_R_16F);
	case PKB_FP32: return launch<float>(ctx, s, CUDA_R_32F);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		if (s->blas)
			cublasDestroy(s->blas);
		void *bufs[] = { s->ws, s->calls, s->off, s->qkv, s->ctx, s->y0 };
		for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
			cudaFree(bufs[i]);
	}
	free(s);
	return 0;
}
