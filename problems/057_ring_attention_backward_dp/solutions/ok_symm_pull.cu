/*
 * 057_ring_attention_backward_dp, known-good: no ring, no accumulators in
 * flight, no NCCL. Every rank publishes its K, V, Q, dO, lse and D =
 * rowsum(dO * out) in symmetric memory; after one barrier
 *   - dq: one kernel a 32-query tile walks every key of the CP group,
 *     pulling each block's K, V from its owner over NVLink;
 *   - dk, dv of its own block: one kernel a 32-key tile walks every query
 *     of the CP group, pulling each rank's Q, dO, lse and D: the block's
 *     sum over the group's queries is formed at its owner, so nothing has
 *     to travel back;
 * both in fp32 on the CUDA cores, rounded to T into the slot. After a
 * second barrier each rank averages with its DP partner (rank +- cp):
 * T(T(mine + partner's) / 2), what the reference's all-reduce and div_
 * compute.
 *
 * Back to back: two halves of the slot by call parity (pkb_call_half). A
 * rank writes a half again two calls later, after the first barrier of the
 * call in between, which every peer reaches only once it has read this
 * call's half.
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
#define TILE 32      /* queries or keys a tile */
#define NT 128       /* threads: 4 a row of the tile */
#define DP 2
#define THREADS 256

/* a half of the slot: K, V, Q, dO (T), lse, D (fp32), dq, dk, dv (T) */
struct layout {
	size_t k, v, q, dout, lse, dsum, gq, gk, gv, bytes;
};

struct state {
	int64_t b, s, heads, x;      /* x = B*S*H*64 */
	int cp, c, p;                /* CP size, cp_idx, dp_idx */
	struct layout at;
	pkb_symm slot;
	uint32_t *calls;
	size_t *off;                 /* this call's half */
};

__global__ void pick_half(uint32_t *calls, size_t half, size_t *off)
{
	size_t o = pkb_call_half(calls, half);
	if (threadIdx.x == 0)
		*off = o;
}

__global__ void meet(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

struct five {
	const uint4 *src[5];
	size_t at[5];
	int64_t units[5];
};

/* K, V, Q, dO and lse into this rank's half (16-byte units) */
__global__ void stage(struct five f, char *const *slots, int rank, const size_t *off)
{
	char *mine = slots[rank] + *off;
	for (int t = 0; t < 5; t++) {
		uint4 *dst = (uint4 *)(mine + f.at[t]);
		for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < f.units[t];
		     i += (int64_t)gridDim.x * THREADS)
			dst[i] = f.src[t][i];
	}
}

/* D[b, h, i] = sum_d dout * out into this rank's half */
template <typename T>
__global__ void row_dot(const T *dout, const T *out, char *const *slots, int rank,
			const size_t *off, size_t at, int s_len, int heads, int64_t rows)
{
	float *dsum = (float *)(slots[rank] + *off + at);
	for (int64_t r = blockIdx.x * (int64_t)THREADS + threadIdx.x; r < rows;
	     r += (int64_t)gridDim.x * THREADS) {
		int64_t i = r % s_len, h = r / s_len % heads, b = r / s_len / heads;
		const int64_t e = ((b * s_len + i) * heads + h) * HD;
		float acc = 0;
		for (int d = 0; d < HD; d++)
			acc = fmaf(pkb_to_float(dout[e + d]), pkb_to_float(out[e + d]), acc);
		dsum[r] = acc;
	}
}

/* rows [r0, r0 + TILE) of a (B, S, H, 64) tensor, head h, into fp32 rows
 * of shared memory (zeros past s_len) */
template <typename T>
__device__ __forceinline__ void load_tile(float (*dst)[HD + 1], const T *src, int64_t base,
					  int64_t ts, int r0, int s_len)
{
	for (int i = threadIdx.x; i < TILE * HD; i += NT) {
		int r = i / HD, d = i % HD;
		dst[r][d] = r0 + r < s_len ? pkb_to_float(src[base + (r0 + r) * ts + d]) : 0.0f;
	}
}

