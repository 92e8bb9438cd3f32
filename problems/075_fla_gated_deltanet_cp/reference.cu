/*
 * 075_fla_gated_deltanet_cp reference: the original's head-parallel
 * recurrence, NCCL all-to-alls (grouped ncclSend/ncclRecv) around a
 * recurrence kernel of our own:
 *   1. q, k, v, gate, beta: rows (S, W, hl, ...) -> (W, S, hl, ...) (a block
 *      transpose), one grouped all-to-all of the five: rank r gets its hl
 *      heads of every rank's S tokens, token t = j*S + s from rank j;
 *   2. prep, one block per (token, local head): q and k l2-normalised in
 *      fp32 (q then / 16), the decay g = exp(-exp(a_log) softplus(gate +
 *      dt_bias)) and beta in fp32;
 *   3. the recurrence over all T = W*S tokens: the state's 512 value
 *      columns evolve independently (S^T k and S^T q mix rows, never
 *      columns), so a warp carries one column of 256 fp32 rows, 8 a lane,
 *      and a step is two warp sums; outputs rounded to T, written by token
 *      straight into the return all-to-all's (W, S, hl, 512) layout;
 *   4. the all-to-all back, then (W, S, hl, 512) -> (S, W, hl, 512) = out.
 * At W = 4: 1.5 MiB in, 0.5 MiB back per rank (bf16); 512 sequential steps.
 */
#include <math.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define DK 256
#define DV 512
#define COLS 8        /* value columns a block: a warp each */
#define NIN 5         /* q, k, v, gate, beta */

struct state {
	int64_t s, h, hl, t;          /* local tokens, heads, local heads, W*S */
	size_t e;
	size_t chunk[NIN];            /* bytes of one peer's block of input i */
	char *send[NIN], *recv[NIN];
	float *qn, *kn, *g, *b;       /* (hl, T, 256) x2, (hl, T) x2 */
	char *o_send, *o_recv;        /* (W, S, hl, 512) of T */
};

/* dst (Q, P) blocks = src (P, Q) blocks transposed, blocks of blk units */
template <typename U>
__global__ void swap_blocks(const U *src, U *dst, int64_t p_n, int64_t q_n, int64_t blk)
{
	int64_t n = p_n * q_n * blk;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t j = o / blk, c = o - j * blk;
		int64_t q = j / p_n, p = j - q * p_n;
		dst[o] = src[(p * q_n + q) * blk + c];
	}
}

/* sum over the block of 256 threads, the result on every thread */
__device__ __forceinline__ float block_sum(float x, float *red)
{
	for (int o = 16; o > 0; o /= 2)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	__syncthreads();
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = x;
	__syncthreads();
	float s = 0;
	for (int i = 0; i < THREADS / 32; i++)
		s += red[i];
	return s;
}

/* one block per (token t, local head h), one thread per key dimension */
template <typename T>
__global__ void __launch_bounds__(THREADS)
prep(const T *q, const T *k, const T *gate, const T *beta, const __nv_bfloat16 *a_log,
     const __nv_bfloat16 *dt_bias, int64_t hl, int64_t tn, float *qn, float *kn, float *g,
     float *b)
{
	__shared__ float red[THREADS / 32];
	int64_t t = blockIdx.x, h = blockIdx.y, d = threadIdx.x;
	int64_t row = (t * hl + h) * DK, out = (h * tn + t) * DK;
	float x = pkb_to_float(q[row + d]), y = pkb_to_float(k[row + d]);
	float nq = sqrtf(block_sum(x * x, red)), nk = sqrtf(block_sum(y * y, red));
	/* F.normalize: x / max(|x|, eps); q then times 256^-0.5 (exact) */
	qn[out + d] = x / fmaxf(nq, 1e-6f) * 0.0625f;
	kn[out + d] = y / fmaxf(nk, 1e-6f);
	if (d == 0) {
		float z = pkb_to_float(gate[t * hl + h]) + __bfloat162float(dt_bias[h]);
		float sp = z > 20.0f ? z : log1pf(expf(z));   /* torch's softplus */
		g[h * tn + t] = expf(-expf(__bfloat162float(a_log[h])) * sp);
		b[h * tn + t] = pkb_to_float(beta[t * hl + h]);
	}
}

/*
 * The recurrence of local head blockIdx.y, value column j = blockIdx.x *
 * COLS + warp, over all tn tokens. Lane l holds rows 8l .. 8l+7 of the
 * column. v (T, hl, 512) of T; o (T, hl, 512) of T.
 */
template <typename T>
__global__ void __launch_bounds__(THREADS)
recur(const float *qn, const float *kn, const float *g, const float *b, const T *v,
      int64_t hl, int64_t tn, T *o)
{
	int lane = threadIdx.x % 32, j = blockIdx.x * COLS + threadIdx.x / 32;
	int64_t h = blockIdx.y;
	float st[8];
#pragma unroll
	for (int i = 0; i < 8; i++)
		st[i] = 0;
	for (int64_t t = 0; t < tn; t++) {
		const float4 *kp = (const float4 *)(kn + (h * tn + t) * DK) + 2 * lane;
		const float4 *qp = (const float4 *)(qn + (h * tn + t) * DK) + 2 * lane;
		float4 k0 = kp[0], k1 = kp[1], q0 = qp[0], q1 = qp[1];
		float kk[8] = { k0.x, k0.y, k0.z, k0.w, k1.x, k1.y, k1.z, k1.w };
		float qq[8] = { q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w };
		float gt = g[h * tn + t], p = 0;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			st[i] *= gt;
			p = fmaf(kk[i], st[i], p);
		}
		for (int off = 16; off > 0; off /= 2)
			p += __shfl_xor_sync(0xffffffffu, p, off);
		int64_t at = (t * hl + h) * DV + j;
		float u = (pkb_to_float(v[at]) - p) * b[h * tn + t], r = 0;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			st[i] = fmaf(kk[i], u, st[i]);
			r = fmaf(qq[i], st[i], r);
		}
		for (int off = 16; off > 0; off /= 2)
			r += __shfl_xor_sync(0xffffffffu, r, off);
		if (lane == 0)
			o[at] = pkb_from_float<T>(r);
	}
}

