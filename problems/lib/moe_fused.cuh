/*
 * moe_fused.cuh -- 031's and 032's reference (032 is 031 with LoRA terms in
 * the experts' MLP): the layer's 8 experts and top 2, the router (softmax,
 * top 2, the pairs' sort keys and per-expert counts), the pack of rows in
 * expert-major order, the weighted combine, the grouped NCCL send/recv of
 * row splits; the state pkb_init makes (struct moe_fused, moe_fused_init)
 * and pkb_fini frees (moe_fused_release); the MLP (moe_fused_mlp) and the
 * layer's pkb_run (moe_fused_forward), which take the LoRA rank as a
 * template parameter: 0 for 031's plain MLP, 8 for 032's. Each
 * reference.cu is its statement and its entry points.
 */
#ifndef PKB_MOE_FUSED_CUH
#define PKB_MOE_FUSED_CUH

#include <math.h>
#include <nccl.h>
#include <stdint.h>
#include <cub/cub.cuh>
#include "pkb.h"
#include "pkb_device.cuh"   /* defines: pkb_to_float, pkb_from_float */
#include "pkb_ref.cuh"      /* defines: PKB_CK_NCCL, pkb_ref_state, struct pkb_ref_blas */
#include "linear.cuh"       /* defines: linear */
#include "silu_mul.cuh"     /* defines: silu_mul, SILU_THREADS (031's MLP) */

/* ---- the kernels ------------------------------------------------------------ */

#define EXPERTS 8
#define TOP_K 2
#define INTER 128   /* the MLP's inner width */
#define MOE_THREADS 256   /* every kernel's block size */

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

/* silu_mul with LoRA terms (032): g = T(gate + lg), u = T(up + lu), h =
 * T(T(silu(g)) * u), silu(v) = v / (1 + e^-v) in fp32 (-0 where e^-v
 * overflows, as torch's) */
template <typename T>
__global__ void silu_mul(const T *gate, const T *lg, const T *up, const T *lu, T *h,
			 int64_t count)
{
	for (int64_t i = blockIdx.x * (int64_t)MOE_THREADS + threadIdx.x; i < count;
	     i += (int64_t)gridDim.x * MOE_THREADS) {
		float g = pkb_to_float(pkb_from_float<T>(pkb_to_float(gate[i]) + pkb_to_float(lg[i])));
		float u = pkb_to_float(pkb_from_float<T>(pkb_to_float(up[i]) + pkb_to_float(lu[i])));
		float s = pkb_to_float(pkb_from_float<T>(g / (1.0f + expf(-g))));
		h[i] = pkb_from_float<T>(s * u);
	}
}

