/*
 * 028_moe_pre_all2all, known-good: no NCCL, no permuted copy, no padding.
 * Each rank publishes its split list, its permutation and its raw rows;
 * each rank pulls, in output order, exactly the rows it must return.
 *
 * Kernel 1, two kinds of blocks. Block e < 8 owns expert e: it counts the
 * routed (e', t) of the experts before it (its base in the expert-major
 * order), writes row e of routing_map, and compacts the tokens routed to
 * e in ascending order (warp ballots and a block scan) into perm at that
 * base -- into the output and into this rank's symmetric staging buffer.
 * The other blocks copy hidden_states into the staging buffer as it is.
 * Kernel 2 meets every rank (once a block passes, every peer's kernel 1
 * has finished) and fills the output one warp a row: output row o lies in
 * chunk (l, j) -- local expert l, source rank j, in that order -- and is
 * row k of it; in rank j's expert-major order that is position
 *     p = sum_{d<rank} S[j][d]  +  sum_{l'<l} counts[j][l']  +  k
 * (the first sum from j's published split list, the counts from our
 * num_global_tokens_per_local_expert), so the row is hidden_j[perm_j[p]],
 * read over NVLink straight into place.
 *
 * Back-to-back calls: two halves of staging by call parity (per-block
 * call counters), as 027's ok_symm_pull: a rank restages half p only in
 * call k+2, after its kernel 2 of call k+1 met every peer, whose last read
 * of half p (kernel 2 of call k) had finished by then.
 *
 * Traffic: each rank reads the rows of peers' tokens routed to its experts
 * (2M - S[r][r] of them) and an 8-byte index for each.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define EXPERTS 8
#define TOPK 2
#define THREADS 512
#define MAX_BLOCKS 264        /* two blocks per SM on a 132-SM H200: all resident */
#define HDR 512               /* the split list (W <= 8 int64), padded */

struct state {
	pkb_symm stage;       /* two halves: [HDR splits][2M perm, padded][M rows] */
	size_t half, rows_off;
	uint32_t *calls;      /* per-block call counters: [MAX_BLOCKS] kernel 1, then kernel 2 */
};

__device__ __forceinline__ bool routed(const float *mask, int64_t m, int e, int64_t t)
{
	return mask[(int64_t)e * TOPK * m + t] + mask[((int64_t)e * TOPK + 1) * m + t] != 0.f;
}

/* the block's count of true flags (every thread gets it) */
__device__ int64_t block_count(bool f)
{
	__shared__ int64_t tot[THREADS / 32];
	__shared__ int64_t all;
	int c = __popc(__ballot_sync(0xffffffffu, f));
	if ((threadIdx.x & 31) == 0)
		tot[threadIdx.x >> 5] = c;
	__syncthreads();
	if (threadIdx.x == 0) {
		int64_t s = 0;
		for (int i = 0; i < THREADS / 32; i++)
			s += tot[i];
		all = s;
	}
	__syncthreads();
	int64_t v = all;
	__syncthreads();
	return v;
}

__global__ void __launch_bounds__(THREADS)
permute_stage(const float *mask, const char *hidden, size_t hidden_bytes,
	      const int64_t *splits, int world, int64_t m, int64_t n, char *mine, size_t half,
	      size_t rows_off, uint32_t *calls, float *map, int64_t *perm, int64_t *shape)
{
	char *h = mine + pkb_call_half(calls, half);
	if (blockIdx.x >= EXPERTS) {
		/* staging blocks: the raw rows, 16-byte units then the tail */
		int64_t nu = (int64_t)(hidden_bytes / 16), b = blockIdx.x - EXPERTS;
		uint4 *d = (uint4 *)(h + rows_off);
		for (int64_t u = b * THREADS + threadIdx.x; u < nu;
		     u += (int64_t)(gridDim.x - EXPERTS) * THREADS)
			d[u] = ((const uint4 *)hidden)[u];
		if (b == 0 && threadIdx.x < hidden_bytes % 16)
			h[rows_off + nu * 16 + threadIdx.x] = hidden[nu * 16 + threadIdx.x];
		return;
	}
	const int e = blockIdx.x;
	int64_t *pub = (int64_t *)(h + HDR);
	if (e == 0 && threadIdx.x < world)
		((int64_t *)h)[threadIdx.x] = splits[threadIdx.x];
	if (e == 0 && threadIdx.x < 2)
		shape[threadIdx.x] = threadIdx.x == 0 ? m : n;

	/* base: the routed (e', t) of the experts before e */
	int64_t base = 0;
	for (int x = 0; x < e; x++)
		for (int64_t t0 = 0; t0 < m; t0 += THREADS) {
			int64_t t = t0 + threadIdx.x;
			base += block_count(t < m && routed(mask, m, x, t));
		}

	/* row e of the map, and its tokens compacted in order */
	__shared__ int64_t warp_off[THREADS / 32], tile;
	int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
	for (int64_t t0 = 0; t0 < m; t0 += THREADS) {
		int64_t t = t0 + threadIdx.x;
		bool f = false;
		if (t < m) {
			float v = mask[(int64_t)e * TOPK * m + t] + mask[((int64_t)e * TOPK + 1) * m + t];
			map[(int64_t)e * m + t] = v;
			f = v != 0.f;
		}
		unsigned bal = __ballot_sync(0xffffffffu, f);
		if (lane == 0)
			warp_off[wid] = __popc(bal);
		__syncthreads();
		if (threadIdx.x == 0) {
			int64_t s = 0;
			for (int i = 0; i < THREADS / 32; i++) {
				int64_t c = warp_off[i];
				warp_off[i] = s;
				s += c;
			}
			tile = s;
		}
		__syncthreads();
		if (f) {
			int64_t p = base + warp_off[wid] + __popc(bal & ((1u << lane) - 1));
			perm[p] = t;
			pub[p] = t;
		}
		base += tile;
		__syncthreads();
	}
}

