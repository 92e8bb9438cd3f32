/*
 * moe_ep_reference.cuh -- the reference of 049, 050 and 051, whose
 * reference.cu include it (the width comes from the params num_experts and
 * top_k, so one file serves the three): the original's pipeline on the
 * device, NCCL between the ranks of the EP group, cuBLAS for the GEMMs.
 *
 * EP group: all W ranks when E >= W (E/W experts a rank), else groups of E
 * consecutive ranks with one expert each (051). Expert e lives on group
 * member e / (E/G); every local expert runs that rank's MLP.
 *
 * 1. Router: logits = T(x Wr^T + br) (lib/linear.cuh: the bias added to
 *    cuBLAS's fp32 product before the one rounding), then per token softmax
 *    in fp32 rounded to T and the top_k (ties: the lower expert).
 * 2. Dispatch plan (one block, CUB BlockScan per expert): each (token, k)
 *    pair gets a row in the slot of its expert's group member, ordered by
 *    local expert then token, as the original's permute.
 * 3. Pack the token rows, exchange the slots with grouped ncclSend/ncclRecv
 *    (member q's slot to member q), run the MLP on every received row
 *    (linear.cuh for each layer, silu(gate) * up between), send the rows back the
 *    same way.
 * 4. Combine: out[t] = T(T(y_0 w_0) + T(y_1 w_1)), the original's weighted
 *    scatter_add into zeros.
 *
 * Why fixed-size slots: the original's split sizes come from .tolist(), a
 * device-to-host round trip per call that stalls the stream and cannot be
 * captured in a CUDA graph. A slot holds the most rows one rank can send
 * another, M*min(top_k, E/G): every slot is sent whole, G/top_k times the
 * rows routed on average (4x at W = 8 in 049), and the MLP runs on all of
 * them. Rows past a slot's count are stale but finite; nobody reads their
 * results.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include <cub/cub.cuh>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"
#include "linear.cuh"   /* defines: linear */
#include "silu_mul.cuh" /* defines: silu_mul, SILU_THREADS */

PKB_SOLUTION;

#define INTER 128
#define MAX_E 128
#define MAX_K 2
#define THREADS 256
#define PLAN_THREADS 1024

struct state {
	struct pkb_ref_blas blas;
	int64_t m, n, cap;    /* cap: rows of a slot */
	int e, k, g, el, base;
	void *logits, *wts;   /* [M][E], [M][K] of T */
	int *sel, *dest, *pos;   /* [M][K]: expert, group member, row in its slot */
	void *send, *recv;    /* [G][cap][N] */
	void *gate, *up, *h;  /* [G*cap][128] */
	void *y, *ret;        /* [G*cap][N] */
	float *acc;           /* linear's fp32 products: the most of [M][E], [G*cap][N], [G*cap][128] */
};

/* one thread a token: softmax in fp32, rounded to T; top_k, ties to the
 * lower index (strictly greater replaces) */
template <typename T>
__global__ void route(const T *logits, T *wts, int *sel, int64_t m, int e, int k)
{
	int64_t t = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (t >= m)
		return;
	const T *l = logits + t * e;
	float mx = -INFINITY, sum = 0, p[MAX_E];
	for (int i = 0; i < e; i++)
		mx = fmaxf(mx, pkb_to_float(l[i]));
	for (int i = 0; i < e; i++) {
		p[i] = expf(pkb_to_float(l[i]) - mx);
		sum += p[i];
	}
	for (int i = 0; i < e; i++)
		p[i] = pkb_to_float(pkb_from_float<T>(p[i] / sum));
	unsigned long long taken[2] = { 0, 0 };
	for (int j = 0; j < k; j++) {
		int best = -1;
		for (int i = 0; i < e; i++)
			if (!(taken[i >> 6] >> (i & 63) & 1) && (best < 0 || p[i] > p[best]))
				best = i;
		taken[best >> 6] |= 1ull << (best & 63);
		sel[t * k + j] = best;
		wts[t * k + j] = pkb_from_float<T>(p[best]);
	}
}