/* y = T(y + l) */
template <typename T>
__global__ void add_into(T *y, const T *l, int64_t count)
{
	for (int64_t i = blockIdx.x * (int64_t)MOE_THREADS + threadIdx.x; i < count;
	     i += (int64_t)gridDim.x * MOE_THREADS)
		y[i] = pkb_from_float<T>(pkb_to_float(y[i]) + pkb_to_float(l[i]));
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

/* ---- the layer ------------------------------------------------------------- */

/* what pkb_init makes (moe_fused_init) and pkb_fini frees (pkb_ref_fini
 * with moe_fused_release); the LoRA terms' buffers only for a LoRA rank
 * (032's MLP), NULL otherwise */
struct moe_fused {
	struct pkb_ref_blas blas;
	int64_t m, n, cap;    /* cap: the most rows this rank can receive */
	int w, el;            /* world, experts a rank */
	void *logits, *wts;   /* [M][8], [M][2] of T */
	int *keys, *keys_sorted;    /* [2M] the expert of pair t*2 + j */
	int *pairs, *pairs_sorted;  /* [2M] pair ids, then in expert-major order */
	int *row;             /* [2M] the row of pair t*2 + j in that order */
	unsigned long long *counts; /* [8] this rank's pairs per expert */
	int64_t *gathered;    /* [W][8] every rank's counts */
	int64_t *host;        /* [W][8] the same on the host (pinned) */
	void *sort_tmp;
	size_t sort_bytes;
	void *send, *ret;     /* [2M][N]: our rows out, their results back */
	void *recv, *y;       /* [cap][N]: rows in, the MLP's output */
	void *gate, *up, *h;  /* [cap][128] */
	float *acc;           /* [cap][max(N, 128)]: linear's fp32 products */
	void *lg, *lu;        /* [cap][128] the gate and up LoRA terms */
	void *xa;             /* [cap][r] a LoRA A product (reused) */
	void *ld;             /* [cap][N] the down LoRA term */
};

/* pkb_init: in[0] (M, N) of a float dtype, W dividing the 8 experts; the
 * LoRA terms' buffers when lora_r (their rank) is not 0 */
static int moe_fused_init(pkb_ctx *ctx, int lora_r)
{
	struct moe_fused *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	s->m = ctx->in[0].shape[0];
	s->n = ctx->in[0].shape[1];
	s->w = ctx->world;
	if (s->w > EXPERTS || EXPERTS % s->w)
		return 1;
	s->el = EXPERTS / s->w;
	s->cap = s->w * s->m * (s->el < TOP_K ? s->el : TOP_K);
	size_t es = pkb_dtype_size(ctx->in[0].dtype);
	size_t pairs = (size_t)s->m * TOP_K;
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->logits, s->m * EXPERTS * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->wts, pairs * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->keys, pairs * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->keys_sorted, pairs * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->pairs, pairs * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->pairs_sorted, pairs * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->row, pairs * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->counts, EXPERTS * sizeof(unsigned long long)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->gathered, s->w * EXPERTS * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMallocHost(&s->host, s->w * EXPERTS * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, pairs * s->n * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->ret, pairs * s->n * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, s->cap * s->n * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->y, s->cap * s->n * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->acc, s->cap * (s->n > INTER ? s->n : INTER) *
					     (int64_t)sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->gate, s->cap * INTER * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->up, s->cap * INTER * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->h, s->cap * INTER * es));
	if (lora_r) {
		PKB_CK_CUDA(ctx, cudaMalloc(&s->lg, s->cap * INTER * es));
		PKB_CK_CUDA(ctx, cudaMalloc(&s->lu, s->cap * INTER * es));
		PKB_CK_CUDA(ctx, cudaMalloc(&s->xa, s->cap * lora_r * es));
		PKB_CK_CUDA(ctx, cudaMalloc(&s->ld, s->cap * s->n * es));
	}
	/* expert ids take 3 bits */
	PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(NULL, s->sort_bytes, s->keys,
		s->keys_sorted, s->pairs, s->pairs_sorted, (int)pairs, 0, 3));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->sort_tmp, s->sort_bytes));
	return 0;
}

/* pkb_fini: pkb_ref_fini(ctx, moe_fused_release) */
static void moe_fused_release(struct moe_fused *s)
{
	pkb_ref_blas_fini(&s->blas);
	void *bufs[] = { s->logits, s->wts, s->keys, s->keys_sorted, s->pairs,
			 s->pairs_sorted, s->row, s->counts, s->gathered, s->sort_tmp,
			 s->send, s->ret, s->recv, s->y, s->gate, s->up, s->h, s->acc, s->lg,
			 s->lu, s->xa, s->ld };
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		cudaFree(bufs[i]);
	cudaFreeHost(s->host);
}

