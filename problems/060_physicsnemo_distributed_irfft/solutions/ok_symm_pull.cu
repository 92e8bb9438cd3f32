/*
 * 060_physicsnemo_distributed_irfft, known-good: cuFFT for the local
 * inverse transforms, the transpose pulled over symmetric memory. No NCCL.
 *
 * real(ifft2(Y)) of the Hermitian completion Y equals real(ifft2(X')),
 * X' = X with columns 1 .. Wd/2-1 doubled and nothing above Wd/2 (the
 * conjugate half adds the conjugate of what the doubled half adds), so no
 * rank needs another's rows before the exchange:
 *   1. expand x (BC, Hl, K) to X' rows of Wd;
 *   2. inverse C2C along Wd, batch BC Hl, into this rank's symmetric
 *      buffer A;
 *   3. pull: every block meets its copies on the other ranks (every A is
 *      written by then), then moves 32 x 32 tiles A_j[bc][i][me Wl + c]
 *      (rows of rank j, this rank's columns) into v[bc][c][j Hl + i], times
 *      1/sqrt(Wd): the all-to-all, the concatenation along H and the
 *      transpose for the next transform in one pass. A second meeting lets
 *      the next call's FFT overwrite A;
 *   4. inverse C2C along H, batch BC Wl, in place on v;
 *   5. real part times 1/sqrt(H), transposed to (BC, H, Wl).
 *
 * Traffic: (W-1)/W of 8 BC Hl Wd bytes read from peers.
 */
#include <math.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define TILE 32
#define THREADS 256          /* 1-d blocks: the barrier counts threadIdx.x */
#define PULL_BLOCKS 264      /* two per SM on 132 SMs: all resident for the barrier */
#define MAX_WORLD 64

struct state {
	cufftHandle row_plan, col_plan;
	int have_row, have_col;
	cufftComplex *z;     /* (BC Hl, Wd): X' */
	cufftComplex *v;     /* (BC, Wl, H) */
	pkb_symm a;          /* (BC Hl, Wd): this rank's rows, transformed along Wd */
	int64_t bc, h, hl, k, wd, wl;
};

__global__ void __launch_bounds__(THREADS)
expand(const cufftComplex *x, cufftComplex *z, int64_t rows, int64_t kx, int64_t wd)
{
	int64_t n = rows * wd, half = wd / 2;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t row = i / wd, k = i % wd;
		cufftComplex v = make_cuComplex(0.f, 0.f);
		if (k <= half) {
			float f = k > 0 && k < half ? 2.f : 1.f;
			cufftComplex e = x[row * kx + k];
			v = make_cuComplex(f * e.x, f * e.y);
		}
		z[i] = v;
	}
}

/*
 * v[bc][c][j hl + i] = A_j[(bc hl + i) wd + me wl + c] * scale for every
 * rank j, in 32 x 32 tiles (i, c), peers in the order me, me+1, ...
 * Barriers before (every A written) and after (every peer done reading
 * ours).
 */
__global__ void __launch_bounds__(THREADS)
pull(pkb_dev_comm comm, const cufftComplex *const *a, cufftComplex *v, int64_t nbc, int64_t hl,
     int64_t wl, float scale)
{
	__shared__ cufftComplex tile[TILE][TILE + 1];
	int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
	int64_t nit = (hl + TILE - 1) / TILE, nct = (wl + TILE - 1) / TILE;
	int64_t per_peer = nbc * nit * nct, total = per_peer * comm.world;
	int64_t wd = wl * comm.world, h = hl * comm.world;
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
		int j = (int)((comm.rank + t / per_peer) % comm.world);
		int64_t rest = t % per_peer;
		int64_t bc = rest / (nit * nct), i0 = rest / nct % nit * TILE, c0 = rest % nct * TILE;
		const cufftComplex *src = a[j] + bc * hl * wd + (int64_t)comm.rank * wl;
		for (int k = ty; k < TILE; k += THREADS / TILE) {
			int64_t i = i0 + k, c = c0 + tx;
			if (i < hl && c < wl)
				tile[k][tx] = src[i * wd + c];
		}
		__syncthreads();
		for (int k = ty; k < TILE; k += THREADS / TILE) {
			int64_t c = c0 + k, i = i0 + tx;
			if (i < hl && c < wl) {
				cufftComplex e = tile[tx][k];
				v[(bc * wl + c) * h + j * hl + i] = make_cuComplex(e.x * scale,
										  e.y * scale);
			}
		}
		__syncthreads();   /* the tile is refilled next */
	}
	pkb_barrier_block(comm, blockIdx.x);
}

