/*
 * 066_gnn_feature_exchange_all2all_backward reference: the rotated
 * all-to-all as one NCCL group of send/recv pairs, then the COO matrix
 * product as a sorted segment sum.
 *
 * 1. Rank j sends grad_output chunk (d - j) mod W to rank d and stores
 *    what arrives from rank s as chunk (s - j) mod W of `out` (065's
 *    exchange, the counts' roles swapped: both are [rpp]*W).
 * 2. CUB DeviceRadixSort (stable) of (ids, i): the rows of each seed,
 *    ascending -- the coalesced COO matrix (row ids[i], column i).
 * 3. Each seed's segment [lo, hi) by a binary search; one thread per
 *    (seed, column) adds its rows in fp32 in that order, 0 for a seed no
 *    id names.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include <cub/cub.cuh>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256

struct state {
	float *out;            /* (total, hidden): the exchanged rows */
	int *rows, *rows_sorted;
	int64_t *ids_sorted, *seg;   /* seg: [seed_size + 1] */
	int64_t rpp, total, hidden, seeds;
	int bits;
	void *temp;
	size_t temp_bytes;
};

__global__ void iota(int *rows, int64_t n)
{
	int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (i < n)
		rows[i] = (int)i;
}

/* seg[s] = the first sorted position with id >= s, s = 0 .. seeds */
__global__ void segments(const int64_t *ids_sorted, int64_t n, int64_t seeds, int64_t *seg)
{
	int64_t s = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (s > seeds)
		return;
	int64_t lo = 0, hi = n;
	while (lo < hi) {
		int64_t mid = (lo + hi) / 2;
		if (ids_sorted[mid] < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	seg[s] = lo;
}

__global__ void segment_sum(const float *out, const int *rows_sorted, const int64_t *seg,
			    int64_t seeds, int64_t hidden, float *grad)
{
	int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (k >= seeds * hidden)
		return;
	int64_t s = k / hidden, h = k % hidden;
	float acc = 0.f;
	for (int64_t q = seg[s]; q < seg[s + 1]; q++)
		acc += out[rows_sorted[q] * hidden + h];
	grad[k] = acc;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	s->rpp = (int64_t)pkb_param_get(ctx, "counts_sent", 0);
	s->seeds = (int64_t)pkb_param_get(ctx, "seed_size", 0);
	s->total = ctx->in[0].shape[0];
	s->hidden = ctx->in[0].shape[1];
	if (ctx->in[0].dtype != PKB_FP32 || s->rpp * ctx->world != s->total ||
	    s->seeds != ctx->out[0].shape[0]) {
		ctx->svc->log(ctx, "066 reference: shapes or parameters do not match");
		return 1;
	}
	while ((1ll << s->bits) < s->seeds)
		s->bits++;
	s->bits = s->bits > 0 ? s->bits : 1;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->out, ctx->in[0].bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->rows, s->total * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->rows_sorted, s->total * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->ids_sorted, s->total * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->seg, (s->seeds + 1) * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(NULL, s->temp_bytes, (int64_t *)NULL,
							 (int64_t *)NULL, (int *)NULL,
							 (int *)NULL, (int)s->total, 0, s->bits));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->temp, s->temp_bytes));
	return 0;
}

static int run(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	const float *grad_output = (const float *)ctx->in[0].data;
	const int64_t *ids = (const int64_t *)ctx->in[1].data;
	int w = ctx->world, me = ctx->rank;
	size_t chunk = (size_t)(s->rpp * s->hidden);

	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int k = 0; k < w; k++) {
		/* pair up with me+k sending and me-k receiving: every step is a
		   permutation */
		int to = (me + k) % w, from = (me - k + w) % w;
		PKB_CK_NCCL(ctx, ncclSend(grad_output + (size_t)((to - me + w) % w) * chunk, chunk,
					  ncclFloat32, to, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(s->out + (size_t)((from - me + w) % w) * chunk, chunk,
					  ncclFloat32, from, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());

	iota<<<pkb_ref_blocks(s->total, THREADS, 1u << 20), THREADS, 0, st>>>(s->rows, s->total);
	PKB_CK_LAUNCH(ctx);
	size_t tb = s->temp_bytes;
	PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(s->temp, tb, ids, s->ids_sorted, s->rows,
							 s->rows_sorted, (int)s->total, 0,
							 s->bits, st));
	segments<<<pkb_ref_blocks(s->seeds + 1, THREADS, 1u << 20), THREADS, 0, st>>>(
		s->ids_sorted, s->total, s->seeds, s->seg);
	PKB_CK_LAUNCH(ctx);
	segment_sum<<<pkb_ref_blocks(s->seeds * s->hidden, THREADS, 1u << 20), THREADS, 0, st>>>(
		s->out, s->rows_sorted, s->seg, s->seeds, s->hidden, (float *)ctx->out[0].data);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	cudaFree(s->out);
	cudaFree(s->rows);
	cudaFree(s->rows_sorted);
	cudaFree(s->ids_sorted);
	cudaFree(s->seg);
	cudaFree(s->temp);
}

PKB_REF_RUN_FINI(struct state, run, release)
