/*
 * 062_torchharmonics_spherical_convolution reference.
 *
 * Rank (p, a)'s outputs read x at every latitude of every polar row and at
 * most nl + L + 9 longitudes, and every polar rank's filter: this reference
 * all-gathers x, psi_values and psi_indices (three ncclAllGather calls;
 * 24 MiB received per rank at W = 4, against the original's ~60 MiB of
 * transposes and the fp32 all-reduce of the full-latitude contraction), then
 * computes its outputs in one kernel. Each thread takes one (b, i, l) and
 * all 8 output channels: for every input channel c and kernel k it sums
 * Y(b, c, k, O, P) over the polar rows q and the entries of row (k, O) of
 * the filter of rank (q, c's azimuth rank) -- the contraction, the polar
 * reduction and both transposes in one pass -- and mixes it into the 8
 * outputs with the rank's weight; bias last, as the original adds it after
 * the einsum. A small kernel first finds each filter row's entries in the
 * coalesced (sorted) COO indices by binary search.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define BATCH 32
#define CHANS 8
#define KSIZE 3
#define THREADS 256

struct geo {
	int az, pol, p, a, world;
	int nlat, nlon, l, nl;
	int64_t nx, nnz;
};

struct state {
	float *xall, *vall;
	int64_t *iall;
	int *rowptr;    /* (W, 3*nlat + 1) */
	geo g;
};

/* rowptr[s][row] = first entry of rank s's filter with k*nlat + o >= row */
__global__ void rows(const int64_t *iall, geo g, int *rowptr)
{
	int nrows = KSIZE * g.nlat + 1;
	for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < g.world * nrows;
	     t += gridDim.x * blockDim.x) {
		int s = t / nrows, row = t % nrows;
		const int64_t *ki = iall + (size_t)s * 3 * g.nnz, *oi = ki + g.nnz;
		int64_t lo = 0, hi = g.nnz;
		while (lo < hi) {
			int64_t mid = (lo + hi) / 2;
			if (ki[mid] * g.nlat + oi[mid] < row)
				lo = mid + 1;
			else
				hi = mid;
		}
		rowptr[t] = (int)lo;
	}
}

__global__ void __launch_bounds__(THREADS)
disco(const float *xall, const float *vall, const int64_t *iall, const int *rowptr,
      const float *weight, const float *bias, geo g, float *out)
{
	int64_t plane = (int64_t)g.l * g.nl, n = BATCH * plane;
	int nrows = KSIZE * g.nlat + 1, cpa = CHANS / g.az;
	for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n;
	     t += (int64_t)gridDim.x * blockDim.x) {
		int b = (int)(t / plane), i = (int)(t % plane / g.nl), l = (int)(t % g.nl);
		int O = g.p * g.l + i, P = g.a * g.nl + l;
		float acc[CHANS];
		for (int o = 0; o < CHANS; o++)
			acc[o] = 0.f;
		for (int c = 0; c < CHANS; c++)
			for (int k = 0; k < KSIZE; k++) {
				float y = 0.f;
				for (int q = 0; q < g.pol; q++) {
					int s = q * g.az + c / cpa;   /* whose filter */
					const int *rp = rowptr + (size_t)s * nrows + k * g.nlat + O;
					const int64_t *col = iall + (size_t)s * 3 * g.nnz + 2 * g.nnz;
					const float *v = vall + (size_t)s * g.nnz;
					for (int j = rp[0]; j < rp[1]; j++) {
						int lat = (int)(col[j] / g.nlon);
						int lon = (int)((col[j] % g.nlon + P) % g.nlon);
						int src = q * g.az + lon / g.nl;   /* whose x */
						y += v[j] * xall[src * g.nx +
							((int64_t)(b * CHANS + c) * g.l + lat) * g.nl + lon % g.nl];
					}
				}
				for (int o = 0; o < CHANS; o++)
					acc[o] += weight[(o * CHANS + c) * KSIZE + k] * y;
			}
		for (int o = 0; o < CHANS; o++)
			out[(int64_t)(b * CHANS + o) * plane + i * g.nl + l] = acc[o] + bias[o];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	geo &g = s->g;
	g.world = ctx->world;
	g.az = (int)pkb_param_get(ctx, "azimuth_size", 1);
	g.pol = (int)pkb_param_get(ctx, "polar_size", 1);
	g.p = ctx->rank / g.az;
	g.a = ctx->rank % g.az;
	g.l = (int)ctx->in[0].shape[2];
	g.nl = (int)ctx->in[0].shape[3];
	g.nlat = g.l * g.pol;
	g.nlon = g.nl * g.az;
	g.nx = ctx->in[0].numel;
	g.nnz = ctx->in[2].numel;
	size_t w = ctx->world;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->xall, w * g.nx * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->vall, w * g.nnz * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->iall, w * 3 * g.nnz * sizeof(int64_t)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->rowptr, w * (KSIZE * g.nlat + 1) * sizeof(int)));
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	const geo &g = s->g;
	PKB_CK_NCCL(ctx, ncclGroupStart());
	PKB_CK_NCCL(ctx, ncclAllGather(ctx->in[0].data, s->xall, g.nx, ncclFloat32, comm, st));
	PKB_CK_NCCL(ctx, ncclAllGather(ctx->in[2].data, s->vall, g.nnz, ncclFloat32, comm, st));
	PKB_CK_NCCL(ctx, ncclAllGather(ctx->in[1].data, s->iall, 3 * g.nnz, ncclInt64, comm, st));
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	int nrows = g.world * (KSIZE * g.nlat + 1);
	rows<<<pkb_ref_blocks(nrows, THREADS, 64), THREADS, 0, st>>>(s->iall, g, s->rowptr);
	PKB_CK_LAUNCH(ctx);
	int64_t n = (int64_t)BATCH * g.l * g.nl;
	disco<<<pkb_ref_blocks(n, THREADS, 4096), THREADS, 0, st>>>(
		s->xall, s->vall, s->iall, s->rowptr, (const float *)ctx->in[3].data,
		(const float *)ctx->in[4].data, g, (float *)ctx->out[0].data);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	cudaFree(s->xall);
	cudaFree(s->vall);
	cudaFree(s->iall);
	cudaFree(s->rowptr);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