/* kernel 2: the output rows in units U, upr units a row */
template <typename U>
__global__ void __launch_bounds__(THREADS)
pull_rows(pkb_dev_comm comm, char *const *stage, size_t half, size_t rows_off,
	  uint32_t *calls, const int64_t *counts, U *out, int64_t rows, int64_t upr)
{
	__shared__ int64_t start[EXPERTS], in_off[EXPERTS], out_off[EXPERTS + 1];
	const int me = comm.rank, w = comm.world, el = EXPERTS / w;
	size_t h = pkb_call_half(calls, half);
	if (!pkb_barrier_block(comm, blockIdx.x))   /* every rank's kernel 1 is done */
		return;
	if (threadIdx.x < w) {
		/* where rank j's rows for us start in its expert-major order */
		int j = threadIdx.x;
		const int64_t *sent = (const int64_t *)(stage[j] + h);
		int64_t o = 0;
		for (int d = 0; d < me; d++)
			o += sent[d];
		start[j] = o;
	}
	if (threadIdx.x == 0) {
		/* counts[j][l]: rank j's rows for our expert l */
		for (int j = 0; j < w; j++) {
			int64_t o = 0;
			for (int l = 0; l < el; l++) {
				in_off[j * el + l] = o;
				o += counts[j * el + l];
			}
		}
		out_off[0] = 0;
		for (int c = 0; c < EXPERTS; c++)   /* chunk c = l * W + j */
			out_off[c + 1] = out_off[c] + counts[(c % w) * el + c / w];
	}
	__syncthreads();
	int lane = threadIdx.x & 31;
	int64_t warps = (int64_t)gridDim.x * (THREADS / 32);
	for (int64_t o = blockIdx.x * (int64_t)(THREADS / 32) + (threadIdx.x >> 5); o < rows;
	     o += warps) {
		int c = 0;
		while (c + 1 < EXPERTS && out_off[c + 1] <= o)
			c++;
		int l = c / w, j = c % w;
		int64_t p = start[j] + in_off[j * el + l] + o - out_off[c];
		const char *src = stage[j] + h;
		int64_t t = ((const int64_t *)(src + HDR))[p];
		const U *row = (const U *)(src + rows_off) + t * upr;
		U *dst = out + o * upr;
		for (int64_t u = lane; u < upr; u += 32)
			dst[u] = row[u];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (EXPERTS % ctx->world || ctx->in[1].dtype != PKB_FP32)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int64_t m2 = TOPK * ctx->in[0].shape[0];
	s->rows_off = (HDR + (size_t)m2 * sizeof(int64_t) + 255) & ~(size_t)255;
	s->half = (s->rows_off + ctx->in[0].bytes + 255) & ~(size_t)255;
	if (cudaMalloc(&s->calls, 2 * MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, 2 * MAX_BLOCKS * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

static int blocks_for(int64_t n, int64_t per, int most)
{
	int64_t b = (n + per - 1) / per;
	return b < 1 ? 1 : b > most ? most : (int)b;
}

template <typename U>
static void pull(pkb_ctx *ctx, struct state *s)
{
	int64_t rows = ctx->out[0].shape[0];
	int64_t upr = (int64_t)(ctx->out[0].bytes / rows / sizeof(U));
	pull_rows<U><<<blocks_for(rows, THREADS / 32, MAX_BLOCKS), THREADS, 0,
		       (cudaStream_t)ctx->stream>>>(
		ctx->dev, (char *const *)s->stage.peers_dev, s->half, s->rows_off,
		s->calls + MAX_BLOCKS, (const int64_t *)ctx->in[4].data, (U *)ctx->out[0].data,
		rows, upr);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	int64_t m = ctx->in[0].shape[0], n = ctx->in[0].shape[1];
	int stagers = blocks_for((int64_t)(ctx->in[0].bytes / 16), THREADS * 4,
				 MAX_BLOCKS - EXPERTS);
	permute_stage<<<EXPERTS + stagers, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		(const float *)ctx->in[1].data, (const char *)ctx->in[0].data, ctx->in[0].bytes,
		(const int64_t *)ctx->in[2].data, ctx->world, m, n, (char *)s->stage.local,
		s->half, s->rows_off, s->calls, (float *)ctx->out[1].data,
		(int64_t *)ctx->out[2].data, (int64_t *)ctx->out[3].data);
	size_t row = ctx->in[0].bytes / m;
	if (row % 16 == 0)
		pull<uint4>(ctx, s);
	else if (row % 8 == 0)
		pull<uint2>(ctx, s);
	else if (row % 4 == 0)
		pull<uint32_t>(ctx, s);
	else if (row % 2 == 0)
		pull<uint16_t>(ctx, s);
	else
		pull<uint8_t>(ctx, s);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s)
		cudaFree(s->calls);
	free(s);
	return 0;
}
