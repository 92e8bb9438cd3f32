/*
 * 055_ring_attention_tp, known-good: no ring and no NCCL. Each rank runs
 * its projections with cuBLAS, publishes its K and V in symmetric memory,
 * and after one barrier 054's pull kernel reads the blocks 0..c its
 * queries need straight from the CP group's slots (global ranks t, t+2,
 * ...: CP rank j is global rank 2j + t). The output projection's partial
 * goes into the slot too; after a second barrier each rank adds its TP
 * partner's partial to its own in fp32 and rounds once (what the
 * reference's two-rank all-reduce computes).
 *
 * Back to back: two halves of the slot by call parity (pkb_call_half). A
 * rank writes a half again two calls later, after the first barrier of the
 * call in between, which every peer reaches only once it has read this
 * call's half (its attention and its sum come before it in its stream).
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
#define TP 2
#define HIDDEN 512

struct state {
	cublasHandle_t blas;
	void *ws;
	int64_t b, s, heads, x, y;  /* x = B*S*heads*64 (q, k or v), y = B*S*512 */
	int cp, c, t;               /* CP size, cp_idx, tp_idx */
	pkb_symm slot;              /* two halves of [K | V | part] */
	size_t half;
	uint32_t *calls;
	size_t *off;                /* this call's half */
	void *qkv, *ctx, *part;
};

__global__ void pick_half(uint32_t *calls, size_t half, size_t *off)
{
	size_t o = pkb_call_half(calls, half);
	if (threadIdx.x == 0)
		*off = o;
}

/* units 16-byte units of src into this rank's half at byte `at` */
__global__ void stage(const uint4 *src, char *const *slots, int rank, const size_t *off,
		      size_t at, int64_t units)
{
	uint4 *dst = (uint4 *)(slots[rank] + *off + at);
	for (int64_t i = blockIdx.x * (int64_t)COPY_THREADS + threadIdx.x; i < units;
	     i += (int64_t)gridDim.x * COPY_THREADS)
		dst[i] = src[i];
}

__global__ void meet(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

/* out = T(mine + the partner's), fp32 inside: a sum of two is order-free */
template <typename T>
__global__ void tp_sum(const T *mine, char *const *slots, int partner, const size_t *off,
		       size_t at, int64_t n, T *out)
{
	const T *peer = (const T *)(slots[partner] + *off + at);
	for (int64_t i = blockIdx.x * (int64_t)COPY_THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * COPY_THREADS)
		out[i] = pkb_from_float<T>(pkb_to_float(mine[i]) + pkb_to_float(peer[i]));
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
	if (ctx->world > NT || ctx->world % TP)
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
	s->cp = ctx->world / TP;
	s->c = ctx->rank / TP;
	s->t = ctx->rank % TP;
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
	    cudaMalloc(&s->part, s->y * e) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->slot);
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaDataType dt)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	char *const *slots = (char *const *)s->slot.peers_dev;
	size_t e = sizeof(T);
	int bs = (int)(s->b * s->s), local = (int)(s->heads * HD);
	T *q = (T *)s->qkv;
	float one = 1.0f, zero = 0.0f;
	float scale = (float)pkb_param_get(ctx, "softmax_scale", 0.125);
	dim3 grid((unsigned)((s->s + QT - 1) / QT), (unsigned)s->heads, (unsigned)s->b);
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetWorkspace(s->blas, s->ws, 32u << 20) != CUBLAS_STATUS_SUCCESS)
		return 1;

	/* q, k, v (B*S, 256) each = hidden w_qkv[slab]^T, slab = 0, 1, 2 */
	if (cublasGemmStridedBatchedEx(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, local, bs, HIDDEN, &one,
				       ctx->in[1].data, dt, HIDDEN, (int64_t)local * HIDDEN,
				       ctx->in[0].data, dt, HIDDEN, 0, &zero, q, dt, local, s->x, 3,
				       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
		return 1;
	pick_half<<<1, 32, 0, st>>>(s->calls, s->half, s->off);
	int64_t kv_units = (int64_t)(2 * s->x * e / 16), y_units = (int64_t)(s->y * e / 16);
	stage<<<blocks(kv_units, 264), COPY_THREADS, 0, st>>>((const uint4 *)(q + s->x), slots,
							      ctx->rank, s->off, 0, kv_units);
	meet<<<1, NT, 0, st>>>(ctx->dev);
	int nblk = s->c + 1;   /* blocks 0..c: the earlier positions and ours */
	attn<T><<<grid, NT, 0, st>>>(q, slots, s->off, s->c, nblk, s->t, TP, (int)s->s,
				     (int)s->heads, s->x, scale, (T *)s->ctx);
	/* part (B*S, 512) = ctx w_o^T */
	if (cublasGemmEx(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, HIDDEN, bs, local, &one,
			 ctx->in[2].data, dt, local, s->ctx, dt, local, &zero, s->part, dt, HIDDEN,
			 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
		return 1;
	size_t at = 2 * s->x * e;
	stage<<<blocks(y_units, 264), COPY_THREADS, 0, st>>>((const uint4 *)s->part, slots,
							     ctx->rank, s->off, at, y_units);
	meet<<<1, NT, 0, st>>>(ctx->dev);
	tp_sum<T><<<blocks(s->y, 1024), COPY_THREADS, 0, st>>>((const T *)s->part, slots,
							       ctx->rank ^ 1, s->off, at, s->y,
							       (T *)ctx->out[0].data);
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
		void *bufs[] = { s->ws, s->calls, s->off, s->qkv, s->ctx, s->part };
		for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
			cudaFree(bufs[i]);
	}
	free(s);
	return 0;
}
