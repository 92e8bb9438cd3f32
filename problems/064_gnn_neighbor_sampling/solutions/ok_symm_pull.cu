/*
 * 064_gnn_neighbor_sampling, known-good: every owner publishes its nodes'
 * neighbour lists, and each rank pulls just the neighbours it samples.
 *
 * colptr and node_to_rank are the same on every rank, so a rank knows every
 * frontier node's degree, take and edge ids itself: only the neighbour ids
 * of nodes owned by peers must cross, and no request need travel.
 * 1. One block picks this call's half of the symmetric slot (pkb_call_half);
 *    a grid copies the lists of the nodes this rank owns into it, at their
 *    CSC positions (a warp a node); one block meets every rank.
 * 2. Per hop (fanout k): take[i] = min(k, deg front[i]), a CUB scan of the
 *    takes (where node i's neighbours go), then each frontier node's first
 *    take neighbours pulled from its owner's slot over NVLink, with their
 *    destination and edge ids. New nodes in order of first occurrence: an
 *    atomicMin of the position per node not yet sampled, a flag where the
 *    position is its node's first, a CUB scan of the flags; the flagged
 *    ids are the next frontier.
 * 3. row / col = the local index of each sampled neighbour / destination;
 *    -1 past U and E.
 *
 * Back to back: a rank writes a half again two calls later, after the
 * barrier of the call in between, which every peer reaches only once its
 * pulls of this call are done (stream order).
 */
#define CCCL_DISABLE_NVTX   /* CUB's NVTX ranges would dlopen (docs/ABI.md) */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <cub/cub.cuh>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define HOPS 2
#define THREADS 256
#define MEET 1024   /* the meeting block: blockDim >= W */

enum { C_U, C_E, C_F, C_HOP, C_COUNT };

struct state {
	pkb_symm slot;        /* two halves of [16 nn] int64: the owned lists */
	size_t half;
	uint32_t *calls;
	size_t *off_half;     /* this call's half */
	int k[HOPS];
	int64_t nn, ne, s, cap[HOPS], emax, capmax;
	int64_t *cnt;
	int *assoc, *first;
	int64_t *front, *take, *off, *nbr, *dst;
	int *flag, *pos;
	void *temp;
	size_t temp_bytes;
};

__global__ void pick_half(uint32_t *calls, size_t half, size_t *off)
{
	size_t o = pkb_call_half(calls, half);
	if (threadIdx.x == 0)
		*off = o;
}

/* a warp per node: this rank's lists into its slot, at their positions */
__global__ void publish(const int64_t *colptr, const int64_t *col, const int64_t *owner,
			char *const *slots, const size_t *off, int rank, int64_t nn)
{
	int lane = threadIdx.x & 31;
	int64_t *mine = (int64_t *)(slots[rank] + *off);
	for (int64_t v = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; v < nn;
	     v += (int64_t)gridDim.x * blockDim.x / 32) {
		if (owner[v] != rank)
			continue;
		for (int64_t e = colptr[v] + lane; e < colptr[v + 1]; e += 32)
			mine[e] = col[e];
	}
}

__global__ void meet(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

__global__ void start(const int64_t *seeds, int64_t s, int64_t *node, int *assoc,
		      int64_t *front, int64_t *cnt)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < s;
	     i += (int64_t)gridDim.x * blockDim.x) {
		node[i] = seeds[i];
		front[i] = seeds[i];
		assoc[seeds[i]] = (int)i;
	}
	if (blockIdx.x == 0 && threadIdx.x == 0) {
		cnt[C_U] = s;
		cnt[C_E] = 0;
		cnt[C_F] = s;
	}
}

__global__ void takes(const int64_t *front, const int64_t *colptr, const int64_t *cnt,
		      int64_t cap, int k, int64_t *take)
{
	int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (i >= cap)
		return;
	int64_t t = 0;
	if (i < cnt[C_F]) {
		int64_t v = front[i], deg = colptr[v + 1] - colptr[v];
		t = deg < k ? deg : k;
	}
	take[i] = t;
}

