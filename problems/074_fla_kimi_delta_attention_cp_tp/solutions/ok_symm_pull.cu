/*
 * 074_fla_kimi_delta_attention_cp_tp, known-good: no NCCL. Each rank
 * stages its k, v, g, beta in symmetric memory; after one barrier, prep
 * pulls the chunks of CP ranks 0..c (global ranks t, t+tp, ...) straight
 * from their slots and turns them into fp32 operands (k normalised, the
 * decay, sigmoid(beta); q for our positions). The recurrence runs each
 * value column of each head as its own 128-vector recurrence, 8 lanes a
 * column and 16 keys a lane (the reference uses 32 lanes and 4: another
 * summation order), with fused updates and rsqrt norms. With tp = 2 the
 * outputs, rounded to T, go into the slot too; after a second barrier
 * each rank adds its partner's to its own in fp32 and rounds once: what
 * the reference's two-rank all-reduce in T computes.
 *
 * Back to back: two halves of the slot by call parity (pkb_call_half). A
 * rank writes a half again two calls later, after the first barrier of the
 * call in between, which every peer reaches only once its prep and its TP
 * sum of this call have read the half (they come before it in its stream).
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define D 128            /* key_dim = value_dim */
#define KPL 16           /* keys a lane in recur: 8 lanes a column */
#define COLS 16          /* value columns a block of recur: 4 warps x 4 */
#define PREP_WARPS 8
#define COPY_THREADS 256
#define BARRIER_THREADS 128

struct state {
	int tp, cp, c, t;
	int64_t l, h, lhd, chunk;    /* lhd = L*H*D; chunk = 3 lhd + L*H */
	pkb_symm slot;               /* two halves of [k | v | g | beta | out part] */
	size_t half;
	uint32_t *calls;
	size_t *off;                 /* this call's half */
	float *kn, *dec, *vf, *bsig, *qn;   /* prep's fp32 operands */
};

__global__ void pick_half(uint32_t *calls, size_t half, size_t *off)
{
	size_t o = pkb_call_half(calls, half);
	if (threadIdx.x == 0)
		*off = o;
}

/* blockIdx.y = 0..3: k, v, g, beta into this rank's half, 16-byte units */
__global__ void stage(const uint4 *k, const uint4 *v, const uint4 *g, const uint4 *beta,
		      char *const *slots, int rank, const size_t *off, int64_t big, int64_t small)
{
	int y = blockIdx.y;
	const uint4 *src = y == 0 ? k : y == 1 ? v : y == 2 ? g : beta;
	int64_t n = y == 3 ? small : big;
	uint4 *dst = (uint4 *)(slots[rank] + *off) + y * big;
	for (int64_t i = blockIdx.x * (int64_t)COPY_THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * COPY_THREADS)
		dst[i] = src[i];
}