/*
 * dq of a 32-query tile of this rank against the keys of blocks j0 ..
 * j0+nblk-1 of the CP group (global rank base + j), read from their slots.
 */
template <typename T>
__global__ void __launch_bounds__(NT)
bwd_dq(const T *q, const T *dout, const float *lse, char *const *slots, const size_t *off,
       struct layout at, int rank, int base, int j0, int nblk, int s_len, int heads,
       float scale, char *gq_rank)
{
	__shared__ float qs[TILE][HD + 1], dos[TILE][HD + 1], ks[TILE][HD + 1], vs[TILE][HD + 1];
	__shared__ float dss[TILE][TILE + 1];
	int tid = threadIdx.x, row = tid >> 2, sub = tid & 3;
	int q0 = blockIdx.x * TILE, h = blockIdx.y, b = blockIdx.z, qi = q0 + row;
	int64_t ts = (int64_t)heads * HD, bb = (int64_t)b * s_len * ts + (int64_t)h * HD;
	int64_t li = ((int64_t)b * heads + h) * s_len + qi;
	const float *dsum = (const float *)(slots[rank] + *off + at.dsum);
	load_tile(qs, q, bb, ts, q0, s_len);
	load_tile(dos, dout, bb, ts, q0, s_len);
	float lse_r = qi < s_len ? lse[li] : 0.0f, d_r = qi < s_len ? dsum[li] : 0.0f;
	float acc[HD / 4];
#pragma unroll
	for (int i = 0; i < HD / 4; i++)
		acc[i] = 0;
	for (int j = j0; j < j0 + nblk; j++) {
		const char *peer = slots[base + j] + *off;
		const T *k = (const T *)(peer + at.k), *v = (const T *)(peer + at.v);
		for (int k0 = 0; k0 < s_len; k0 += TILE) {
			__syncthreads();
			load_tile(ks, k, bb, ts, k0, s_len);
			load_tile(vs, v, bb, ts, k0, s_len);
			__syncthreads();
#pragma unroll
			for (int i = 0; i < TILE / 4; i++) {
				int kj = sub + 4 * i;
				float sc = 0, dp = 0;
#pragma unroll
				for (int d = 0; d < HD; d++) {
					sc = fmaf(qs[row][d], ks[kj][d], sc);
					dp = fmaf(dos[row][d], vs[kj][d], dp);
				}
				float p = qi < s_len && k0 + kj < s_len ? expf(sc * scale - lse_r) : 0.0f;
				dss[row][kj] = p * (dp - d_r);
			}
			__syncwarp();
			for (int kj = 0; kj < TILE; kj++) {
				float ds = dss[row][kj];
#pragma unroll
				for (int i = 0; i < HD / 4; i++)
					acc[i] = fmaf(ds, ks[kj][sub + 4 * i], acc[i]);
			}
		}
	}
	if (qi >= s_len)
		return;
	T *gq = (T *)(gq_rank + *off);
#pragma unroll
	for (int i = 0; i < HD / 4; i++)
		gq[bb + qi * ts + sub + 4 * i] = pkb_from_float<T>(acc[i] * scale);
}

/*
 * dk, dv of a 32-key tile of this rank's block against the queries of
 * blocks j0 .. j0+nblk-1 of the CP group (Q, dO, lse, D from their slots).
 */