/*
 * The experts' MLP on the `rows` rows received (recv), into y: in[3..8]
 * are nn.Linear's weights and biases (lib/linear.cuh),
 *     y = T(T(T(silu(T(v Wg^T + bg))) * T(v Wu^T + bu)) Wd^T + bd).
 * LORA_R > 0 (032): the LoRA terms of rank LORA_R, in[9..14] (A_g, B_g,
 * A_u, B_u, A_d, B_d), each a separate rounded tensor as the original's
 * torch ops: g = T(T(v Wg^T + bg) + T(T(v A_g^T) B_g^T)), u likewise,
 * h = T(T(silu(g)) * u), y = T(T(h Wd^T + bd) + T(T(h A_d^T) B_d^T)).
 * LORA_R = 0 (031) instantiates none of their kernels.
 */
template <typename T, int LORA_R>
static int moe_fused_mlp(pkb_ctx *ctx, struct moe_fused *s, cublasHandle_t h, cudaStream_t st,
			 int64_t rows)
{
	pkb_dtype dt = ctx->in[0].dtype;
	int64_t n = s->n;
	const T *v = (const T *)s->recv;
	const T *wg = (const T *)ctx->in[3].data, *bg = (const T *)ctx->in[4].data;
	const T *wu = (const T *)ctx->in[5].data, *bu = (const T *)ctx->in[6].data;
	const T *wd = (const T *)ctx->in[7].data, *bd = (const T *)ctx->in[8].data;
	PKB_CK(linear<T>(ctx, h, st, dt, rows, INTER, n, v, n, wg, n, bg, s->acc, (T *)s->gate,
			 INTER, 0));
	PKB_CK(linear<T>(ctx, h, st, dt, rows, INTER, n, v, n, wu, n, bu, s->acc, (T *)s->up,
			 INTER, 0));
	if constexpr (LORA_R == 0) {
		silu_mul<T><<<pkb_ref_blocks(rows * INTER, SILU_THREADS, 2048), SILU_THREADS, 0,
			       st>>>((const T *)s->gate, (const T *)s->up, (T *)s->h, rows * INTER);
	} else {
		/* the LoRA terms: T(T(v A^T) B^T) */
		const void *ag = ctx->in[9].data, *bgl = ctx->in[10].data;
		const void *au = ctx->in[11].data, *bul = ctx->in[12].data;
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, LORA_R, n, 1.0, s->recv, n, ag, n, 0.0,
				       s->xa, LORA_R, dt));
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, INTER, LORA_R, 1.0, s->xa, LORA_R, bgl,
				       LORA_R, 0.0, s->lg, INTER, dt));
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, LORA_R, n, 1.0, s->recv, n, au, n, 0.0,
				       s->xa, LORA_R, dt));
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, INTER, LORA_R, 1.0, s->xa, LORA_R, bul,
				       LORA_R, 0.0, s->lu, INTER, dt));
		silu_mul<T><<<pkb_ref_blocks(rows * INTER, MOE_THREADS, 2048), MOE_THREADS, 0, st>>>(
			(const T *)s->gate, (const T *)s->lg, (const T *)s->up, (const T *)s->lu,
			(T *)s->h, rows * INTER);
	}
	PKB_CK_LAUNCH(ctx);
	PKB_CK(linear<T>(ctx, h, st, dt, rows, n, INTER, (const T *)s->h, INTER, wd, INTER, bd,
			 s->acc, (T *)s->y, n, 0));
	if constexpr (LORA_R > 0) {
		const void *ad = ctx->in[13].data, *bdl = ctx->in[14].data;
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, LORA_R, INTER, 1.0, s->h, INTER, ad,
				       INTER, 0.0, s->xa, LORA_R, dt));
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, n, LORA_R, 1.0, s->xa, LORA_R, bdl,
				       LORA_R, 0.0, s->ld, n, dt));
		add_into<T><<<pkb_ref_blocks(rows * n, MOE_THREADS, 2048), MOE_THREADS, 0, st>>>(
			(T *)s->y, (const T *)s->ld, rows * n);
		PKB_CK_LAUNCH(ctx);
	}
	return 0;
}

