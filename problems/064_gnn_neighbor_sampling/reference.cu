/*
 * 064_gnn_neighbor_sampling reference: the original's owner-routed
 * sampler on the device -- requests to the owners and their replies by
 * grouped ncclSend/ncclRecv in fixed-size slots, the rest in plain kernels
 * and CUB.
 *
 * Per hop (fanout k, frontier of f <= cap nodes, cap = S, then k1 S):
 * 1. plan: take[i] = min(k, deg front[i]) and the owner of each frontier
 *    node (the sentinel W past f); CUB ExclusiveSum of take: where node i's
 *    neighbours go; CUB DeviceRadixSort (stable) of (owner, i): the frontier
 *    grouped by owner, frontier order kept within a group (the original's
 *    nonzero per rank).
 * 2. requests: slot d = [count, the ids of d's nodes], cap + 1 int64, to
 *    every rank d (this one too, as all_to_all_single does).
 * 3. the owner serves: request j of source s gets the first min(k, deg)
 *    neighbours from its own lists, at k*j in reply slot s; slots go back.
 * 4. placing: each request's neighbours land at their scanned place, with
 *    the destination and the edge ids colptr[v] + t (colptr is the same on
 *    every rank: edge ids need not travel).
 * 5. new nodes in order of first occurrence: atomicMin of the position
 *    over a per-node word (nodes not in `node` yet), a flag where a
 *    position is its node's first, CUB ExclusiveSum of the flags: the
 *    node's index; the flagged ids are the next frontier.
 * Then row / col = assoc of the sampled neighbours / destinations, and -1
 * past U and E.
 *
 * Why fixed-size slots: the original's splits come from .tolist() of the
 * exchanged counts, a device-to-host round trip per exchange (six a hop)
 * that stalls the stream and cannot be captured in a CUDA graph. The slots
 * move whole capacities (k*cap ids a peer at hop 2: 800 KiB at S = 2048),
 * in two NCCL groups a hop. Counts on the device: U, E, f.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include <cub/cub.cuh>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define HOPS 2
#define THREADS 256

enum { C_U, C_E, C_F, C_HOP, C_COUNT };   /* device counters */

struct state {
	int w, bits, k[HOPS];
	int64_t nn, s, cap[HOPS], emax, capmax, slot_req, slot_rep;
	int64_t *cnt;          /* [C_COUNT] */
	int *assoc, *first;    /* [nn]: index in node (-1: none); first position this hop */
	int64_t *front;        /* [capmax] */
	int64_t *take, *off;   /* [capmax] */
	int *key, *key_sorted, *idx, *idx_sorted;   /* [capmax] */
	int64_t *bcount;       /* [2W]: nodes to each owner, where each group starts */
	int64_t *send, *recv;  /* [W][slot_req] */
	int64_t *reply, *back; /* [W][slot_rep] */
	int64_t *nbr, *dst;    /* [emax]: node_with_dupl, dst_with_dupl */
	int *flag, *pos;       /* [capmax]: k*cap of the last hop's positions */
	void *temp;
	size_t temp_bytes;
};

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

__global__ void plan(const int64_t *front, const int64_t *colptr, const int64_t *owner,
		     const int64_t *cnt, int64_t cap, int k, int w, int64_t *take, int *key,
		     int *idx, int64_t *bcount)
{
	int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, f = cnt[C_F];
	if (i >= cap)
		return;
	idx[i] = (int)i;
	if (i >= f) {
		take[i] = 0;
		key[i] = w;
		return;
	}
	int64_t v = front[i], deg = colptr[v + 1] - colptr[v];
	int o = (int)owner[v];
	take[i] = deg < k ? deg : k;
	key[i] = o;
	atomicAdd((unsigned long long *)&bcount[o], 1ull);
}

/* group starts, and the count in each request slot's header */
__global__ void groups(int64_t *bcount, int w, int64_t *send, int64_t slot)
{
	int64_t run = 0;
	for (int d = 0; d < w; d++) {
		bcount[w + d] = run;
		run += bcount[d];
		send[d * slot] = bcount[d];
	}
}

__global__ void pack(const int64_t *front, const int *key, const int *idx,
		     const int64_t *bcount, int64_t cap, int w, int64_t *send, int64_t slot)
{
	int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (q >= cap || key[q] >= w)
		return;
	int d = key[q];
	send[d * slot + 1 + (q - bcount[w + d])] = front[idx[q]];
}

/* request j from source s: its node's first min(k, deg) neighbours at
 * reply[s][k*j ...] */