template <typename T>
__global__ void __launch_bounds__(NT)
bwd_dkv(const T *k, const T *v, char *const *slots, const size_t *off, struct layout at,
	int base, int j0, int nblk, int s_len, int heads, float scale, char *g_rank)
{
	__shared__ float ks[TILE][HD + 1], vs[TILE][HD + 1], qs[TILE][HD + 1], dos[TILE][HD + 1];
	__shared__ float pt[TILE][TILE + 1], dst[TILE][TILE + 1], lse_s[TILE], d_s[TILE];
	int tid = threadIdx.x, row = tid >> 2, sub = tid & 3;
	int k0 = blockIdx.x * TILE, h = blockIdx.y, b = blockIdx.z, kj = k0 + row;
	int64_t ts = (int64_t)heads * HD, bb = (int64_t)b * s_len * ts + (int64_t)h * HD;
	int64_t lbase = ((int64_t)b * heads + h) * s_len;
	load_tile(ks, k, bb, ts, k0, s_len);
	load_tile(vs, v, bb, ts, k0, s_len);
	float gk[HD / 4], gv[HD / 4];
#pragma unroll
	for (int i = 0; i < HD / 4; i++)
		gk[i] = gv[i] = 0;
	for (int j = j0; j < j0 + nblk; j++) {
		const char *peer = slots[base + j] + *off;
		const T *q = (const T *)(peer + at.q), *dout = (const T *)(peer + at.dout);
		const float *lse = (const float *)(peer + at.lse);
		const float *dsum = (const float *)(peer + at.dsum);
		for (int q0 = 0; q0 < s_len; q0 += TILE) {
			__syncthreads();
			load_tile(qs, q, bb, ts, q0, s_len);
			load_tile(dos, dout, bb, ts, q0, s_len);
			if (tid < TILE) {
				lse_s[tid] = q0 + tid < s_len ? lse[lbase + q0 + tid] : 0.0f;
				d_s[tid] = q0 + tid < s_len ? dsum[lbase + q0 + tid] : 0.0f;
			}
			__syncthreads();
#pragma unroll
			for (int i = 0; i < TILE / 4; i++) {
				int qj = sub + 4 * i;
				float sc = 0, dp = 0;
#pragma unroll
				for (int d = 0; d < HD; d++) {
					sc = fmaf(qs[qj][d], ks[row][d], sc);
					dp = fmaf(dos[qj][d], vs[row][d], dp);
				}
				float p = kj < s_len && q0 + qj < s_len ?
					  expf(sc * scale - lse_s[qj]) : 0.0f;
				pt[row][qj] = p;
				dst[row][qj] = p * (dp - d_s[qj]);
			}
			__syncwarp();
			for (int qj = 0; qj < TILE; qj++) {
				float p = pt[row][qj], ds = dst[row][qj];
#pragma unroll
				for (int i = 0; i < HD / 4; i++) {
					gv[i] = fmaf(p, dos[qj][sub + 4 * i], gv[i]);
					gk[i] = fmaf(ds, qs[qj][sub + 4 * i], gk[i]);
				}
			}
		}
	}
	if (kj >= s_len)
		return;
	T *gkp = (T *)(g_rank + *off + at.gk), *gvp = (T *)(g_rank + *off + at.gv);
#pragma unroll
	for (int i = 0; i < HD / 4; i++) {
		int64_t e = bb + kj * ts + sub + 4 * i;
		gkp[e] = pkb_from_float<T>(gk[i] * scale);
		gvp[e] = pkb_from_float<T>(gv[i]);
	}
}

/* g = T(T(mine + the DP partner's) / 2), for dq, dk, dv */
template <typename T>
__global__ void dp_mean(char *const *slots, int rank, int partner, const size_t *off,
			struct layout at, int64_t x, T *gq, T *gk, T *gv)
{
	const char *a = slots[rank] + *off, *b = slots[partner] + *off;
	size_t where[3] = { at.gq, at.gk, at.gv };
	T *outs[3] = { gq, gk, gv };
	for (int t = 0; t < 3; t++) {
		const T *mine = (const T *)(a + where[t]), *peer = (const T *)(b + where[t]);
		T *g = outs[t];
		for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < x;
		     i += (int64_t)gridDim.x * THREADS) {
			float sum = pkb_to_float(pkb_from_float<T>(pkb_to_float(mine[i]) + pkb_to_float(peer[i])));
			g[i] = pkb_from_float<T>(sum * 0.5f);
		}
	}
}

