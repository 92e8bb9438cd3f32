/*
 * 032_fused_moe_fwd_lora reference: 031's reference (the original's
 * pipeline on the device, NCCL between the ranks, cuBLAS for the GEMMs, a
 * CUB radix sort for the permutation) with the LoRA terms in the MLP, each
 * of them a separate rounded tensor as the original's torch ops:
 *     g = T(T(x Wg^T + bg) + T(T(x A_g^T) B_g^T)), u likewise,
 *     h = T(T(silu(g)) * u), y = T(T(h Wd^T + bd) + T(T(h A_d^T) B_d^T)).
 *
 * 1. Router: logits = T(x Wr^T + br) (lib/linear.cuh: the bias added to
 *    cuBLAS's fp32 product before the one rounding), then per token the softmax in fp32
 *    rounded to T and the top 2 (ties: the lower expert), and this rank's
 *    count of (token, expert) pairs per expert.
 * 2. Permute: a stable radix sort of the 2M pairs by expert gives the
 *    original's expert-major order (tokens ascending within an expert);
 *    the token rows are packed in that order, so rank q's experts are one
 *    contiguous run of rows.
 * 3. Splits: ncclAllGather of the counts (W x 8 int64), copied to the host
 *    -- the original's .tolist(): one stream synchronisation a call. Rank
 *    q gets the rows of its experts, input_splits[q] = sum of our counts of
 *    q's experts; from rank p we get output_splits[p] = sum of p's counts
 *    of ours.
 * 4. Dispatch: grouped ncclSend/ncclRecv with those variable splits (the
 *    original's all_to_all_single); the MLP with its LoRA terms on every
 *    received row (cuBLAS, lib/linear.cuh for the biased layers; the sums,
 *    silu and product in two element-wise kernels); the rows back the same
 *    way with the splits swapped.
 * 5. Combine: out[t] = T(T(y_0 w_0) + T(y_1 w_1)), the original's weighted
 *    scatter_add into zeros (two terms: the order of the adds is moot).
 *
 * The original also regroups the received rows from (source rank, local
 * expert) to (local expert, source rank) and back again after the MLP: all
 * of a rank's experts run the same MLP, which sees rows one at a time, so
 * the regroup and its inverse cancel and are left out.
 *
 * The synchronisation in step 3 is the original's (Megatron's dispatcher
 * has the same one): NCCL takes counts from the host. It stalls the
 * stream for a round trip and cannot be captured in a CUDA graph: under
 * --measure-perf the launch gate expires on the first blocks and is left
 * off, and --timing graph refuses this reference. A candidate that keeps
 * the counts on the device owes it nothing.
 *
 * Scratch: the most rows a rank can receive is W*M*min(2, 8/W) (each
 * token sends at most min(2, 8/W) of its pairs to one rank): received
 * rows, the MLP outputs and the down-LoRA terms are sized for it, 16 MiB
 * each at M = N = 1024, bf16, W = 4 or 8.
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

PKB_SOLUTION;

#include "moe_fused.cuh"
#include "linear.cuh"   /* defines: linear */
/* defines: EXPERTS, TOP_K, MOE_THREADS, route, pack, combine, exchange */

#define INTER 128
#define LORA_R 8
#define THREADS MOE_THREADS   /* every kernel's block size, moe_fused.cuh's too */
#define MAX_WORLD EXPERTS

struct state {
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
	void *xa;             /* [cap][8] a LoRA A product (reused) */
	void *ld;             /* [cap][N] the down LoRA term */
};

/* g = T(gate + lg), u = T(up + lu), h = T(T(silu(g)) * u), silu(v) = v /
 * (1 + e^-v) in fp32 (-0 where e^-v overflows, as torch's) */