__global__ void meet(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

__device__ __forceinline__ float sum32(float x)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

/* a sum over the 8 lanes of a column */
__device__ __forceinline__ float sum8(float x)
{
#pragma unroll
	for (int o = 4; o > 0; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

__device__ __forceinline__ float sigm(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

/*
 * One warp a (position, head) row of the prefix 0 .. npos-1. Chunk j
 * lives in the slot half of global rank t + tp*j.
 */
template <typename T>
__global__ void prep(char *const *slots, const size_t *off, int t, int tp, const T *q,
		     const __nv_bfloat16 *a_log, const __nv_bfloat16 *dt_bias, int64_t l,
		     int64_t h, int64_t npos, int64_t own, float *kn, float *dec, float *vf,
		     float *bsig, float *qn)
{
	int lane = threadIdx.x & 31;
	int64_t row = (int64_t)blockIdx.x * PREP_WARPS + (threadIdx.x >> 5);
	if (row >= npos * h)
		return;
	int64_t p = row / h, hh = row % h, i = p % l, lhd = l * h * D;
	const T *src = (const T *)(slots[t + tp * (p / l)] + *off);
	int64_t at = (i * h + hh) * D + 4 * lane;
	float k[4], g[4], ss = 0;
	for (int e = 0; e < 4; e++) {
		k[e] = pkb_to_float(src[at + e]);
		g[e] = pkb_to_float(src[2 * lhd + at + e]);
		ss = fmaf(k[e], k[e], ss);
	}
	/* 1/max(|k|, 1e-12) */
	float inv = rsqrtf(fmaxf(sum32(ss), 1e-24f));
	float a = expf(__bfloat162float(a_log[hh]));
	for (int e = 0; e < 4; e++) {
		kn[row * D + 4 * lane + e] = k[e] * inv;
		vf[row * D + 4 * lane + e] = pkb_to_float(src[lhd + at + e]);
		float x = a * (g[e] + __bfloat162float(dt_bias[hh * D + 4 * lane + e]));
		dec[row * D + 4 * lane + e] = expf(-5.0f * sigm(x));
	}
	if (lane == 0)
		bsig[row] = sigm(pkb_to_float(src[3 * lhd + i * h + hh]));
	if (p < own)
		return;
	float qv[4];
	ss = 0;
	for (int e = 0; e < 4; e++) {
		qv[e] = pkb_to_float(q[at + e]);
		ss = fmaf(qv[e], qv[e], ss);
	}
	inv = rsqrtf(fmaxf(sum32(ss), 1e-24f)) * (1.0f / sqrtf((float)D));
	for (int e = 0; e < 4; e++)
		qn[(row - own * h) * D + 4 * lane + e] = qv[e] * inv;
}

/*
 * 8 lanes a value column j of head blockIdx.x, keys [16 sub, 16 sub + 16);
 * T(o) into out, or with to_slot into this rank's half at byte `at`.
 */
template <typename T>
__global__ void __launch_bounds__(128)
recur(const float *kn, const float *dec, const float *vf, const float *bsig, const float *qn,
      int64_t h, int64_t npos, int64_t own, char *const *slots, int rank, const size_t *off,
      size_t at, int to_slot, T *out)
{
	int lane = threadIdx.x & 31, sub = lane & 7, hh = blockIdx.x;
	int j = blockIdx.y * COLS + (threadIdx.x >> 5) * 4 + (lane >> 3);
	if (to_slot)
		out = (T *)(slots[rank] + *off + at);
	float s[KPL];
#pragma unroll
	for (int e = 0; e < KPL; e++)
		s[e] = 0;
	for (int64_t p = 0; p < npos; p++) {
		int64_t row = p * h + hh;
		const float4 *k4 = (const float4 *)(kn + row * D + sub * KPL);
		const float4 *d4 = (const float4 *)(dec + row * D + sub * KPL);
		float k[KPL], proj = 0;
#pragma unroll
		for (int e = 0; e < KPL / 4; e++) {
			float4 kk = k4[e], dd = d4[e];
			k[4 * e] = kk.x; k[4 * e + 1] = kk.y; k[4 * e + 2] = kk.z; k[4 * e + 3] = kk.w;
			s[4 * e] *= dd.x; s[4 * e + 1] *= dd.y; s[4 * e + 2] *= dd.z; s[4 * e + 3] *= dd.w;
		}
#pragma unroll
		for (int e = 0; e < KPL; e++)
			proj = fmaf(k[e], s[e], proj);
		proj = sum8(proj);
		float u = (vf[row * D + j] - proj) * bsig[row];
#pragma unroll
		for (int e = 0; e < KPL; e++)
			s[e] = fmaf(k[e], u, s[e]);
		if (p < own)
			continue;
		const float *q = qn + ((p - own) * h + hh) * D + sub * KPL;
		float o = 0;
#pragma unroll
		for (int e = 0; e < KPL; e++)
			o = fmaf(q[e], s[e], o);
		o = sum8(o);
		if (sub == 0)
			out[((p - own) * h + hh) * D + j] = pkb_from_float<T>(o);
	}
}

/* out = T(mine + the partner's), fp32 inside: a sum of two is order-free */
template <typename T>
__global__ void tp_sum(char *const *slots, int rank, int partner, const size_t *off, size_t at,
		       int64_t n, T *out)
{
	const T *mine = (const T *)(slots[rank] + *off + at);
	const T *peer = (const T *)(slots[partner] + *off + at);
	for (int64_t i = blockIdx.x * (int64_t)COPY_THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * COPY_THREADS)
		out[i] = pkb_from_float<T>(pkb_to_float(mine[i]) + pkb_to_float(peer[i]));
}

static unsigned blocks(int64_t n, unsigned per, unsigned cap)
{
	int64_t b = (n + per - 1) / per;
	return b < 1 ? 1u : b > cap ? cap : (unsigned)b;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > BARRIER_THREADS || ctx->in[0].shape[3] != D)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	/* the original's layout: tp = 2 when W >= 4 is even, rank = c*tp + t */
	s->tp = ctx->world >= 4 && ctx->world % 2 == 0 ? 2 : 1;
	s->cp = ctx->world / s->tp;
	s->c = ctx->rank / s->tp;
	s->t = ctx->rank % s->tp;
	s->l = ctx->in[0].shape[1];
	s->h = ctx->in[0].shape[2];
	s->lhd = s->l * s->h * D;
	s->chunk = 3 * s->lhd + s->l * s->h;
	size_t e = pkb_dtype_size(ctx->in[0].dtype);
	/* every part a multiple of 16 bytes: L*H*e is (64*16*e) */
	s->half = (s->chunk + s->lhd) * e;
	int64_t npos = (s->c + 1) * s->l;
	if (cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, sizeof(size_t)) != cudaSuccess ||
	    cudaMalloc(&s->kn, npos * s->h * D * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->dec, npos * s->h * D * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->vf, npos * s->h * D * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->bsig, npos * s->h * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->qn, s->lhd * sizeof(float)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->slot);
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	char *const *slots = (char *const *)s->slot.peers_dev;
	size_t e = sizeof(T);
	int64_t npos = (s->c + 1) * s->l, own = s->c * s->l;
	int64_t big = s->lhd * e / 16, small = s->l * s->h * e / 16;
	size_t at = s->chunk * e;    /* the out part of a half */

	pick_half<<<1, 32, 0, st>>>(s->calls, s->half, s->off);
	stage<<<dim3(blocks(big, COPY_THREADS, 128), 4), COPY_THREADS, 0, st>>>(
		(const uint4 *)ctx->in[1].data, (const uint4 *)ctx->in[2].data,
		(const uint4 *)ctx->in[3].data, (const uint4 *)ctx->in[4].data, slots, ctx->rank,
		s->off, big, small);
	meet<<<1, BARRIER_THREADS, 0, st>>>(ctx->dev);
	prep<T><<<blocks(npos * s->h, PREP_WARPS, 1u << 30), PREP_WARPS * 32, 0, st>>>(
		slots, s->off, s->t, s->tp, (const T *)ctx->in[0].data,
		(const __nv_bfloat16 *)ctx->in[5].data, (const __nv_bfloat16 *)ctx->in[6].data,
		s->l, s->h, npos, own, s->kn, s->dec, s->vf, s->bsig, s->qn);
	/* tp = 1: straight into out; tp = 2: into our slot's out part */
	recur<T><<<dim3((unsigned)s->h, D / COLS), 128, 0, st>>>(s->kn, s->dec, s->vf, s->bsig,
		s->qn, s->h, npos, own, slots, ctx->rank, s->off, at, s->tp > 1,
		(T *)ctx->out[0].data);
	if (s->tp > 1) {
		meet<<<1, BARRIER_THREADS, 0, st>>>(ctx->dev);
		tp_sum<T><<<blocks(s->lhd, COPY_THREADS, 1024), COPY_THREADS, 0, st>>>(
			slots, ctx->rank, ctx->rank ^ 1, s->off, at, s->lhd,
			(T *)ctx->out[0].data);
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return launch<__nv_bfloat16>(ctx, s);
	case PKB_FP16: return launch<__half>(ctx, s);
	case PKB_FP32: return launch<float>(ctx, s);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		void *bufs[] = { s->calls, s->off, s->kn, s->dec, s->vf, s->bsig, s->qn };
		for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
			cudaFree(bufs[i]);
	}
	free(s);
	return 0;
}
