/*
 * 070_torchrec_kjt_all2all, known-good: publish the jagged batch, pull each
 * segment straight into its recat place.
 *
 * 1. One block sums each of the F feature rows of lengths and scans them
 *    (foff[g]: where feature g's ids start) into the header of this rank's
 *    symmetric slot.
 * 2. A grid copies lengths and the foff[F] ids that count into the slot.
 * 3. One block meets every rank (pkb_barrier_block), then reads from each
 *    source s the two offsets of each of our features f -- segment (f, s)
 *    is ids [foff_s[off_r+f], foff_s[off_r+f+1]) of s -- and scans the
 *    segment lengths in (f, s) order: where each lands in the output.
 * 4. A grid pulls over NVLink: lengths row (f, s) from s's rows, every
 *    output id from its segment (a binary search over the W*ks_r starts),
 *    zeros past the last; stride and stride_per_rank.
 * Only the ids that count cross: 13.5 int64 a row on average.
 *
 * Back to back: the slot has two halves, by call parity (pkb_call_half in
 * step 1's block, passed on in a device word). A rank writes a half again
 * two calls later, after the barrier of the call in between, which every
 * peer reaches only once its step 4 of this call is done.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define MAX_LEN 20
#define BLOCK 1024
#define THREADS 256
#define MAX_WORLD 64
#define MAX_SEG (3 * MAX_WORLD)

struct state {
	pkb_symm slot;        /* two halves of [foff (F+1, even)][lengths F*bs][ids F*bs*20] */
	size_t half, head;    /* bytes: a half, the foff header */
	uint32_t *calls;
	size_t *off;          /* this call's half */
	int64_t *seg;         /* [3][MAX_SEG + 1]: source rank, start in its ids, output start */
	int w, f, bs, ks_r, off_r;
};

__device__ int64_t block_sum(int64_t v)
{
	__shared__ int64_t part[BLOCK / 32];
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	if ((threadIdx.x & 31) == 0)
		part[threadIdx.x >> 5] = v;
	__syncthreads();
	int64_t t = 0;
	if (threadIdx.x == 0)
		for (int i = 0; i < BLOCK / 32; i++)
			t += part[i];
	__syncthreads();
	return t;   /* thread 0 only */
}

__global__ void __launch_bounds__(BLOCK)
publish_offsets(const int64_t *lengths, char *const *slots, int rank, size_t half,
		uint32_t *calls, size_t *off_out, int f, int bs)
{
	size_t off = pkb_call_half(calls, half);
	int64_t *foff = (int64_t *)(slots[rank] + off);
	int64_t run = 0;
	for (int g = 0; g < f; g++) {
		int64_t v = 0;
		for (int b = threadIdx.x; b < bs; b += BLOCK)
			v += lengths[(int64_t)g * bs + b];
		v = block_sum(v);
		if (threadIdx.x == 0) {
			foff[g] = run;
			run += v;
		}
	}
	if (threadIdx.x == 0) {
		foff[f] = run;
		*off_out = off;
	}
}

__global__ void __launch_bounds__(THREADS)
publish_data(const int64_t *lengths, const int64_t *values, char *const *slots, int rank,
	     const size_t *off, size_t head, int f, int bs)
{
	char *mine = slots[rank] + *off;
	const int64_t *foff = (const int64_t *)mine;
	int64_t *len = (int64_t *)(mine + head), *ids = len + (int64_t)f * bs;
	int64_t nl = (int64_t)f * bs, nv = foff[f];
	int64_t i0 = blockIdx.x * (int64_t)THREADS + threadIdx.x, step = (int64_t)gridDim.x * THREADS;
	for (int64_t i = i0; i < nl; i += step)
		len[i] = lengths[i];
	for (int64_t i = i0; i < nv; i += step)
		ids[i] = values[i];
}

__global__ void __launch_bounds__(BLOCK)
meet_and_plan(pkb_dev_comm comm, char *const *slots, const size_t *off, int64_t *seg,
	      int ks_r, int off_r)
{
	__shared__ int64_t first[MAX_SEG], count[MAX_SEG];
	if (!pkb_barrier_block(comm, 0))
		return;
	int w = comm.world, nseg = w * ks_r;
	if (threadIdx.x < nseg) {
		/* segment q = f*W + s: source s, feature off_r + f */
		int f = threadIdx.x / w, s = threadIdx.x % w;
		const int64_t *foff = (const int64_t *)(slots[s] + *off);
		first[threadIdx.x] = foff[off_r + f];
		count[threadIdx.x] = foff[off_r + f + 1] - foff[off_r + f];
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		int64_t out = 0;
		for (int q = 0; q < nseg; q++) {
			seg[q] = q % w;
			seg[(MAX_SEG + 1) + q] = first[q];
			seg[2 * (MAX_SEG + 1) + q] = out;
			out += count[q];
		}
		seg[2 * (MAX_SEG + 1) + nseg] = out;
	}
}

