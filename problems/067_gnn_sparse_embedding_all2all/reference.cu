/*
 * 067_gnn_sparse_embedding_all2all reference: a stable sort by owner, then
 * the ids and rows to their owners by grouped ncclSend/ncclRecv in
 * fixed-size slots, then the received groups packed in source order.
 *
 * 1. owner = idx % W and a histogram; CUB DeviceRadixSort (stable) of
 *    (owner, i): each owner's entries in this rank's order.
 * 2. Slot d holds [count, P ids] and P rows: the most one rank sends
 *    another (the problem's P).
 * 3. One NCCL group: both slots to every rank d (this one too, as
 *    all_to_all_single does), both slots from every rank s.
 * 4. Output entry p: the source s whose group holds it (a scan of the W
 *    counts), the id and the row from s's slot; -1 and 0 past R.
 *
 * Why fixed-size slots: the original's splits come from .tolist() of the
 * exchanged counts, a device-to-host round trip per call that stalls the
 * stream and cannot be captured in a CUDA graph. The slots move P = 2x
 * the mean per pair, in one NCCL group.
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
#define MAX_WORLD 64

struct state {
	int64_t nnz, cap;     /* cap = P */
	size_t row;           /* bytes */
	int bits;
	int *key, *key_sorted, *pos, *pos_sorted;
	int64_t *hist;        /* [2W]: counts, then group starts */
	int64_t *send_idx, *recv_idx;   /* [W][P + 1]: count, ids */
	char *send_val, *recv_val;      /* [W][P] rows */
	void *temp;
	size_t temp_bytes;
};

__global__ void owners(const int64_t *idx, int64_t nnz, int w, int *key, int *pos,
		       int64_t *hist)
{
	int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (i >= nnz)
		return;
	int o = (int)(idx[i] % w);
	key[i] = o;
	pos[i] = (int)i;
	atomicAdd((unsigned long long *)&hist[o], 1ull);
}

__global__ void starts(int64_t *hist, int w, int64_t *send_idx, int64_t slot)
{
	int64_t run = 0;
	for (int d = 0; d < w; d++) {
		hist[w + d] = run;
		run += hist[d];
		send_idx[d * slot] = hist[d];
	}
}

/* sorted entry q: its id and row into slot key[q], place q - start */
template <typename U>
__global__ void pack(const int64_t *idx, const U *value, const int *key, const int *pos,
		     const int64_t *hist, int64_t nnz, int64_t cap, int w, int64_t units,
		     int64_t *send_idx, U *send_val)
{
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < nnz * units;
	     k += (int64_t)gridDim.x * THREADS) {
		int64_t q = k / units, u = k % units;
		int d = key[q], i = pos[q];
		int64_t j = q - hist[w + d];
		if (u == 0)
			send_idx[d * (cap + 1) + 1 + j] = idx[i];
		send_val[(d * cap + j) * units + u] = value[i * units + u];
	}
}