__global__ void serve(const int64_t *recv, int64_t slot_req, const int64_t *colptr,
		      const int64_t *col, int64_t cap, int k, int w, int64_t *reply,
		      int64_t slot_rep)
{
	int64_t x = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (x >= w * cap)
		return;
	int64_t s = x / cap, j = x % cap;
	if (j >= recv[s * slot_req])
		return;
	int64_t v = recv[s * slot_req + 1 + j], first = colptr[v], deg = colptr[v + 1] - first;
	int64_t t = deg < k ? deg : k;
	for (int64_t u = 0; u < t; u++)
		reply[s * slot_rep + j * k + u] = col[first + u];
}

__global__ void place(const int64_t *front, const int64_t *take, const int64_t *off,
		      const int *key, const int *idx, const int64_t *bcount,
		      const int64_t *back, int64_t slot_rep, const int64_t *colptr,
		      int64_t *cnt, int64_t cap, int k, int w, int64_t *nbr, int64_t *dst,
		      int64_t *edge)
{
	int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (q == 0)   /* this hop's edges: the scan's total (take is 0 past f) */
		cnt[C_HOP] = off[cap - 1] + take[cap - 1];
	if (q >= cap || key[q] >= w)
		return;
	int d = key[q], i = idx[q];
	int64_t j = q - bcount[w + d], v = front[i], p = cnt[C_E] + off[i];
	for (int64_t u = 0; u < take[i]; u++) {
		nbr[p + u] = back[d * slot_rep + j * k + u];
		dst[p + u] = v;
		edge[p + u] = colptr[v] + u;
	}
}

/* the first position of each node not yet in `node` among this hop's */
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
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	s->w = ctx->world;
	s->nn = ctx->in[3].numel;
	s->s = ctx->in[0].numel;
	s->k[0] = (int)pkb_param_get(ctx, "fanouts_0", 10);
	s->k[1] = (int)pkb_param_get(ctx, "fanouts_1", 5);
	while ((1 << s->bits) <= s->w)
		s->bits++;
	int64_t cap = s->s;
	for (int h = 0; h < HOPS; h++) {
		s->cap[h] = cap;
		s->slot_req = cap + 1 > s->slot_req ? cap + 1 : s->slot_req;
		s->slot_rep = cap * s->k[h] > s->slot_rep ? cap * s->k[h] : s->slot_rep;
		cap *= s->k[h];
		s->emax += cap;
	}
	s->capmax = cap > s->cap[HOPS - 1] ? cap : s->cap[HOPS - 1];
	if (s->emax != ctx->out[1].numel || s->s + s->emax != ctx->out[0].numel) {
		ctx->svc->log(ctx, "064 reference: output shapes do not match the fanouts");
		return 1;
	}
	int64_t w = s->w, cm = s->capmax;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->cnt, C_COUNT * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->assoc, s->nn * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->first, s->nn * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->front, cm * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->take, cm * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->off, cm * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->key, cm * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->key_sorted, cm * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->idx, cm * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->idx_sorted, cm * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->bcount, 2 * w * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, w * s->slot_req * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, w * s->slot_req * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->reply, w * s->slot_rep * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->back, w * s->slot_rep * sizeof(int64_t)));
	/* slots are sent whole: no uninitialised bytes go on the wire */
	PKB_CK_CUDA(ctx, cudaMemset(s->send, 0, w * s->slot_req * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMemset(s->reply, 0, w * s->slot_rep * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->nbr, s->emax * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->dst, s->emax * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->flag, cm * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->pos, cm * sizeof(int)));
	size_t a = 0, b = 0, c = 0;
	PKB_CK_CUDA(ctx, cub::DeviceScan::ExclusiveSum(NULL, a, (int64_t *)NULL, (int64_t *)NULL,
						       (int)cm));
	PKB_CK_CUDA(ctx, cub::DeviceScan::ExclusiveSum(NULL, b, (int *)NULL, (int *)NULL,
						       (int)cm));
	PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(NULL, c, (int *)NULL, (int *)NULL,
							 (int *)NULL, (int *)NULL, (int)cm,
							 0, s->bits));
	s->temp_bytes = a > b ? a : b;
	s->temp_bytes = c > s->temp_bytes ? c : s->temp_bytes;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->temp, s->temp_bytes));
	return 0;
}

