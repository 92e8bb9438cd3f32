/*
 * 054_ring_attention, known-good: no ring. Every rank publishes its K and
 * V in symmetric memory, the ranks meet once, and one attention kernel
 * pulls the blocks it needs straight from the peers over NVLink: rank r
 * reads blocks 0..r (causal: never the later ones the ring carries past
 * it), W(W-1)/2 block reads in all instead of the ring's W(W-1).
 *
 * The kernel is a flash-attention style loop in fp32 over the global key
 * positions 0 .. (r+1)S-1 in tiles of 32: one online softmax (running max
 * and sum) across all blocks, so the cross-rank merge is the same rescale
 * as the one between two tiles of one block; keys past the query are
 * masked by global position (only the diagonal block has any). One
 * rounding to T at the end.
 *
 * Back to back: two halves of the slot by call parity (pkb_call_half in a
 * one-block kernel, passed on in a device word). A rank writes a half again
 * two calls later, after the barrier of the call in between, which every
 * peer reaches only once its attention kernel has read this call's half.
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

#define HD 64        /* head_dim */
#define QT 32        /* query rows a thread block */
#define KT 32        /* keys a tile */
#define NT 128       /* threads: 4 a query row */
#define COPY_THREADS 256

struct state {
	int64_t b, s, heads, x;    /* x = B*S*H*64 */
	pkb_symm slot;             /* two halves of [K | V] */
	size_t half;
	uint32_t *calls;
	size_t *off;               /* this call's half */
};

__global__ void pick_half(uint32_t *calls, size_t half, size_t *off)
{
	size_t o = pkb_call_half(calls, half);
	if (threadIdx.x == 0)
		*off = o;
}

/* K then V into this rank's half, 16-byte units (x*e is a multiple of 16) */
__global__ void stage(const uint4 *k, const uint4 *v, char *const *slots, int rank,
		      const size_t *off, int64_t units)
{
	uint4 *dst = (uint4 *)(slots[rank] + *off);
	for (int64_t i = blockIdx.x * (int64_t)COPY_THREADS + threadIdx.x; i < units;
	     i += (int64_t)gridDim.x * COPY_THREADS) {
		dst[i] = k[i];
		dst[units + i] = v[i];
	}
}