/* node i's neighbours from its owner's slot, at their scanned place */
__global__ void pull(const int64_t *front, const int64_t *take, const int64_t *off,
		     const int64_t *colptr, const int64_t *owner, char *const *slots,
		     const size_t *half, int64_t *cnt, int64_t cap, int64_t *nbr,
		     int64_t *dst, int64_t *edge)
{
	int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (i == 0)
		cnt[C_HOP] = off[cap - 1] + take[cap - 1];
	if (i >= cap || i >= cnt[C_F])
		return;
	int64_t v = front[i], first = colptr[v], p = cnt[C_E] + off[i];
	const int64_t *lists = (const int64_t *)(slots[owner[v]] + *half);
	for (int64_t u = 0; u < take[i]; u++) {
		nbr[p + u] = lists[first + u];
		dst[p + u] = v;
		edge[p + u] = first + u;
	}
}

__global__ void mark(const int64_t *nbr, const int64_t *cnt, const int *assoc, int *first,
		     int64_t n)
{
	int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (p >= n || p >= cnt[C_HOP])
		return;
	int64_t v = nbr[cnt[C_E] + p];
	if (assoc[v] < 0)
		atomicMin(&first[v], (int)p);
}

__global__ void flags(const int64_t *nbr, const int64_t *cnt, const int *assoc,
		      const int *first, int64_t n, int *flag)
{
	int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (p >= n)
		return;
	int f = 0;
	if (p < cnt[C_HOP]) {
		int64_t v = nbr[cnt[C_E] + p];
		f = assoc[v] < 0 && first[v] == (int)p;
	}
	flag[p] = f;
}

__global__ void append(const int64_t *nbr, const int64_t *cnt, const int *flag,
		       const int *pos, int64_t n, int64_t *node, int *assoc, int64_t *front)
{
	int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (p >= n || !flag[p])
		return;
	int64_t v = nbr[cnt[C_E] + p], u = cnt[C_U] + pos[p];
	node[u] = v;
	assoc[v] = (int)u;
	front[pos[p]] = v;
}

__global__ void advance(int64_t *cnt, const int *flag, const int *pos, int64_t n)
{
	int64_t nf = pos[n - 1] + flag[n - 1];
	cnt[C_U] += nf;
	cnt[C_E] += cnt[C_HOP];
	cnt[C_F] = nf;
}

__global__ void finish(const int64_t *nbr, const int64_t *dst, const int *assoc,
		       const int64_t *cnt, int64_t emax, int64_t umax, int64_t *node,
		       int64_t *row, int64_t *col, int64_t *edge)
{
	int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	int64_t ne = cnt[C_E], nu = cnt[C_U];
	if (e < emax) {
		row[e] = e < ne ? assoc[nbr[e]] : -1;
		col[e] = e < ne ? assoc[dst[e]] : -1;
		if (e >= ne)
			edge[e] = -1;
	}
	if (e < umax && e >= nu)
		node[e] = -1;
}