template <typename U>
__global__ void unpack(const int64_t *recv_idx, const U *recv_val, int64_t cap, int w,
		       int64_t units, int64_t *out_idx, U *out_val)
{
	__shared__ int64_t first[MAX_WORLD + 1];
	if (threadIdx.x == 0) {
		first[0] = 0;
		for (int s = 0; s < w; s++)
			first[s + 1] = first[s] + recv_idx[s * (cap + 1)];
	}
	__syncthreads();
	int64_t r = first[w], rows = (int64_t)w * cap;
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < rows * units;
	     k += (int64_t)gridDim.x * THREADS) {
		int64_t p = k / units, u = k % units;
		if (p >= r) {
			if (u == 0)
				out_idx[p] = -1;
			out_val[k] = U{};
			continue;
		}
		int s = 0;
		while (first[s + 1] <= p)
			s++;
		int64_t j = p - first[s];
		if (u == 0)
			out_idx[p] = recv_idx[s * (cap + 1) + 1 + j];
		out_val[k] = recv_val[(s * cap + j) * units + u];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_max_world(ctx, MAX_WORLD));
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	int64_t w = ctx->world;
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[1].dtype));
	s->nnz = ctx->in[0].numel;
	s->cap = ctx->out[0].numel / w;
	s->row = ctx->in[1].bytes / s->nnz;
	while ((1 << s->bits) < w)
		s->bits++;
	s->bits = s->bits > 0 ? s->bits : 1;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->key, s->nnz * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->key_sorted, s->nnz * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->pos, s->nnz * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->pos_sorted, s->nnz * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->hist, 2 * w * sizeof(int64_t)));
	size_t ni = w * (s->cap + 1) * sizeof(int64_t), nv = w * s->cap * s->row;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send_idx, ni));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv_idx, ni));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send_val, nv));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv_val, nv));
	/* slots are sent whole: no uninitialised bytes go on the wire */
	PKB_CK_CUDA(ctx, cudaMemset(s->send_idx, 0, ni));
	PKB_CK_CUDA(ctx, cudaMemset(s->send_val, 0, nv));
	PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(NULL, s->temp_bytes, (int *)NULL,
							 (int *)NULL, (int *)NULL, (int *)NULL,
							 (int)s->nnz, 0, s->bits));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->temp, s->temp_bytes));
	return 0;
}

template <typename U>
static int launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	const int64_t *idx = (const int64_t *)ctx->in[0].data;
	int w = ctx->world, me = ctx->rank;
	int64_t units = (int64_t)(s->row / sizeof(U)), cap = s->cap;

	PKB_CK_CUDA(ctx, cudaMemsetAsync(s->hist, 0, w * sizeof(int64_t), st));
	owners<<<pkb_ref_blocks(s->nnz, THREADS, 1u << 20), THREADS, 0, st>>>(
		idx, s->nnz, w, s->key, s->pos, s->hist);
	PKB_CK_LAUNCH(ctx);
	size_t tb = s->temp_bytes;
	PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(s->temp, tb, s->key, s->key_sorted,
							 s->pos, s->pos_sorted, (int)s->nnz, 0,
							 s->bits, st));
	starts<<<1, 1, 0, st>>>(s->hist, w, s->send_idx, cap + 1);
	PKB_CK_LAUNCH(ctx);
	pack<U><<<pkb_ref_blocks(s->nnz * units, THREADS, 2048), THREADS, 0, st>>>(
		idx, (const U *)ctx->in[1].data, s->key_sorted, s->pos_sorted, s->hist, s->nnz,
		cap, w, units, s->send_idx, (U *)s->send_val);
	PKB_CK_LAUNCH(ctx);

	size_t slot_val = (size_t)cap * s->row;
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int k = 0; k < w; k++) {
		/* pair up with me+k sending and me-k receiving: every step is a
		   permutation */
		int to = (me + k) % w, from = (me - k + w) % w;
		PKB_CK_NCCL(ctx, ncclSend(s->send_idx + to * (cap + 1), cap + 1, ncclInt64, to,
					  comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(s->recv_idx + from * (cap + 1), cap + 1, ncclInt64,
					  from, comm, st));
		PKB_CK_NCCL(ctx, ncclSend(s->send_val + to * slot_val, slot_val, ncclUint8, to,
					  comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(s->recv_val + from * slot_val, slot_val, ncclUint8,
					  from, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());

	unpack<U><<<pkb_ref_blocks(w * cap * units, THREADS, 2048), THREADS, 0, st>>>(
		s->recv_idx, (const U *)s->recv_val, cap, w, units, (int64_t *)ctx->out[0].data,
		(U *)ctx->out[1].data);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s->row % 16 == 0)
		return launch<uint4>(ctx, s);
	if (s->row % 4 == 0)
		return launch<uint32_t>(ctx, s);
	return launch<uint16_t>(ctx, s);
}

static void release(struct state *s)
{
	void *p[] = { s->key, s->key_sorted, s->pos, s->pos_sorted, s->hist, s->send_idx,
		      s->recv_idx, s->send_val, s->recv_val, s->temp };
	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
		cudaFree(p[i]);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