/* out[bc][r][c] = real(v[bc][c][r]) * scale; grid (h/TILE, wl/TILE, bc) */
__global__ void __launch_bounds__(THREADS)
real_rows(const cufftComplex *v, float *out, int64_t h, int64_t wl, float scale)
{
	__shared__ float tile[TILE][TILE + 1];
	int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
	int64_t bc = blockIdx.z, r0 = (int64_t)blockIdx.x * TILE, c0 = (int64_t)blockIdx.y * TILE;
	for (int k = ty; k < TILE; k += THREADS / TILE) {
		int64_t c = c0 + k, r = r0 + tx;
		if (r < h && c < wl)
			tile[k][tx] = v[(bc * wl + c) * h + r].x * scale;
	}
	__syncthreads();
	for (int k = ty; k < TILE; k += THREADS / TILE) {
		int64_t r = r0 + k, c = c0 + tx;
		if (r < h && c < wl)
			out[(bc * h + r) * wl + c] = tile[tx][k];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	const pkb_tensor *x = &ctx->in[0];
	if (x->dtype != PKB_C64 || x->ndim != 4 || ctx->world > MAX_WORLD)
		return 1;
	s->bc = x->shape[0] * x->shape[1];
	s->hl = x->shape[2];
	s->k = x->shape[3];
	s->h = s->hl * ctx->world;
	s->wd = 2 * (s->k - 1);
	s->wl = s->wd / ctx->world;
	if (s->wd % ctx->world)
		return 1;
	int64_t rows = s->bc * s->hl, cols = s->bc * s->wl;
	size_t bytes = (size_t)rows * s->wd * sizeof(cufftComplex);
	if (cudaMalloc(&s->z, bytes) != cudaSuccess || cudaMalloc(&s->v, bytes) != cudaSuccess)
		return 1;
	int n1 = (int)s->wd, n2 = (int)s->h;
	if (cufftPlanMany(&s->row_plan, 1, &n1, NULL, 1, n1, NULL, 1, n1, CUFFT_C2C, (int)rows) !=
	    CUFFT_SUCCESS)
		return 1;
	s->have_row = 1;
	if (cufftPlanMany(&s->col_plan, 1, &n2, NULL, 1, n2, NULL, 1, n2, CUFFT_C2C, (int)cols) !=
	    CUFFT_SUCCESS)
		return 1;
	s->have_col = 1;
	return ctx->svc->symm_alloc(ctx, bytes, &s->a);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	float sw = (float)(1.0 / sqrt((double)s->wd)), sh = (float)(1.0 / sqrt((double)s->h));
	int64_t rows = s->bc * s->hl, n = rows * s->wd;
	int64_t blocks = (n + THREADS - 1) / THREADS;

	expand<<<(unsigned)(blocks < 4096 ? blocks : 4096), THREADS, 0, st>>>(
		(const cufftComplex *)ctx->in[0].data, s->z, rows, s->k, s->wd);
	if (cufftSetStream(s->row_plan, st) != CUFFT_SUCCESS ||
	    cufftExecC2C(s->row_plan, s->z, (cufftComplex *)s->a.local, CUFFT_INVERSE) !=
		    CUFFT_SUCCESS)
		return 1;
	pull<<<PULL_BLOCKS, THREADS, 0, st>>>(ctx->dev, (const cufftComplex *const *)s->a.peers_dev,
					      s->v, s->bc, s->hl, s->wl, sw);
	if (cufftSetStream(s->col_plan, st) != CUFFT_SUCCESS ||
	    cufftExecC2C(s->col_plan, s->v, s->v, CUFFT_INVERSE) != CUFFT_SUCCESS)
		return 1;
	real_rows<<<dim3((unsigned)((s->h + TILE - 1) / TILE), (unsigned)((s->wl + TILE - 1) / TILE),
			 (unsigned)s->bc), THREADS, 0, st>>>(s->v, (float *)ctx->out[0].data, s->h,
							     s->wl, sh);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->have_row)
		cufftDestroy(s->row_plan);
	if (s->have_col)
		cufftDestroy(s->col_plan);
	cudaFree(s->z);
	cudaFree(s->v);
	free(s);
	ctx->user = NULL;
	return 0;
}