/* each (t, j) pair's row in its member's slot: local expert, then token */
__global__ void __launch_bounds__(PLAN_THREADS)
plan(const int *sel, int *dest, int *pos, int64_t m, int e, int k, int el)
{
	typedef cub::BlockScan<int, PLAN_THREADS> scan;
	__shared__ typename scan::TempStorage tmp;
	__shared__ int carry;
	int row = 0;   /* next free row of the current member's slot */
	for (int x = 0; x < e; x++) {
		if (x % el == 0)
			row = 0;
		if (threadIdx.x == 0)
			carry = row;
		__syncthreads();
		for (int64_t t0 = 0; t0 < m; t0 += PLAN_THREADS) {
			int64_t t = t0 + threadIdx.x;
			int hit = -1;
			if (t < m)
				for (int j = 0; j < k; j++)
					if (sel[t * k + j] == x)
						hit = j;
			int before, total;
			scan(tmp).ExclusiveSum(hit >= 0 ? 1 : 0, before, total);
			if (hit >= 0) {
				dest[t * k + hit] = x / el;
				pos[t * k + hit] = carry + before;
			}
			__syncthreads();
			if (threadIdx.x == 0)
				carry += total;
			__syncthreads();
		}
		row = carry;
		__syncthreads();
	}
}

template <typename T>
__global__ void pack(const T *x, const int *dest, const int *pos, T *send, int64_t m, int k,
		     int64_t n, int64_t cap)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < m * k * n;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t tj = i / n, c = i % n;
		send[(dest[tj] * cap + pos[tj]) * n + c] = x[(tj / k) * n + c];
	}
}

template <typename T>
__global__ void combine(const T *ret, const T *wts, const int *dest, const int *pos, T *out,
			int64_t m, int k, int64_t n, int64_t cap)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < m * n;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t t = i / n, c = i % n;
		float o = 0;
		for (int j = 0; j < k; j++) {
			int64_t tj = t * k + j;
			float y = pkb_to_float(ret[(dest[tj] * cap + pos[tj]) * n + c]);
			float a = pkb_to_float(pkb_from_float<T>(y * pkb_to_float(wts[tj])));
			o = j == 0 ? a : pkb_to_float(pkb_from_float<T>(o + a));
		}
		out[i] = pkb_from_float<T>(o);
	}
}