/*
 * pkb_run (the steps of 031's reference.cu): router, permute, the splits
 * (the host round trip), dispatch, the experts' MLP (moe_fused_mlp, LoRA
 * terms of rank LORA_R when it is not 0) on the rows received, back,
 * combine.
 */
template <typename T, int LORA_R>
static int moe_fused_forward(pkb_ctx *ctx, struct moe_fused *s, cudaStream_t st,
			     ncclComm_t comm)
{
	pkb_dtype dt = ctx->in[0].dtype;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, dt, &nt));
	const T *x = (const T *)ctx->in[0].data;
	int64_t m = s->m, n = s->n, pairs = m * TOP_K;
	cublasHandle_t h = s->blas.h;
	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));

	/* 1. router */
	PKB_CK(linear<T>(ctx, h, st, dt, m, EXPERTS, n, x, n, (const T *)ctx->in[1].data, n,
			 (const T *)ctx->in[2].data, s->acc, (T *)s->logits, EXPERTS, 0));
	PKB_CK_CUDA(ctx, cudaMemsetAsync(s->counts, 0, EXPERTS * sizeof(unsigned long long), st));
	route<T><<<pkb_ref_blocks(m, MOE_THREADS, 1u << 20), MOE_THREADS, 0, st>>>(
		(const T *)s->logits, (T *)s->wts, s->keys, s->pairs, s->counts, m);
	PKB_CK_LAUNCH(ctx);

	/* 2. permute, 3. splits (the host round trip) */
	PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(s->sort_tmp, s->sort_bytes, s->keys,
		s->keys_sorted, s->pairs, s->pairs_sorted, (int)pairs, 0, 3, st));
	pack<T><<<pkb_ref_blocks(pairs * n, MOE_THREADS, 4096), MOE_THREADS, 0, st>>>(
		x, s->pairs_sorted, s->row, (T *)s->send, pairs, n);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclAllGather(s->counts, s->gathered, EXPERTS, ncclInt64, comm, st));
	PKB_CK_CUDA(ctx, cudaMemcpyAsync(s->host, s->gathered, s->w * EXPERTS * sizeof(int64_t),
					 cudaMemcpyDeviceToHost, st));
	PKB_CK_CUDA(ctx, cudaStreamSynchronize(st));
	/* at most one rank an expert: W <= 8 */
	int64_t in_split[EXPERTS], in_off[EXPERTS], out_split[EXPERTS], out_off[EXPERTS];
	int64_t sent = 0, rows = 0;
	for (int q = 0; q < s->w; q++) {
		in_split[q] = out_split[q] = 0;
		for (int l = 0; l < s->el; l++) {
			in_split[q] += s->host[ctx->rank * EXPERTS + q * s->el + l];
			out_split[q] += s->host[q * EXPERTS + ctx->rank * s->el + l];
		}
		in_off[q] = sent;
		out_off[q] = rows;
		sent += in_split[q];
		rows += out_split[q];
	}
	if (sent != pairs || rows > s->cap) {
		ctx->svc->log(ctx, "%03d reference: %lld rows out of %lld pairs, %lld rows in of %lld",
			      ctx->problem_id, (long long)sent, (long long)pairs, (long long)rows,
			      (long long)s->cap);
		return 1;
	}

	/* 4. dispatch, the MLP, back */
	PKB_CK(exchange(ctx, nt, n, s->send, in_off, in_split, s->recv, out_off, out_split));
	if (rows)
		PKB_CK((moe_fused_mlp<T, LORA_R>(ctx, s, h, st, rows)));
	PKB_CK(exchange(ctx, nt, n, s->y, out_off, out_split, s->ret, in_off, in_split));

	/* 5. combine */
	combine<T><<<pkb_ref_blocks(m * n, MOE_THREADS, 4096), MOE_THREADS, 0, st>>>(
		(const T *)s->ret, (const T *)s->wts, s->row, (T *)ctx->out[0].data, m, n);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

#endif /* PKB_MOE_FUSED_CUH */