__global__ void __launch_bounds__(THREADS)
pull(char *const *slots, const size_t *off, size_t head, const int64_t *seg, int w, int f,
     int bs, int ks_r, int off_r, int64_t *out_len, int64_t *out_val, int64_t *stride,
     int64_t *stride_per_rank)
{
	const int64_t *src = seg + (MAX_SEG + 1), *dst = seg + 2 * (MAX_SEG + 1);
	size_t o = *off;
	int nseg = w * ks_r;
	int64_t nlen = (int64_t)ks_r * w * bs, nval = nlen * MAX_LEN, r = dst[nseg];
	int64_t i0 = blockIdx.x * (int64_t)THREADS + threadIdx.x, step = (int64_t)gridDim.x * THREADS;
	for (int64_t i = i0; i < nlen; i += step) {
		int64_t fi = i / ((int64_t)w * bs), b = i % bs;
		int s = (int)((i / bs) % w);
		const int64_t *len = (const int64_t *)(slots[s] + o + head);
		out_len[i] = len[(off_r + fi) * bs + b];
	}
	for (int64_t i = i0; i < nval; i += step) {
		if (i >= r) {
			out_val[i] = 0;
			continue;
		}
		int lo = 0, hi = nseg - 1;   /* the last segment starting at or before i */
		while (lo < hi) {
			int mid = (lo + hi + 1) / 2;
			if (dst[mid] <= i)
				lo = mid;
			else
				hi = mid - 1;
		}
		int s = (int)seg[lo];
		const int64_t *ids = (const int64_t *)(slots[s] + o + head) + (int64_t)f * bs;
		out_val[i] = ids[src[lo] + i - dst[lo]];
	}
	if (i0 == 0)
		*stride = (int64_t)w * bs;
	if (i0 < w)
		stride_per_rank[i0] = bs;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->world > MAX_WORLD)
		return 1;
	s->w = ctx->world;
	s->bs = (int)pkb_param_get(ctx, "batch_size", 512);
	for (int d = 0; d < s->w; d++) {
		if (d == ctx->rank) {
			s->off_r = s->f;
			s->ks_r = 1 + d % 3;
		}
		s->f += 1 + d % 3;
	}
	s->head = (size_t)(s->f + 2) / 2 * 16;
	s->half = s->head + (size_t)s->f * s->bs * (1 + MAX_LEN) * sizeof(int64_t);
	if (cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, sizeof(size_t)) != cudaSuccess ||
	    cudaMalloc(&s->seg, 3 * (MAX_SEG + 1) * sizeof(int64_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->slot);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	char *const *slots = (char *const *)s->slot.peers_dev;
	const int64_t *lengths = (const int64_t *)ctx->in[0].data;
	int64_t nval = (int64_t)s->ks_r * s->w * s->bs * MAX_LEN;
	int grid = (int)((nval + THREADS - 1) / THREADS);
	grid = grid > 1024 ? 1024 : grid;
	publish_offsets<<<1, BLOCK, 0, st>>>(lengths, slots, ctx->rank, s->half, s->calls, s->off,
					     s->f, s->bs);
	publish_data<<<grid, THREADS, 0, st>>>(lengths, (const int64_t *)ctx->in[1].data, slots,
					       ctx->rank, s->off, s->head, s->f, s->bs);
	meet_and_plan<<<1, BLOCK, 0, st>>>(ctx->dev, slots, s->off, s->seg, s->ks_r, s->off_r);
	pull<<<grid, THREADS, 0, st>>>(slots, s->off, s->head, s->seg, s->w, s->f, s->bs, s->ks_r,
				       s->off_r, (int64_t *)ctx->out[0].data,
				       (int64_t *)ctx->out[1].data, (int64_t *)ctx->out[2].data,
				       (int64_t *)ctx->out[3].data);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		cudaFree(s->calls);
		cudaFree(s->off);
		cudaFree(s->seg);
	}
	free(s);
	return 0;
}