static int run(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	const int64_t *seeds = (const int64_t *)ctx->in[0].data;
	const int64_t *colptr = (const int64_t *)ctx->in[1].data;
	const int64_t *col = (const int64_t *)ctx->in[2].data;
	const int64_t *owner = (const int64_t *)ctx->in[3].data;
	int64_t *node = (int64_t *)ctx->out[0].data, *edge = (int64_t *)ctx->out[3].data;
	int w = s->w, me = ctx->rank;
	size_t tb;

	PKB_CK_CUDA(ctx, cudaMemsetAsync(s->assoc, 0xff, s->nn * sizeof(int), st));
	start<<<grid(s->s), THREADS, 0, st>>>(seeds, s->s, node, s->assoc, s->front, s->cnt);
	PKB_CK_LAUNCH(ctx);
	for (int h = 0; h < HOPS; h++) {
		int k = s->k[h];
		int64_t cap = s->cap[h], n = cap * k;
		PKB_CK_CUDA(ctx, cudaMemsetAsync(s->bcount, 0, w * sizeof(int64_t), st));
		plan<<<grid(cap), THREADS, 0, st>>>(s->front, colptr, owner, s->cnt, cap, k, w,
						    s->take, s->key, s->idx, s->bcount);
		PKB_CK_LAUNCH(ctx);
		tb = s->temp_bytes;
		PKB_CK_CUDA(ctx, cub::DeviceScan::ExclusiveSum(s->temp, tb, s->take, s->off,
							       (int)cap, st));
		tb = s->temp_bytes;
		PKB_CK_CUDA(ctx, cub::DeviceRadixSort::SortPairs(s->temp, tb, s->key,
								 s->key_sorted, s->idx,
								 s->idx_sorted, (int)cap, 0,
								 s->bits, st));
		groups<<<1, 1, 0, st>>>(s->bcount, w, s->send, s->slot_req);
		PKB_CK_LAUNCH(ctx);
		pack<<<grid(cap), THREADS, 0, st>>>(s->front, s->key_sorted, s->idx_sorted,
						    s->bcount, cap, w, s->send, s->slot_req);
		PKB_CK_LAUNCH(ctx);

		/* requests: pair up with me+j sending and me-j receiving, so every
		   step is a permutation and no rank is flooded */
		PKB_CK_NCCL(ctx, ncclGroupStart());
		for (int j = 0; j < w; j++) {
			int to = (me + j) % w, from = (me - j + w) % w;
			PKB_CK_NCCL(ctx, ncclSend(s->send + to * s->slot_req, cap + 1, ncclInt64,
						  to, comm, st));
			PKB_CK_NCCL(ctx, ncclRecv(s->recv + from * s->slot_req, cap + 1,
						  ncclInt64, from, comm, st));
		}
		PKB_CK_NCCL(ctx, ncclGroupEnd());
		serve<<<grid(w * cap), THREADS, 0, st>>>(s->recv, s->slot_req, colptr, col, cap,
							 k, w, s->reply, s->slot_rep);
		PKB_CK_LAUNCH(ctx);
		PKB_CK_NCCL(ctx, ncclGroupStart());
		for (int j = 0; j < w; j++) {
			int to = (me + j) % w, from = (me - j + w) % w;
			PKB_CK_NCCL(ctx, ncclSend(s->reply + to * s->slot_rep, n, ncclInt64, to,
						  comm, st));
			PKB_CK_NCCL(ctx, ncclRecv(s->back + from * s->slot_rep, n, ncclInt64,
						  from, comm, st));
		}
		PKB_CK_NCCL(ctx, ncclGroupEnd());

		place<<<grid(cap), THREADS, 0, st>>>(s->front, s->take, s->off, s->key_sorted,
						     s->idx_sorted, s->bcount, s->back,
						     s->slot_rep, colptr, s->cnt, cap, k, w, s->nbr,
						     s->dst, edge);
		PKB_CK_LAUNCH(ctx);
		PKB_CK_CUDA(ctx, cudaMemsetAsync(s->first, 0x7f, s->nn * sizeof(int), st));
		mark<<<grid(n), THREADS, 0, st>>>(s->nbr, s->cnt, s->assoc, s->first, n);
		PKB_CK_LAUNCH(ctx);
		flags<<<grid(n), THREADS, 0, st>>>(s->nbr, s->cnt, s->assoc, s->first, n, s->flag);
		PKB_CK_LAUNCH(ctx);
		tb = s->temp_bytes;
		PKB_CK_CUDA(ctx, cub::DeviceScan::ExclusiveSum(s->temp, tb, s->flag, s->pos,
							       (int)n, st));
		append<<<grid(n), THREADS, 0, st>>>(s->nbr, s->cnt, s->flag, s->pos, n, node,
						    s->assoc, s->front);
		PKB_CK_LAUNCH(ctx);
		advance<<<1, 1, 0, st>>>(s->cnt, s->flag, s->pos, n);
		PKB_CK_LAUNCH(ctx);
	}
	int64_t umax = ctx->out[0].numel;
	finish<<<grid(umax), THREADS, 0, st>>>(s->nbr, s->dst, s->assoc, s->cnt, s->emax, umax,
					       node, (int64_t *)ctx->out[1].data,
					       (int64_t *)ctx->out[2].data, edge);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	void *p[] = { s->cnt, s->assoc, s->first, s->front, s->take, s->off, s->key,
		      s->key_sorted, s->idx, s->idx_sorted, s->bcount, s->send, s->recv,
		      s->reply, s->back, s->nbr, s->dst, s->flag, s->pos, s->temp };
	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
		cudaFree(p[i]);
}

PKB_REF_RUN_FINI(struct state, run, release)
