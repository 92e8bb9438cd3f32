/*
 * 068_gnn_sparse_feature_fetch_projection reference: the original's
 * owner-routed fetch -- ids to their owners and rows back by grouped
 * ncclSend/ncclRecv in fixed-size slots -- then the query order restored
 * and one cuBLAS GEMM.
 *
 * 1. owner = min(id / shard, W-1) with a histogram; CUB DeviceRadixSort
 *    (stable) of (owner, i): each owner's queries in query order.
 * 2. Slot d = [count, P ids] (P = 2 ceil(q/W), the most one rank asks
 *    another for) to every rank d (this one too), one NCCL group.
 * 3. The owner gathers row id - rank*shard of its shard for request j of
 *    source s into reply slot s, place j; P rows a slot go back in a second
 *    group.
 * 4. Sorted entry k (owner d, query i, place j in d's group): emb[i] =
 *    back[d][j] -- the original's gathered[argsort(sort_idx)].
 * 5. out = emb @ proj_matrix: cublasGemmEx, fp32 accumulation, one
 *    rounding to T.
 *
 * Why fixed-size slots: the original's splits come from .tolist() of the
 * exchanged counts, a device-to-host round trip per call that stalls the
 * stream and cannot be captured in a CUDA graph. The slots move P = 2x the
 * mean per pair, in two NCCL groups.
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
	int64_t q, e, shard, cap;
	int64_t units;        /* 16-byte units a row: E*e is a multiple of 16 */
	int bits;
	int *key, *key_sorted, *pos, *pos_sorted;
	int64_t *hist;        /* [2W]: counts, group starts */
	int64_t *send_ids, *recv_ids;   /* [W][P + 1] */
	uint4 *reply, *back;  /* [W][P] rows */
	uint4 *emb;           /* (q, E) */
	void *temp;
	size_t temp_bytes;
	struct pkb_ref_blas blas;
};

__global__ void owners(const int64_t *ids, int64_t q, int64_t shard, int w, int *key,
		       int *pos, int64_t *hist)
{
	int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (i >= q)
		return;
	int64_t o = ids[i] / shard;
	o = o < w - 1 ? o : w - 1;
	key[i] = (int)o;
	pos[i] = (int)i;
	atomicAdd((unsigned long long *)&hist[o], 1ull);
}

__global__ void starts(int64_t *hist, int w, int64_t *send_ids, int64_t slot)
{
	int64_t run = 0;
	for (int d = 0; d < w; d++) {
		hist[w + d] = run;
		run += hist[d];
		send_ids[d * slot] = hist[d];
	}
}

__global__ void pack(const int64_t *ids, const int *key, const int *pos, const int64_t *hist,
		     int64_t q, int64_t cap, int w, int64_t *send_ids)
{
	int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (k >= q)
		return;
	int d = key[k];
	send_ids[d * (cap + 1) + 1 + (k - hist[w + d])] = ids[pos[k]];
}

/* request j of source s: its row of this rank's shard at reply[s][j] */
__global__ void serve(const int64_t *recv_ids, const uint4 *shard_rows, int64_t shard,
		      int me, int64_t cap, int w, int64_t units, uint4 *reply)
{
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < w * cap * units;
	     k += (int64_t)gridDim.x * THREADS) {
		int64_t r = k / units, u = k % units, s = r / cap, j = r % cap;
		const int64_t *slot = recv_ids + s * (cap + 1);
		if (j >= slot[0])
			continue;
		int64_t local = slot[1 + j] - me * shard;
		reply[k] = shard_rows[local * units + u];
	}
}

