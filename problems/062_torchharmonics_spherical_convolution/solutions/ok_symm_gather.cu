/*
 * 062_torchharmonics_spherical_convolution, known-good: gather x and the
 * filters over symmetric memory, then contract locally.
 *
 * Every rank's outputs read x of every polar row (at most nl + L + 9
 * longitudes) and the filters of every polar rank, so each rank takes all
 * of them: every block copies its share of this rank's x, psi_values and
 * psi_indices (one staging record, in the half of a symmetric buffer that
 * the call's parity picks) into the staging and into its own slot of a
 * local copy, meets the same block on every rank (pkb_barrier_block), and
 * pulls the same share of every peer's record over NVLink into the peer's
 * slot. A rank restages a half only after every peer passed the next call's
 * barrier, so after it read that half.
 *
 * Then one thread per (b, i, l) and all 8 output channels: for each input
 * channel c and kernel k, Y = the sum over polar rows q of row (k, O) of
 * the filter of rank (q, c's azimuth rank) against the full-longitude x of
 * row q shifted by P (the entries of the row found by binary search in the
 * coalesced COO indices), mixed into the outputs with weight; bias last.
 *
 * Traffic: each rank reads (W-1) * (x + filter) bytes from its peers.
 */
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define BATCH 32
#define CHANS 8
#define KSIZE 3
#define GATHER_BLOCKS 132
#define GATHER_THREADS 512
#define THREADS 256

struct geo {
	int az, pol, p, a;
	int nlat, nlon, l, nl;
	int64_t nx, nnz;
	int64_t rec;    /* bytes of one staging record: x, values, indices */
};

struct state {
	pkb_symm stage;
	uint32_t *calls;
	char *all;      /* W records */
	geo g;
};

__global__ void __launch_bounds__(GATHER_THREADS)
gather(pkb_dev_comm comm, const uint4 *x, const uint4 *v, const uint4 *idx, geo g,
       void *const *stage, uint32_t *calls, uint4 *all)
{
	const int me = comm.rank, w = comm.world;
	size_t off = pkb_call_half(calls, (size_t)g.rec);
	int64_t nu = g.rec / 16, ux = g.nx * 4 / 16, uv = g.nnz * 4 / 16;
	int64_t per = (nu + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(nu, per * (int64_t)blockIdx.x), u1 = min(nu, u0 + per);
	uint4 *mine = (uint4 *)((char *)stage[me] + off);
	for (int64_t u = u0 + threadIdx.x; u < u1; u += blockDim.x) {
		uint4 val = u < ux ? x[u] : u < ux + uv ? v[u - ux] : idx[u - ux - uv];
		mine[u] = val;
		all[me * nu + u] = val;
	}
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int k = 1; k < w; k++) {
		int p = (me + k) % w;   /* step k reads rank me+k */
		const uint4 *from = (const uint4 *)((const char *)stage[p] + off);
		for (int64_t u = u0 + threadIdx.x; u < u1; u += blockDim.x)
			all[p * nu + u] = from[u];
	}
}

/* first entry of the sorted keys k*nlat + o that is >= row */
__device__ static inline int lower(const int64_t *ki, const int64_t *oi, int64_t nnz, int nlat,
				   int64_t row)
{
	int64_t lo = 0, hi = nnz;
	while (lo < hi) {
		int64_t mid = (lo + hi) >> 1;
		if (ki[mid] * nlat + oi[mid] < row)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int)lo;
}

__global__ void __launch_bounds__(THREADS)
contract(const char *all, const float *weight, const float *bias, geo g, float *out)
{
	int64_t plane = (int64_t)g.l * g.nl, n = BATCH * plane;
	int cpa = CHANS / g.az;
	for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n;
	     t += (int64_t)gridDim.x * blockDim.x) {
		int b = (int)(t / plane), i = (int)(t / g.nl % g.l), l = (int)(t % g.nl);
		int O = g.p * g.l + i, P = g.a * g.nl + l;
		float acc[CHANS] = { 0 };
		for (int c = 0; c < CHANS; c++)
			for (int k = 0; k < KSIZE; k++) {
				float y = 0.f;
				for (int q = 0; q < g.pol; q++) {
					const char *r = all + (q * g.az + c / cpa) * g.rec;
					const float *v = (const float *)r + g.nx;
					const int64_t *ki = (const int64_t *)(v + g.nnz);
					const int64_t *oi = ki + g.nnz, *col = oi + g.nnz;
					int64_t row = (int64_t)k * g.nlat + O;
					int j1 = lower(ki, oi, g.nnz, g.nlat, row + 1);
					for (int j = lower(ki, oi, g.nnz, g.nlat, row); j < j1; j++) {
						int lat = (int)(col[j] / g.nlon);
						int lon = (int)((col[j] % g.nlon + P) % g.nlon);
						const float *xs = (const float *)(all + (q * g.az + lon / g.nl) * g.rec);
						y += v[j] * xs[((int64_t)(b * CHANS + c) * g.l + lat) * g.nl + lon % g.nl];
					}
				}
				for (int o = 0; o < CHANS; o++)
					acc[o] += weight[(o * CHANS + c) * KSIZE + k] * y;
			}
		for (int o = 0; o < CHANS; o++)
			out[(b * CHANS + o) * plane + (int64_t)i * g.nl + l] = acc[o] + bias[o];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	geo &g = s->g;
	g.az = ctx->world % 2 == 0 ? 2 : 1;
	g.pol = ctx->world / g.az;
	g.p = ctx->rank / g.az;
	g.a = ctx->rank % g.az;
	g.l = (int)ctx->in[0].shape[2];
	g.nl = (int)ctx->in[0].shape[3];
	g.nlat = g.l * g.pol;
	g.nlon = g.nl * g.az;
	g.nx = ctx->in[0].numel;
	g.nnz = ctx->in[2].numel;
	/* x: 32*8 floats a row pair; values 48*nlat bytes; indices 3*8*nnz: all
	 * multiples of 16 bytes */
	g.rec = g.nx * 4 + g.nnz * 4 + 3 * g.nnz * 8;
	if (cudaMalloc(&s->calls, GATHER_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, GATHER_BLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->all, ctx->world * g.rec) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * g.rec, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	for (int i = 0; i < 3; i++)
		if ((uintptr_t)ctx->in[i].data & 15) {
			ctx->svc->log(ctx, "inputs not 16-byte aligned");
			return 1;
		}
	gather<<<GATHER_BLOCKS, GATHER_THREADS, 0, st>>>(ctx->dev, (const uint4 *)ctx->in[0].data,
		(const uint4 *)ctx->in[2].data, (const uint4 *)ctx->in[1].data, s->g,
		s->stage.peers_dev, s->calls, (uint4 *)s->all);
	contract<<<132 * 8, THREADS, 0, st>>>(s->all, (const float *)ctx->in[3].data,
		(const float *)ctx->in[4].data, s->g, (float *)ctx->out[0].data);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		cudaFree(s->calls);
		cudaFree(s->all);
	}
	free(s);
	return 0;
}