static unsigned grid(int64_t n)
{
	return (unsigned)((n + THREADS - 1) / THREADS);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->world > MEET)
		return 1;
	s->nn = ctx->in[3].numel;
	s->ne = ctx->in[2].numel;
	s->s = ctx->in[0].numel;
	s->k[0] = (int)pkb_param_get(ctx, "fanouts_0", 10);
	s->k[1] = (int)pkb_param_get(ctx, "fanouts_1", 5);
	int64_t cap = s->s;
	for (int h = 0; h < HOPS; h++) {
		s->cap[h] = cap;
		cap *= s->k[h];
		s->emax += cap;
	}
	s->capmax = cap > s->cap[HOPS - 1] ? cap : s->cap[HOPS - 1];
	if (s->emax != ctx->out[1].numel || s->s + s->emax != ctx->out[0].numel)
		return 1;
	int64_t cm = s->capmax;
	s->half = (size_t)s->ne * sizeof(int64_t);
	if (cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off_half, sizeof(size_t)) != cudaSuccess ||
	    cudaMalloc(&s->cnt, C_COUNT * sizeof(int64_t)) != cudaSuccess ||
	    cudaMalloc(&s->assoc, s->nn * sizeof(int)) != cudaSuccess ||
	    cudaMalloc(&s->first, s->nn * sizeof(int)) != cudaSuccess ||
	    cudaMalloc(&s->front, cm * sizeof(int64_t)) != cudaSuccess ||
	    cudaMalloc(&s->take, cm * sizeof(int64_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, cm * sizeof(int64_t)) != cudaSuccess ||
	    cudaMalloc(&s->nbr, s->emax * sizeof(int64_t)) != cudaSuccess ||
	    cudaMalloc(&s->dst, s->emax * sizeof(int64_t)) != cudaSuccess ||
	    cudaMalloc(&s->flag, cm * sizeof(int)) != cudaSuccess ||
	    cudaMalloc(&s->pos, cm * sizeof(int)) != cudaSuccess)
		return 1;
	size_t a = 0, b = 0;
	if (cub::DeviceScan::ExclusiveSum(NULL, a, (int64_t *)NULL, (int64_t *)NULL, (int)cm) ||
	    cub::DeviceScan::ExclusiveSum(NULL, b, (int *)NULL, (int *)NULL, (int)cm))
		return 1;
	s->temp_bytes = a > b ? a : b;
	if (cudaMalloc(&s->temp, s->temp_bytes) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->slot);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	char *const *slots = (char *const *)s->slot.peers_dev;
	const int64_t *seeds = (const int64_t *)ctx->in[0].data;
	const int64_t *colptr = (const int64_t *)ctx->in[1].data;
	const int64_t *col = (const int64_t *)ctx->in[2].data;
	const int64_t *owner = (const int64_t *)ctx->in[3].data;
	int64_t *node = (int64_t *)ctx->out[0].data, *edge = (int64_t *)ctx->out[3].data;
	size_t tb;

	pick_half<<<1, 32, 0, st>>>(s->calls, s->half, s->off_half);
	publish<<<grid(32 * s->nn) < 2048 ? grid(32 * s->nn) : 2048, THREADS, 0, st>>>(
		colptr, col, owner, slots, s->off_half, ctx->rank, s->nn);
	meet<<<1, MEET, 0, st>>>(ctx->dev);
	if (cudaMemsetAsync(s->assoc, 0xff, s->nn * sizeof(int), st) != cudaSuccess)
		return 1;
	start<<<grid(s->s), THREADS, 0, st>>>(seeds, s->s, node, s->assoc, s->front, s->cnt);
	for (int h = 0; h < HOPS; h++) {
		int64_t cap = s->cap[h], n = cap * s->k[h];
		takes<<<grid(cap), THREADS, 0, st>>>(s->front, colptr, s->cnt, cap, s->k[h],
						     s->take);
		tb = s->temp_bytes;
		if (cub::DeviceScan::ExclusiveSum(s->temp, tb, s->take, s->off, (int)cap, st))
			return 1;
		pull<<<grid(cap), THREADS, 0, st>>>(s->front, s->take, s->off, colptr, owner,
						    slots, s->off_half, s->cnt, cap, s->nbr,
						    s->dst, edge);
		if (cudaMemsetAsync(s->first, 0x7f, s->nn * sizeof(int), st) != cudaSuccess)
			return 1;
		mark<<<grid(n), THREADS, 0, st>>>(s->nbr, s->cnt, s->assoc, s->first, n);
		flags<<<grid(n), THREADS, 0, st>>>(s->nbr, s->cnt, s->assoc, s->first, n, s->flag);
		tb = s->temp_bytes;
		if (cub::DeviceScan::ExclusiveSum(s->temp, tb, s->flag, s->pos, (int)n, st))
			return 1;
		append<<<grid(n), THREADS, 0, st>>>(s->nbr, s->cnt, s->flag, s->pos, n, node,
						    s->assoc, s->front);
		advance<<<1, 1, 0, st>>>(s->cnt, s->flag, s->pos, n);
	}
	int64_t umax = ctx->out[0].numel;
	finish<<<grid(umax), THREADS, 0, st>>>(s->nbr, s->dst, s->assoc, s->cnt, s->emax, umax,
					       node, (int64_t *)ctx->out[1].data,
					       (int64_t *)ctx->out[2].data, edge);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		void *p[] = { s->calls, s->off_half, s->cnt, s->assoc, s->first, s->front,
			      s->take, s->off, s->nbr, s->dst, s->flag, s->pos, s->temp };
		for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
			cudaFree(p[i]);
	}
	free(s);
	return 0;
}