__global__ void restore(const uint4 *back, const int *key, const int *pos,
			const int64_t *hist, int64_t q, int64_t cap, int w, int64_t units,
			uint4 *emb)
{
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < q * units;
	     k += (int64_t)gridDim.x * THREADS) {
		int64_t t = k / units, u = k % units;
		int d = key[t];
		int64_t j = t - hist[w + d];
		emb[(int64_t)pos[t] * units + u] = back[(d * cap + j) * units + u];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	int64_t w = ctx->world;
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	s->shard = ctx->in[0].shape[0];
	s->e = ctx->in[0].shape[1];
	s->q = ctx->in[1].numel;
	s->cap = 2 * ((s->q + w - 1) / w);
	s->units = (int64_t)(s->e * pkb_dtype_size(ctx->in[0].dtype) / 16);
	while ((1 << s->bits) < w)
		s->bits++;
	s->bits = s->bits > 0 ? s->bits : 1;
	size_t row = (size_t)s->units * 16, ni = w * (s->cap + 1) * sizeof(int64_t);
	PKB_CK_CUDA(ctx, cudaMalloc(&s->key, s->q * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->key_sorted, s->q * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->pos, s->q * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->pos_sorted, s->q * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->hist, 2 * w * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send_ids, ni));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv_ids, ni));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->reply, w * s->cap * row));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->back, w * s->cap * row));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->emb, s->q * row));
	/* slots are sent whole: no uninitialised bytes go on the wire */
	PKB_CK_CUDA(ctx, cudaMemset(s->send_ids, 0, ni));
	PKB_CK_CUDA(ctx, cudaMemset(s->reply, 0, w * s->cap * row));
	PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(NULL, s->temp_bytes, (int *)NULL,
							 (int *)NULL, (int *)NULL, (int *)NULL,
							 (int)s->q, 0, s->bits));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->temp, s->temp_bytes));
	return pkb_ref_blas_init(ctx, &s->blas);
}

static int run(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	const int64_t *ids = (const int64_t *)ctx->in[1].data;
	int w = ctx->world, me = ctx->rank;
	int64_t cap = s->cap, units = s->units;

	PKB_CK_CUDA(ctx, cudaMemsetAsync(s->hist, 0, w * sizeof(int64_t), st));
	owners<<<pkb_ref_blocks(s->q, THREADS, 1u << 20), THREADS, 0, st>>>(
		ids, s->q, s->shard, w, s->key, s->pos, s->hist);
	PKB_CK_LAUNCH(ctx);
	size_t tb = s->temp_bytes;
	PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(s->temp, tb, s->key, s->key_sorted,
							 s->pos, s->pos_sorted, (int)s->q, 0,
							 s->bits, st));
	starts<<<1, 1, 0, st>>>(s->hist, w, s->send_ids, cap + 1);
	PKB_CK_LAUNCH(ctx);
	pack<<<pkb_ref_blocks(s->q, THREADS, 1u << 20), THREADS, 0, st>>>(
		ids, s->key_sorted, s->pos_sorted, s->hist, s->q, cap, w, s->send_ids);
	PKB_CK_LAUNCH(ctx);

	/* pair up with me+k sending and me-k receiving: every step is a
	   permutation */
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int k = 0; k < w; k++) {
		int to = (me + k) % w, from = (me - k + w) % w;
		PKB_CK_NCCL(ctx, ncclSend(s->send_ids + to * (cap + 1), cap + 1, ncclInt64, to,
					  comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(s->recv_ids + from * (cap + 1), cap + 1, ncclInt64,
					  from, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	serve<<<pkb_ref_blocks(w * cap * units, THREADS, 4096), THREADS, 0, st>>>(
		s->recv_ids, (const uint4 *)ctx->in[0].data, s->shard, me, cap, w, units,
		s->reply);
	PKB_CK_LAUNCH(ctx);
	size_t slot = (size_t)(cap * units * 16);
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int k = 0; k < w; k++) {
		int to = (me + k) % w, from = (me - k + w) % w;
		PKB_CK_NCCL(ctx, ncclSend((const char *)s->reply + to * slot, slot, ncclUint8, to,
					  comm, st));
		PKB_CK_NCCL(ctx, ncclRecv((char *)s->back + from * slot, slot, ncclUint8, from,
					  comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	restore<<<pkb_ref_blocks(s->q * units, THREADS, 4096), THREADS, 0, st>>>(
		s->back, s->key_sorted, s->pos_sorted, s->hist, s->q, cap, w, units, s->emb);
	PKB_CK_LAUNCH(ctx);

	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 0, s->q, s->e, s->e, 1.0, s->emb, s->e,
			       ctx->in[2].data, s->e, 0.0, ctx->out[0].data, s->e,
			       ctx->in[0].dtype));
	return 0;
}

static void release(struct state *s)
{
	void *p[] = { s->key, s->key_sorted, s->pos, s->pos_sorted, s->hist, s->send_ids,
		      s->recv_ids, s->reply, s->back, s->emb, s->temp };
	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
		cudaFree(p[i]);
	pkb_ref_blas_fini(&s->blas);
}

PKB_REF_RUN_FINI(struct state, run, release)
