/*
 * 085_distributed_sample_sort, known-good: sort locally, publish, and place
 * every value by its merge rank.
 *
 * 1. One block sorts this rank's n valid values (a bitonic sort in shared
 *    memory, +inf past n) and stores the count and the sorted shard in its
 *    symmetric slot, then meets every rank (pkb_barrier_block).
 * 2. A grid pulls the W published shards and counts over NVLink into local
 *    scratch ((W-1)*L*e bytes: 1.5 KiB per peer at the default).
 * 3. A grid gives value j of shard s its global position: j, plus the values
 *    of every other shard s' below it (those equal to it too when s' < s),
 *    each a binary search -- a strict order on (value, s, j), so the
 *    positions are a permutation. Values whose position is in this rank's
 *    slice [start, start + c) land there; the tail of the output is +inf.
 *    Equal values are equal numbers: the slice is the reference's exactly.
 *
 * Back to back: the slot has two halves, by call parity (pkb_call_half in
 * the one block of step 1, which tells steps 2 and 3 through a device word).
 * A rank writes a half again two calls later, after the barrier of the call
 * in between, which every peer reaches only once its step 2 of this call is
 * done: no trailing barrier.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define SORT_THREADS 1024
#define MAX_L 4096            /* the problem caps L at 4096 */
#define THREADS 256
#define HEAD 16               /* the count, then the values, 16-byte aligned */

struct state {
	pkb_symm slot;        /* two halves of [count][L values] */
	size_t half;
	uint32_t *calls;      /* pkb_call_half's counter (one block) */
	size_t *off;          /* this call's half, for steps 2 and 3 */
	void *all;            /* [W][L] of T: every sorted shard */
	int64_t *counts;      /* [W] */
};

template <typename T>
__global__ void __launch_bounds__(SORT_THREADS)
sort_publish(pkb_dev_comm comm, const T *in, const int64_t *local_n, char *const *slots,
	     size_t half, uint32_t *calls, size_t *off_out, int64_t l)
{
	__shared__ float v[MAX_L];
	size_t off = pkb_call_half(calls, half);
	int64_t n = *local_n;
	n = n < 0 ? 0 : n > l ? l : n;
	int p = 1;
	while (p < l)
		p <<= 1;
	for (int i = threadIdx.x; i < p; i += SORT_THREADS)
		v[i] = i < n ? pkb_to_float(in[i]) : INFINITY;
	__syncthreads();
	for (int k = 2; k <= p; k <<= 1)
		for (int j = k >> 1; j > 0; j >>= 1) {
			for (int i = threadIdx.x; i < p; i += SORT_THREADS) {
				int o = i ^ j;
				if (o > i) {
					float a = v[i], b = v[o];
					if ((a > b) == ((i & k) == 0)) {
						v[i] = b;
						v[o] = a;
					}
				}
			}
			__syncthreads();
		}
	char *mine = slots[comm.rank] + off;
	if (threadIdx.x == 0) {
		*(int64_t *)mine = n;
		*off_out = off;
	}
	T *vals = (T *)(mine + HEAD);
	for (int i = threadIdx.x; i < l; i += SORT_THREADS)
		vals[i] = pkb_from_float<T>(v[i]);
	pkb_barrier_block(comm, 0);
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
pull_shards(char *const *slots, const size_t *off, T *all, int64_t *counts, int world,
	    int64_t l)
{
	size_t o = *off;
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < world * l;
	     k += (int64_t)gridDim.x * THREADS) {
		int s = (int)(k / l);
		all[k] = ((const T *)(slots[s] + o + HEAD))[k - s * l];
		if (k < world)
			counts[k] = *(const int64_t *)(slots[k] + o);
	}
}

/* values of a[0, n) below x (or_equal: not above x) */
template <typename T>
__device__ int64_t count_below(const T *a, int64_t n, float x, bool or_equal)
{
	int64_t lo = 0, hi = n;
	while (lo < hi) {
		int64_t mid = (lo + hi) / 2;
		float y = pkb_to_float(a[mid]);
		if (y < x || (or_equal && y == x))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
place(const T *all, const int64_t *counts, T *out, int rank, int world, int64_t l)
{
	int64_t total = 0;
	for (int s = 0; s < world; s++)
		total += counts[s];
	int64_t base = total / world, extra = total % world;
	int64_t start = rank * base + (rank < extra ? rank : extra);
	int64_t c = base + (rank < extra);
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < world * l;
	     k += (int64_t)gridDim.x * THREADS) {
		int s = (int)(k / l);
		int64_t j = k - s * l;
		if (j >= counts[s])
			continue;
		float x = pkb_to_float(all[k]);
		int64_t pos = j;
		for (int t = 0; t < world; t++)
			if (t != s)
				pos += count_below(all + t * l, counts[t], x, t < s);
		if (pos >= start && pos < start + c)
			out[pos - start] = all[k];
	}
	for (int64_t i = c + blockIdx.x * (int64_t)THREADS + threadIdx.x; i < l;
	     i += (int64_t)gridDim.x * THREADS)
		out[i] = pkb_from_float<T>(INFINITY);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int64_t l = ctx->in[0].numel;
	if (l > MAX_L || ctx->world > SORT_THREADS)
		return 1;
	s->half = (HEAD + ctx->in[0].bytes + 15) & ~(size_t)15;
	if (cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, sizeof(size_t)) != cudaSuccess ||
	    cudaMalloc(&s->all, ctx->world * ctx->in[0].bytes) != cudaSuccess ||
	    cudaMalloc(&s->counts, ctx->world * sizeof(int64_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->slot);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t l = ctx->in[0].numel, n = ctx->world * l;
	int grid = (int)((n + THREADS - 1) / THREADS);
	grid = grid > 256 ? 256 : grid;
	char *const *slots = (char *const *)s->slot.peers_dev;
	sort_publish<T><<<1, SORT_THREADS, 0, st>>>(ctx->dev, (const T *)ctx->in[0].data,
						    (const int64_t *)ctx->in[1].data, slots,
						    s->half, s->calls, s->off, l);
	pull_shards<T><<<grid, THREADS, 0, st>>>(slots, s->off, (T *)s->all, s->counts,
						 ctx->world, l);
	place<T><<<grid, THREADS, 0, st>>>((const T *)s->all, s->counts, (T *)ctx->out[0].data,
					   ctx->rank, ctx->world, l);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: launch<__nv_bfloat16>(ctx, s); break;
	case PKB_FP16: launch<__half>(ctx, s); break;
	case PKB_FP32: launch<float>(ctx, s); break;
	default: return 1;
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		cudaFree(s->calls);
		cudaFree(s->off);
		cudaFree(s->all);
		cudaFree(s->counts);
	}
	free(s);
	return 0;
}