template <typename T>
__global__ void silu_mul(const T *gate, const T *lg, const T *up, const T *lu, T *h,
			 int64_t count)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < count;
	     i += (int64_t)gridDim.x * THREADS) {
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
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < count;
	     i += (int64_t)gridDim.x * THREADS)
		y[i] = pkb_from_float<T>(pkb_to_float(y[i]) + pkb_to_float(l[i]));
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
	s->w = ctx->world;
	if (s->w > MAX_WORLD || EXPERTS % s->w)
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
	PKB_CK_CUDA(ctx, cudaMalloc(&s->lg, s->cap * INTER * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->lu, s->cap * INTER * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->xa, s->cap * LORA_R * es));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->ld, s->cap * s->n * es));
	/* expert ids take 3 bits */
	PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(NULL, s->sort_bytes, s->keys,
		s->keys_sorted, s->pairs, s->pairs_sorted, (int)pairs, 0, 3));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->sort_tmp, s->sort_bytes));
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	pkb_dtype dt = ctx->in[0].dtype;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, dt, &nt));
	const T *x = (const T *)ctx->in[0].data;
	const T *wg = (const T *)ctx->in[3].data, *bg = (const T *)ctx->in[4].data;
	const T *wu = (const T *)ctx->in[5].data, *bu = (const T *)ctx->in[6].data;
	const T *wd = (const T *)ctx->in[7].data, *bd = (const T *)ctx->in[8].data;
	const void *ag = ctx->in[9].data, *bgl = ctx->in[10].data;
	const void *au = ctx->in[11].data, *bul = ctx->in[12].data;
	const void *ad = ctx->in[13].data, *bdl = ctx->in[14].data;
	int64_t m = s->m, n = s->n, pairs = m * TOP_K;
	cublasHandle_t h = s->blas.h;
	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));

	/* 1. router */
	PKB_CK(linear<T>(ctx, h, st, dt, m, EXPERTS, n, x, n, (const T *)ctx->in[1].data, n,
			 (const T *)ctx->in[2].data, s->acc, (T *)s->logits, EXPERTS, 0));
	PKB_CK_CUDA(ctx, cudaMemsetAsync(s->counts, 0, EXPERTS * sizeof(unsigned long long), st));
	route<T><<<pkb_ref_blocks(m, THREADS, 1u << 20), THREADS, 0, st>>>(
		(const T *)s->logits, (T *)s->wts, s->keys, s->pairs, s->counts, m);
	PKB_CK_LAUNCH(ctx);

	/* 2. permute, 3. splits (the host round trip) */
	PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(s->sort_tmp, s->sort_bytes, s->keys,
		s->keys_sorted, s->pairs, s->pairs_sorted, (int)pairs, 0, 3, st));
	pack<T><<<pkb_ref_blocks(pairs * n, THREADS, 4096), THREADS, 0, st>>>(
		x, s->pairs_sorted, s->row, (T *)s->send, pairs, n);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclAllGather(s->counts, s->gathered, EXPERTS, ncclInt64, comm, st));
	PKB_CK_CUDA(ctx, cudaMemcpyAsync(s->host, s->gathered, s->w * EXPERTS * sizeof(int64_t),
					 cudaMemcpyDeviceToHost, st));
	PKB_CK_CUDA(ctx, cudaStreamSynchronize(st));
	int64_t in_split[MAX_WORLD], in_off[MAX_WORLD], out_split[MAX_WORLD], out_off[MAX_WORLD];
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
		ctx->svc->log(ctx, "032 reference: %lld rows out of %lld pairs, %lld rows in of %lld",
			      (long long)sent, (long long)pairs, (long long)rows, (long long)s->cap);
		return 1;
	}

	/* 4. dispatch, the MLP, back */
	PKB_CK(exchange(ctx, nt, n, s->send, in_off, in_split, s->recv, out_off, out_split));
	if (rows) {
		const T *v = (const T *)s->recv;
		PKB_CK(linear<T>(ctx, h, st, dt, rows, INTER, n, v, n, wg, n, bg, s->acc,
				 (T *)s->gate, INTER, 0));
		PKB_CK(linear<T>(ctx, h, st, dt, rows, INTER, n, v, n, wu, n, bu, s->acc,
				 (T *)s->up, INTER, 0));
		/* the LoRA terms: T(T(v A^T) B^T) */
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, LORA_R, n, 1.0, s->recv, n, ag, n, 0.0,
				       s->xa, LORA_R, dt));
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, INTER, LORA_R, 1.0, s->xa, LORA_R, bgl,
				       LORA_R, 0.0, s->lg, INTER, dt));
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, LORA_R, n, 1.0, s->recv, n, au, n, 0.0,
				       s->xa, LORA_R, dt));
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, INTER, LORA_R, 1.0, s->xa, LORA_R, bul,
				       LORA_R, 0.0, s->lu, INTER, dt));
		silu_mul<T><<<pkb_ref_blocks(rows * INTER, THREADS, 2048), THREADS, 0, st>>>(
			(const T *)s->gate, (const T *)s->lg, (const T *)s->up, (const T *)s->lu,
			(T *)s->h, rows * INTER);
		PKB_CK_LAUNCH(ctx);
		PKB_CK(linear<T>(ctx, h, st, dt, rows, n, INTER, (const T *)s->h, INTER, wd, INTER,
				 bd, s->acc, (T *)s->y, n, 0));
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, LORA_R, INTER, 1.0, s->h, INTER, ad,
				       INTER, 0.0, s->xa, LORA_R, dt));
		PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, rows, n, LORA_R, 1.0, s->xa, LORA_R, bdl,
				       LORA_R, 0.0, s->ld, n, dt));
		add_into<T><<<pkb_ref_blocks(rows * n, THREADS, 2048), THREADS, 0, st>>>(
			(T *)s->y, (const T *)s->ld, rows * n);
		PKB_CK_LAUNCH(ctx);
	}
	PKB_CK(exchange(ctx, nt, n, s->y, out_off, out_split, s->ret, in_off, in_split));

	/* 5. combine */
	combine<T><<<pkb_ref_blocks(m * n, THREADS, 4096), THREADS, 0, st>>>(
		(const T *)s->ret, (const T *)s->wts, s->row, (T *)ctx->out[0].data, m, n);
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
		void *bufs[] = { s->logits, s->wts, s->keys, s->keys_sorted, s->pairs,
				 s->pairs_sorted, s->row, s->counts, s->gathered, s->sort_tmp,
				 s->send, s->ret, s->recv, s->y, s->gate, s->up, s->h, s->acc, s->lg,
				 s->lu, s->xa, s->ld };
		for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
			cudaFree(bufs[i]);
		cudaFreeHost(s->host);
	}
	free(s);
	return 0;
}
