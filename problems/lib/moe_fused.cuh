/*
 * moe_fused.cuh -- what 031's and 032's references run alike (032 is 031
 * with LoRA terms in the MLP): the layer's 8 experts and top 2, the
 * router (softmax, top 2, the pairs' sort keys and
 * per-expert counts), the pack of rows in expert-major order, the
 * weighted combine, and the grouped NCCL send/recv of row splits.
 */
#ifndef PKB_MOE_FUSED_CUH
#define PKB_MOE_FUSED_CUH

#include <math.h>
#include <nccl.h>
#include <stdint.h>
#include "pkb.h"
#include "pkb_device.cuh"   /* defines: pkb_to_float, pkb_from_float */
#include "pkb_ref.cuh"      /* defines: PKB_CK_NCCL */

#define EXPERTS 8
#define TOP_K 2
/* the block size these kernels assume: the references launch every
 * kernel with it (their THREADS) */
#define MOE_THREADS 256

/* one thread a token: softmax in fp32 rounded to T, the top 2 (ties: the
 * lower index, as strictly greater replaces), the pairs' sort keys and the
 * per-expert counts */
template <typename T>
__global__ void route(const T *logits, T *wts, int *keys, int *pairs,
		      unsigned long long *counts, int64_t m)
{
	int64_t t = blockIdx.x * (int64_t)MOE_THREADS + threadIdx.x;
	if (t >= m)
		return;
	const T *l = logits + t * EXPERTS;
	float mx = -INFINITY, sum = 0, p[EXPERTS];
	for (int i = 0; i < EXPERTS; i++)
		mx = fmaxf(mx, pkb_to_float(l[i]));
	for (int i = 0; i < EXPERTS; i++) {
		p[i] = expf(pkb_to_float(l[i]) - mx);
		sum += p[i];
	}
	for (int i = 0; i < EXPERTS; i++)
		p[i] = pkb_to_float(pkb_from_float<T>(p[i] / sum));
	int taken = 0;
	for (int j = 0; j < TOP_K; j++) {
		int best = -1;
		for (int i = 0; i < EXPERTS; i++)
			if (!(taken >> i & 1) && (best < 0 || p[i] > p[best]))
				best = i;
		taken |= 1 << best;
		keys[t * TOP_K + j] = best;
		pairs[t * TOP_K + j] = (int)(t * TOP_K + j);
		wts[t * TOP_K + j] = pkb_from_float<T>(p[best]);
		atomicAdd(&counts[best], 1ull);
	}
}

/* row i of the expert-major order is the token of pair pairs_sorted[i] */
template <typename T>
__global__ void pack(const T *x, const int *pairs_sorted, int *row, T *send, int64_t rows,
		     int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)MOE_THREADS + threadIdx.x; i < rows * n;
	     i += (int64_t)gridDim.x * MOE_THREADS) {
		int64_t r = i / n, c = i % n;
		int pair = pairs_sorted[r];
		if (c == 0)
			row[pair] = (int)r;
		send[i] = x[(int64_t)(pair / TOP_K) * n + c];
	}
}

template <typename T>
__global__ void combine(const T *ret, const T *wts, const int *row, T *out, int64_t m, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)MOE_THREADS + threadIdx.x; i < m * n;
	     i += (int64_t)gridDim.x * MOE_THREADS) {
		int64_t t = i / n, c = i % n;
		float o = 0;
		for (int j = 0; j < TOP_K; j++) {
			float y = pkb_to_float(ret[row[t * TOP_K + j] * n + c]);
			float a = pkb_to_float(pkb_from_float<T>(y * pkb_to_float(wts[t * TOP_K + j])));
			o = j == 0 ? a : pkb_to_float(pkb_from_float<T>(o + a));
		}
		out[i] = pkb_from_float<T>(o);
	}
}

/* rows [off[q], off[q] + cnt[q]) of `from` to rank q, rows [roff[p], ...
 * + rcnt[p]) of `to` from rank p; empty splits are skipped on both sides
 * (both derive them from the same gathered counts) */
static int exchange(pkb_ctx *ctx, ncclDataType_t t, size_t row_elems, const void *from,
		    const int64_t *off, const int64_t *cnt, void *to, const int64_t *roff,
		    const int64_t *rcnt)
{
	int w = ctx->world;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	size_t es = pkb_dtype_size(ctx->in[0].dtype);
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int i = 0; i < w; i++) {
		/* pair up with rank me+i sending and me-i receiving */
		int q = (ctx->rank + i) % w, p = (ctx->rank - i + w) % w;
		if (cnt[q])
			PKB_CK_NCCL(ctx, ncclSend((const char *)from + off[q] * row_elems * es,
						  cnt[q] * row_elems, t, q, comm, st));
		if (rcnt[p])
			PKB_CK_NCCL(ctx, ncclRecv((char *)to + roff[p] * row_elems * es,
						  rcnt[p] * row_elems, t, p, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	return 0;
}

#endif /* PKB_MOE_FUSED_CUH */