__global__ void meet(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

/*
 * Rank `rank`'s queries q (B, S, H, 64) against the keys of blocks
 * 0..nblk-1 (nblk = rank + 1: causal), each [K | V] of (B, S, H, 64) in
 * its owner's slot half.
 */
template <typename T>
__global__ void __launch_bounds__(NT)
attn(const T *q, char *const *slots, const size_t *off, int rank, int nblk, int s_len,
     int heads, int64_t x, float scale, T *out)
{
	__shared__ float ks[KT][HD + 1], vs[KT][HD], ps[QT][KT + 1];
	int tid = threadIdx.x, row = tid >> 2, sub = tid & 3;
	int q0 = blockIdx.x * QT, h = blockIdx.y, b = blockIdx.z, qi = q0 + row;
	int64_t ts = (int64_t)heads * HD;
	int64_t base = (int64_t)b * s_len * ts + (int64_t)h * HD;
	float qr[HD], o[HD / 4], m = -INFINITY, l = 0;
#pragma unroll
	for (int d = 0; d < HD; d++)
		qr[d] = qi < s_len ? pkb_to_float(q[base + qi * ts + d]) : 0.0f;
#pragma unroll
	for (int i = 0; i < HD / 4; i++)
		o[i] = 0;
	for (int j = 0; j < nblk; j++) {
		const T *k = (const T *)(slots[j] + *off), *v = k + x;
		/* the diagonal block: keys past the tile's last query are masked */
		int kend = j == rank ? min(s_len, q0 + QT) : s_len;
		for (int k0 = 0; k0 < kend; k0 += KT) {
			__syncthreads();
			for (int i = tid; i < KT * HD; i += NT) {
				int r = i / HD, d = i % HD;
				bool in = k0 + r < s_len;
				int64_t at = base + (k0 + r) * ts + d;
				ks[r][d] = in ? pkb_to_float(k[at]) : 0.0f;
				vs[r][d] = in ? pkb_to_float(v[at]) : 0.0f;
			}
			__syncthreads();
			float sc[KT / 4], tmax = -INFINITY;
#pragma unroll
			for (int i = 0; i < KT / 4; i++) {
				int kj = k0 + sub + 4 * i;
				float dot = 0;
#pragma unroll
				for (int d = 0; d < HD; d++)
					dot = fmaf(qr[d], ks[sub + 4 * i][d], dot);
				/* global positions: block j's key kj against query qi of ours */
				bool ok = kj < s_len && (j != rank || kj <= qi);
				sc[i] = ok ? dot * scale : -INFINITY;
				tmax = fmaxf(tmax, sc[i]);
			}
			tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
			tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
			float mnew = fmaxf(m, tmax);
			float alpha = mnew == -INFINITY ? 1.0f : expf(m - mnew);
			float psum = 0;
#pragma unroll
			for (int i = 0; i < KT / 4; i++) {
				float p = sc[i] == -INFINITY ? 0.0f : expf(sc[i] - mnew);
				ps[row][sub + 4 * i] = p;
				psum += p;
			}
			psum += __shfl_xor_sync(0xffffffffu, psum, 1);
			psum += __shfl_xor_sync(0xffffffffu, psum, 2);
			l = l * alpha + psum;
			m = mnew;
			__syncwarp();
#pragma unroll
			for (int i = 0; i < HD / 4; i++)
				o[i] *= alpha;
			for (int jj = 0; jj < KT; jj++) {
				float p = ps[row][jj];
#pragma unroll
				for (int i = 0; i < HD / 4; i++)
					o[i] = fmaf(p, vs[jj][sub + 4 * i], o[i]);
			}
		}
	}
	if (qi >= s_len)
		return;
	float inv = 1.0f / l;
#pragma unroll
	for (int i = 0; i < HD / 4; i++)
		out[base + qi * ts + sub + 4 * i] = pkb_from_float<T>(o[i] * inv);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > NT)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->b = ctx->in[0].shape[0];
	s->s = ctx->in[0].shape[1];
	s->heads = ctx->in[0].shape[2];
	s->x = ctx->in[0].numel;
	s->half = 2 * ctx->in[1].bytes;
	if (cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, sizeof(size_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->slot);
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	char *const *slots = (char *const *)s->slot.peers_dev;
	int64_t units = (int64_t)(ctx->in[1].bytes / 16);
	unsigned copy_blocks = (unsigned)((units + COPY_THREADS - 1) / COPY_THREADS);
	copy_blocks = copy_blocks > 264 ? 264 : copy_blocks;
	dim3 grid((unsigned)((s->s + QT - 1) / QT), (unsigned)s->heads, (unsigned)s->b);
	float scale = (float)pkb_param_get(ctx, "softmax_scale", 0.125);

	pick_half<<<1, 32, 0, st>>>(s->calls, s->half, s->off);
	stage<<<copy_blocks, COPY_THREADS, 0, st>>>((const uint4 *)ctx->in[1].data,
						    (const uint4 *)ctx->in[2].data, slots,
						    ctx->rank, s->off, units);
	meet<<<1, NT, 0, st>>>(ctx->dev);
	int nblk = ctx->rank + 1;   /* blocks 0..r: the earlier positions and ours */
	attn<T><<<grid, NT, 0, st>>>((const T *)ctx->in[0].data, slots, s->off, ctx->rank, nblk,
				     (int)s->s, (int)s->heads, s->x, scale,
				     (T *)ctx->out[0].data);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
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
		cudaFree(s->calls);
		cudaFree(s->off);
	}
	free(s);
	return 0;
}
