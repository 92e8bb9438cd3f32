/*
 * 067_gnn_sparse_embedding_all2all, known-good: a stable sort by owner,
 * then every entry pushed straight into its owner's symmetric receive
 * area, meet, pack the groups in source order.
 *
 * The receive area of each rank (two halves, by call parity) has a count
 * and P places for every source (P = the most one rank sends another: the
 * output has W*P rows).
 * 1. owner = idx % W with a histogram; CUB DeviceRadixSort (stable) of
 *    (owner, i); one thread writes this rank's count into every owner's
 *    area, and where each group starts.
 * 2. A grid stores sorted entry q -- its id and row -- at place
 *    q - start(owner) of this rank's section of the owner's area, over
 *    NVLink.
 * 3. One block meets every rank (pkb_barrier_block); a grid packs the W
 *    sections by source (a scan of the W counts) into the outputs, -1 and
 *    zero rows past R.
 *
 * Back to back: a rank writes into a half again two calls later, after the
 * barrier of the call in between, which the owner reaches only once its
 * step 3 of this call is done.
 */
#define CCCL_DISABLE_NVTX   /* CUB's NVTX ranges would dlopen (docs/ABI.md) */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <cub/cub.cuh>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define MEET 1024
#define MAX_WORLD 64
#define HEAD (MAX_WORLD * 8)   /* the counts, then ids [W][P], then rows [W][P] */

struct state {
	pkb_symm area;
	size_t half;
	uint32_t *calls;
	size_t *off;
	int64_t nnz, cap;
	size_t row;
	int bits;
	int *key, *key_sorted, *pos, *pos_sorted;
	int64_t *hist;        /* [2W]: counts, group starts */
	void *temp;
	size_t temp_bytes;
};

__global__ void pick_half(uint32_t *calls, size_t half, size_t *off)
{
	size_t o = pkb_call_half(calls, half);
	if (threadIdx.x == 0)
		*off = o;
}

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

/* group starts, and this rank's count into every owner's area */
__global__ void starts(int64_t *hist, char *const *areas, const size_t *off, int me, int w)
{
	int64_t run = 0;
	for (int d = 0; d < w; d++) {
		hist[w + d] = run;
		run += hist[d];
		((int64_t *)(areas[d] + *off))[me] = hist[d];
	}
}

template <typename U>
__global__ void push(const int64_t *idx, const U *value, const int *key, const int *pos,
		     const int64_t *hist, char *const *areas, const size_t *off, int me,
		     int w, int64_t nnz, int64_t cap, int64_t units)
{
	size_t o = *off;
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < nnz * units;
	     k += (int64_t)gridDim.x * THREADS) {
		int64_t q = k / units, u = k % units;
		int d = key[q], i = pos[q];
		int64_t at = (int64_t)me * cap + q - hist[w + d];
		int64_t *ids = (int64_t *)(areas[d] + o + HEAD);
		U *rows = (U *)(ids + w * cap);
		if (u == 0)
			ids[at] = idx[i];
		rows[at * units + u] = value[i * units + u];
	}
}

__global__ void meet(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

template <typename U>
__global__ void unpack(const char *mine, const size_t *off, int64_t cap, int w,
		       int64_t units, int64_t *out_idx, U *out_val)
{
	__shared__ int64_t first[MAX_WORLD + 1];
	const int64_t *counts = (const int64_t *)(mine + *off);
	const int64_t *ids = (const int64_t *)(mine + *off + HEAD);
	const U *rows = (const U *)(ids + w * cap);
	if (threadIdx.x == 0) {
		first[0] = 0;
		for (int s = 0; s < w; s++)
			first[s + 1] = first[s] + counts[s];
	}
	__syncthreads();
	int64_t r = first[w], n = (int64_t)w * cap;
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < n * units;
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
		int64_t at = (int64_t)s * cap + p - first[s];
		if (u == 0)
			out_idx[p] = ids[at];
		out_val[k] = rows[at * units + u];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int64_t w = ctx->world;
	if (w > MAX_WORLD)
		return 1;
	s->nnz = ctx->in[0].numel;
	s->cap = ctx->out[0].numel / w;
	s->row = ctx->in[1].bytes / s->nnz;
	while ((1 << s->bits) < w)
		s->bits++;
	s->bits = s->bits > 0 ? s->bits : 1;
	s->half = HEAD + w * s->cap * (sizeof(int64_t) + s->row);
	s->half = (s->half + 255) & ~(size_t)255;
	if (cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, sizeof(size_t)) != cudaSuccess ||
	    cudaMalloc(&s->key, s->nnz * sizeof(int)) != cudaSuccess ||
	    cudaMalloc(&s->key_sorted, s->nnz * sizeof(int)) != cudaSuccess ||
	    cudaMalloc(&s->pos, s->nnz * sizeof(int)) != cudaSuccess ||
	    cudaMalloc(&s->pos_sorted, s->nnz * sizeof(int)) != cudaSuccess ||
	    cudaMalloc(&s->hist, 2 * w * sizeof(int64_t)) != cudaSuccess)
		return 1;
	if (cub::DeviceRadixSort::SortPairs(NULL, s->temp_bytes, (int *)NULL, (int *)NULL,
					    (int *)NULL, (int *)NULL, (int)s->nnz, 0, s->bits) ||
	    cudaMalloc(&s->temp, s->temp_bytes) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->area);
}

template <typename U>
static int launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	char *const *areas = (char *const *)s->area.peers_dev;
	const int64_t *idx = (const int64_t *)ctx->in[0].data;
	int w = ctx->world, me = ctx->rank;
	int64_t units = (int64_t)(s->row / sizeof(U));
	int64_t n = s->nnz * units, m = w * s->cap * units;
	int g1 = (int)((n + THREADS - 1) / THREADS), g2 = (int)((m + THREADS - 1) / THREADS);
	g1 = g1 > 2048 ? 2048 : g1;
	g2 = g2 > 2048 ? 2048 : g2;

	pick_half<<<1, 32, 0, st>>>(s->calls, s->half, s->off);
	if (cudaMemsetAsync(s->hist, 0, w * sizeof(int64_t), st) != cudaSuccess)
		return 1;
	owners<<<(unsigned)((s->nnz + THREADS - 1) / THREADS), THREADS, 0, st>>>(
		idx, s->nnz, w, s->key, s->pos, s->hist);
	size_t tb = s->temp_bytes;
	if (cub::DeviceRadixSort::SortPairs(s->temp, tb, s->key, s->key_sorted, s->pos,
					    s->pos_sorted, (int)s->nnz, 0, s->bits, st))
		return 1;
	starts<<<1, 1, 0, st>>>(s->hist, areas, s->off, me, w);
	push<U><<<g1, THREADS, 0, st>>>(idx, (const U *)ctx->in[1].data, s->key_sorted,
					s->pos_sorted, s->hist, areas, s->off, me, w, s->nnz,
					s->cap, units);
	meet<<<1, MEET, 0, st>>>(ctx->dev);
	unpack<U><<<g2, THREADS, 0, st>>>((const char *)s->area.local, s->off, s->cap, w, units,
					  (int64_t *)ctx->out[0].data, (U *)ctx->out[1].data);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
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

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		void *p[] = { s->calls, s->off, s->key, s->key_sorted, s->pos, s->pos_sorted,
			      s->hist, s->temp };
		for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
			cudaFree(p[i]);
	}
	free(s);
	return 0;
}