template <typename U>
static int swap(pkb_ctx *ctx, const void *src, void *dst, int64_t p_n, int64_t q_n, int64_t blk)
{
	int64_t n = p_n * q_n * blk;
	swap_blocks<U><<<pkb_ref_blocks(n, THREADS, 4096), THREADS, 0, (cudaStream_t)ctx->stream>>>(
		(const U *)src, (U *)dst, p_n, q_n, blk);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

/* buffers send[i] + k*chunk[i] to rank k, recv[i] + k*chunk[i] from rank
 * k, for the n buffers, in one group
 * (pkb_ref_all_to_all_n) */
static int exchange(pkb_ctx *ctx, char *const *send, char *const *recv, const size_t *chunk,
		    int n)
{
	struct pkb_ref_a2a x[NIN];
	for (int i = 0; i < n; i++) {
		x[i].send = send[i];
		x[i].recv = recv[i];
		x[i].bytes = chunk[i];
		x[i].stride = chunk[i];
	}
	return pkb_ref_all_to_all_n(ctx, x, n);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	int w = ctx->world;
	s->e = pkb_dtype_size(ctx->in[0].dtype);
	s->s = ctx->in[0].shape[1];
	s->h = ctx->in[0].shape[2];
	s->hl = ctx->in[5].shape[0];
	s->t = w * s->s;
	if (s->hl * w != s->h || ctx->in[0].shape[3] != DK || ctx->in[2].shape[3] != DV) {
		ctx->svc->log(ctx, "075 reference: %lld heads do not split over %d ranks",
			      (long long)s->h, w);
		return 1;
	}
	const int64_t width[NIN] = { DK, DK, DV, 1, 1 };
	for (int i = 0; i < NIN; i++) {
		s->chunk[i] = s->s * s->hl * width[i] * s->e;
		PKB_CK_CUDA(ctx, cudaMalloc(&s->send[i], w * s->chunk[i]));
		PKB_CK_CUDA(ctx, cudaMalloc(&s->recv[i], w * s->chunk[i]));
	}
	size_t rows = s->hl * s->t;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->qn, rows * DK * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->kn, rows * DK * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->g, rows * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->b, rows * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->o_send, rows * DV * s->e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->o_recv, rows * DV * s->e));
	return 0;
}

template <typename T>
static int compute(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	prep<T><<<dim3((unsigned)s->t, (unsigned)s->hl), THREADS, 0, st>>>(
		(const T *)s->recv[0], (const T *)s->recv[1], (const T *)s->recv[3],
		(const T *)s->recv[4], (const __nv_bfloat16 *)ctx->in[5].data,
		(const __nv_bfloat16 *)ctx->in[6].data, s->hl, s->t, s->qn, s->kn, s->g, s->b);
	PKB_CK_LAUNCH(ctx);
	recur<T><<<dim3(DV / COLS, (unsigned)s->hl), THREADS, 0, st>>>(
		s->qn, s->kn, s->g, s->b, (const T *)s->recv[2], s->hl, s->t, (T *)s->o_send);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	int w = ctx->world;
	size_t e = s->e;

	/* 1. (S, W, hl, width) -> (W, S, hl, width), then to the head owners */
	for (int i = 0; i < 3; i++) {
		int64_t width = ctx->in[i].shape[3];
		PKB_CK(swap<int4>(ctx, ctx->in[i].data, s->send[i], s->s, w,
				  s->hl * width * e / 16));
	}
	for (int i = 3; i < NIN; i++)   /* gate, beta: hl elements a row */
		PKB_CK(swap<char>(ctx, ctx->in[i].data, s->send[i], s->s, w, s->hl * e));
	PKB_CK(exchange(ctx, s->send, s->recv, s->chunk, NIN));

	/* 2, 3. the recurrence of our heads over the whole sequence */
	switch (ctx->in[0].dtype) {
	case PKB_BF16: PKB_CK(compute<__nv_bfloat16>(ctx, s)); break;
	case PKB_FP16: PKB_CK(compute<__half>(ctx, s)); break;
	default: PKB_CK(compute<float>(ctx, s)); break;
	}

	/* 4. back to the token owners, (W, S, hl, 512) -> (S, W, hl, 512) */
	size_t oc = s->s * s->hl * DV * e;
	PKB_CK(exchange(ctx, &s->o_send, &s->o_recv, &oc, 1));
	return swap<int4>(ctx, s->o_recv, ctx->out[0].data, w, s->s, s->hl * DV * e / 16);
}

static void release(struct state *s)
{
	for (int i = 0; i < NIN; i++) {
		cudaFree(s->send[i]);
		cudaFree(s->recv[i]);
	}
	cudaFree(s->qn);
	cudaFree(s->kn);
	cudaFree(s->g);
	cudaFree(s->b);
	cudaFree(s->o_send);
	cudaFree(s->o_recv);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