/* member q's slot of `from` to member q, member q's slot of `to` from it */
static int exchange(pkb_ctx *ctx, struct state *s, const void *from, void *to, size_t slot_bytes)
{
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int me = ctx->rank - s->base;
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int i = 0; i < s->g; i++) {
		/* pair up with member me+i sending and me-i receiving */
		int q = (me + i) % s->g, p = (me - i + s->g) % s->g;
		PKB_CK_NCCL(ctx, ncclSend((const char *)from + q * slot_bytes, slot_bytes, ncclUint8,
					  s->base + q, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv((char *)to + p * slot_bytes, slot_bytes, ncclUint8,
					  s->base + p, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	return 0;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->m = ctx->in[0].shape[0];
	s->n = ctx->in[0].shape[1];
	s->e = (int)pkb_param_get(ctx, "num_experts", ctx->world);
	s->k = (int)pkb_param_get(ctx, "top_k", 2);
	if (s->e > MAX_E || s->k > MAX_K || s->k > s->e)
		return 1;
	s->g = s->e >= ctx->world ? ctx->world : s->e;
	s->el = s->e / s->g;
	s->base = ctx->rank / s->g * s->g;
	s->cap = s->m * (s->k < s->el ? s->k : s->el);
	size_t es = pkb_dtype_size(ctx->in[0].dtype), rows = (size_t)s->g * s->cap;
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->logits, s->m * s->e * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->wts, s->m * s->k * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->sel, s->m * s->k * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->dest, s->m * s->k * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->pos, s->m * s->k * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, rows * s->n * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, rows * s->n * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->y, rows * s->n * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->ret, rows * s->n * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->gate, rows * INTER * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->up, rows * INTER * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->h, rows * INTER * es));
	int64_t acc = rows * (s->n > INTER ? s->n : INTER);
	if (s->m * s->e > acc)
		acc = s->m * s->e;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->acc, acc * (int64_t)sizeof(float)));
	/* rows past a slot's count are sent too: finite from the start */
	PKB_CK_CUDA(ctx, cudaMemset(s->send, 0, rows * s->n * es));
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	pkb_dtype dt = ctx->in[0].dtype;
	const T *x = (const T *)ctx->in[0].data;
	const T *wg = (const T *)ctx->in[3].data, *bg = (const T *)ctx->in[4].data;
	const T *wu = (const T *)ctx->in[5].data, *bu = (const T *)ctx->in[6].data;
	const T *wd = (const T *)ctx->in[7].data, *bd = (const T *)ctx->in[8].data;
	int64_t m = s->m, n = s->n, rows = s->g * s->cap;
	size_t slot = (size_t)s->cap * n * sizeof(T);
	cublasHandle_t h = s->blas.h;
	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));

	/* 1. router */
	PKB_CK(linear<T>(ctx, h, st, dt, m, s->e, n, x, n, (const T *)ctx->in[1].data, n,
			 (const T *)ctx->in[2].data, s->acc, (T *)s->logits, s->e, 0));
	route<T><<<pkb_ref_blocks(m, THREADS, 1u << 20), THREADS, 0, st>>>(
		(const T *)s->logits, (T *)s->wts, s->sel, m, s->e, s->k);
	PKB_CK_LAUNCH(ctx);

	/* 2. dispatch plan, 3. exchange, MLP, exchange back */
	plan<<<1, PLAN_THREADS, 0, st>>>(s->sel, s->dest, s->pos, m, s->e, s->k, s->el);
	PKB_CK_LAUNCH(ctx);
	pack<T><<<pkb_ref_blocks(m * s->k * n, THREADS, 2048), THREADS, 0, st>>>(
		x, s->dest, s->pos, (T *)s->send, m, s->k, n, s->cap);
	PKB_CK_LAUNCH(ctx);
	const void *in_rows = s->send;   /* a group of one: no exchange */
	if (s->g > 1) {
		PKB_CK(exchange(ctx, s, s->send, s->recv, slot));
		in_rows = s->recv;
	}
	const T *v = (const T *)in_rows;
	PKB_CK(linear<T>(ctx, h, st, dt, rows, INTER, n, v, n, wg, n, bg, s->acc, (T *)s->gate,
			 INTER, 0));
	PKB_CK(linear<T>(ctx, h, st, dt, rows, INTER, n, v, n, wu, n, bu, s->acc, (T *)s->up,
			 INTER, 0));
	silu_mul<T><<<pkb_ref_blocks(rows * INTER, SILU_THREADS, 2048), SILU_THREADS, 0, st>>>(
		(const T *)s->gate, (const T *)s->up, (T *)s->h, rows * INTER);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(linear<T>(ctx, h, st, dt, rows, n, INTER, (const T *)s->h, INTER, wd, INTER, bd,
			 s->acc, (T *)s->y, n, 0));
	const void *back = s->y;
	if (s->g > 1) {
		PKB_CK(exchange(ctx, s, s->y, s->ret, slot));
		back = s->ret;
	}

	/* 4. combine */
	combine<T><<<pkb_ref_blocks(m * n, THREADS, 2048), THREADS, 0, st>>>(
		(const T *)back, (const T *)s->wts, s->dest, s->pos, (T *)ctx->out[0].data, m,
		s->k, n, s->cap);
	PKB_CK_LAUNCH(ctx);
	return 0;
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
		pkb_ref_blas_fini(&s->blas);
		void *bufs[] = { s->logits, s->wts, s->sel, s->dest, s->pos, s->send, s->recv,
				 s->y, s->ret, s->gate, s->up, s->h, s->acc };
		for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
			cudaFree(bufs[i]);
	}
	free(s);
	return 0;
}