static unsigned blocks(int64_t n, unsigned cap)
{
	int64_t b = (n + THREADS - 1) / THREADS;
	return b < 1 ? 1u : b > cap ? cap : (unsigned)b;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > NT || ctx->world % DP)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->b = ctx->in[1].shape[0];
	s->s = ctx->in[1].shape[1];
	s->heads = ctx->in[1].shape[2];
	s->x = ctx->in[1].numel;
	s->cp = ctx->world / DP;
	s->c = ctx->rank % s->cp;
	s->p = ctx->rank / s->cp;
	/* every part a multiple of 16 bytes: x*e = 512 B*S*e, lse 32 B*S */
	size_t t = ctx->in[1].bytes, f = ctx->in[5].bytes;
	struct layout *a = &s->at;
	a->k = 0;
	a->v = t;
	a->q = 2 * t;
	a->dout = 3 * t;
	a->lse = 4 * t;
	a->dsum = 4 * t + f;
	a->gq = 4 * t + 2 * f;
	a->gk = 5 * t + 2 * f;
	a->gv = 6 * t + 2 * f;
	a->bytes = 7 * t + 2 * f;
	if (cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, sizeof(size_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * a->bytes, &s->slot);
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	char *const *slots = (char *const *)s->slot.peers_dev;
	char *mine = (char *)s->slot.local;   /* + *off on the device */
	int64_t x = s->x, rows = x / HD;
	float scale = (float)pkb_param_get(ctx, "softmax_scale", 0.125);
	dim3 grid((unsigned)((s->s + TILE - 1) / TILE), (unsigned)s->heads, (unsigned)s->b);
	int base = s->p * s->cp, partner = (ctx->rank + s->cp) % ctx->world;
	int j0 = 0, nblk = s->cp;   /* every block of the CP group */

	struct five f;
	const int from[5] = { 2, 3, 1, 0, 5 };   /* k, v, q, dout, lse */
	const size_t to[5] = { s->at.k, s->at.v, s->at.q, s->at.dout, s->at.lse };
	for (int i = 0; i < 5; i++) {
		f.src[i] = (const uint4 *)ctx->in[from[i]].data;
		f.at[i] = to[i];
		f.units[i] = (int64_t)(ctx->in[from[i]].bytes / 16);
	}
	pick_half<<<1, 32, 0, st>>>(s->calls, s->at.bytes, s->off);
	stage<<<blocks(f.units[0], 264), THREADS, 0, st>>>(f, slots, ctx->rank, s->off);
	row_dot<T><<<blocks(rows, 1024), THREADS, 0, st>>>(
		(const T *)ctx->in[0].data, (const T *)ctx->in[4].data, slots, ctx->rank, s->off,
		s->at.dsum, (int)s->s, (int)s->heads, rows);
	meet<<<1, NT, 0, st>>>(ctx->dev);
	bwd_dq<T><<<grid, NT, 0, st>>>((const T *)ctx->in[1].data, (const T *)ctx->in[0].data,
				       (const float *)ctx->in[5].data, slots, s->off, s->at,
				       ctx->rank, base, j0, nblk, (int)s->s, (int)s->heads, scale,
				       mine + s->at.gq);
	bwd_dkv<T><<<grid, NT, 0, st>>>((const T *)ctx->in[2].data, (const T *)ctx->in[3].data,
					slots, s->off, s->at, base, j0, nblk, (int)s->s,
					(int)s->heads, scale, mine);
	meet<<<1, NT, 0, st>>>(ctx->dev);
	dp_mean<T><<<blocks(x, 1024), THREADS, 0, st>>>(slots, ctx->rank, partner, s->off, s->at,
							x, (T *)ctx->out[0].data,
							(T *)ctx->out[1].data,
							(T *)ctx->out[2].data);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[1].dtype) {
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
