/*
 * 059_physicsnemo_distributed_rfft, known-good: cuFFT for the local
 * transforms, the transpose pulled over symmetric memory. No NCCL.
 *
 *   1. x (B, H, Wl) to complex columns xc (B, Wl, H) (imaginary 0);
 *   2. C2C along H, batch B*Wl, into this rank's symmetric buffer A: the
 *      full spectrum at once (the reference's R2C + conjugate fill is
 *      another order of the same sums);
 *   3. pull: every block meets its copies on the other ranks (all of A is
 *      written on every rank by then: the FFT ran before, in stream order),
 *      then moves 32 x 32 tiles A_j[b][c][me Hl + h] (rows of this rank's
 *      block, columns of rank j) into t[b][h][j Wl + c], scaled by
 *      1/sqrt(H): the all-to-all, the concatenation and the transpose in one
 *      pass, each element read once over NVLink. A second meeting lets the
 *      next call's FFT overwrite A;
 *   4. C2C along Wd, batch B*Hl, in place on t;
 *   5. the first Wd/2+1 frequencies times 1/sqrt(Wd) into out.
 *
 * Traffic: (W-1)/W of 8 B H Wl bytes read from peers, like the reference's
 * all-to-all, without its pack and unpack passes.
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
	cufftHandle col_plan, row_plan;
	int have_col, have_row;
	cufftComplex *xc;    /* (B, Wl, H) */
	cufftComplex *t;     /* (B, Hl, Wd) */
	pkb_symm a;          /* (B, Wl, H): this rank's H-transformed columns */
	int64_t b, h, wl, hl, wd;
};

/* xc[b][c][h] = (x[b][h][c], 0); grid (Wl/TILE, H/TILE, B), 256 threads */
__global__ void __launch_bounds__(THREADS)
to_complex_columns(const float *x, cufftComplex *xc, int64_t h, int64_t wl)
{
	__shared__ float tile[TILE][TILE + 1];
	int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
	int64_t b = blockIdx.z, c0 = (int64_t)blockIdx.x * TILE, h0 = (int64_t)blockIdx.y * TILE;
	for (int k = ty; k < TILE; k += THREADS / TILE) {
		int64_t r = h0 + k, c = c0 + tx;
		if (r < h && c < wl)
			tile[k][tx] = x[(b * h + r) * wl + c];
	}
	__syncthreads();
	for (int k = ty; k < TILE; k += THREADS / TILE) {
		int64_t c = c0 + k, r = h0 + tx;
		if (r < h && c < wl)
			xc[(b * wl + c) * h + r] = make_cuComplex(tile[tx][k], 0.f);
	}
}

/*
 * t[b][r][j wl + c] = A_j[b][c][me hl + r] * scale for every rank j, in
 * 32 x 32 tiles (r, c), peers in the order me, me+1, ... so that the ranks
 * spread their reads. Barriers before (every A written) and after (every
 * peer done reading ours).
 */
__global__ void __launch_bounds__(THREADS)
pull(pkb_dev_comm comm, const cufftComplex *const *a, cufftComplex *t, int64_t nb, int64_t h,
     int64_t hl, int64_t wl, float scale)
{
	__shared__ cufftComplex tile[TILE][TILE + 1];
	int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
	int64_t nht = (hl + TILE - 1) / TILE, nct = (wl + TILE - 1) / TILE;
	int64_t per_peer = nb * nht * nct, total = per_peer * comm.world, wd = wl * comm.world;
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int64_t i = blockIdx.x; i < total; i += gridDim.x) {
		int j = (int)((comm.rank + i / per_peer) % comm.world);
		int64_t rest = i % per_peer;
		int64_t b = rest / (nht * nct), r0 = rest / nct % nht * TILE, c0 = rest % nct * TILE;
		const cufftComplex *src = a[j] + b * wl * h + (int64_t)comm.rank * hl;
		for (int k = ty; k < TILE; k += THREADS / TILE) {
			int64_t c = c0 + k, r = r0 + tx;
			if (r < hl && c < wl)
				tile[k][tx] = src[c * h + r];
		}
		__syncthreads();
		for (int k = ty; k < TILE; k += THREADS / TILE) {
			int64_t r = r0 + k, c = c0 + tx;
			if (r < hl && c < wl) {
				cufftComplex v = tile[tx][k];
				t[(b * hl + r) * wd + j * wl + c] = make_cuComplex(v.x * scale,
										  v.y * scale);
			}
		}
		__syncthreads();   /* the tile is refilled next */
	}
	pkb_barrier_block(comm, blockIdx.x);
}

/* out[row][k] = t[row][k] * scale for k < wd/2 + 1 */
__global__ void __launch_bounds__(THREADS)
truncate_scale(const cufftComplex *t, cufftComplex *out, int64_t rows, int64_t wd, float scale)
{
	int64_t keep = wd / 2 + 1, n = rows * keep;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		cufftComplex v = t[(i / keep) * wd + i % keep];
		out[i] = make_cuComplex(v.x * scale, v.y * scale);
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	const pkb_tensor *x = &ctx->in[0];
	if (x->dtype != PKB_FP32 || x->ndim != 3 || ctx->world > MAX_WORLD)
		return 1;
	s->b = x->shape[0];
	s->h = x->shape[1];
	s->wl = x->shape[2];
	s->hl = s->h / ctx->world;
	s->wd = s->wl * ctx->world;
	int64_t cols = s->b * s->wl, rows = s->b * s->hl;
	size_t bytes = (size_t)cols * s->h * sizeof(cufftComplex);
	if (cudaMalloc(&s->xc, bytes) != cudaSuccess || cudaMalloc(&s->t, bytes) != cudaSuccess)
		return 1;
	int n1 = (int)s->h, n2 = (int)s->wd;
	if (cufftPlanMany(&s->col_plan, 1, &n1, NULL, 1, n1, NULL, 1, n1, CUFFT_C2C, (int)cols) !=
	    CUFFT_SUCCESS)
		return 1;
	s->have_col = 1;
	if (cufftPlanMany(&s->row_plan, 1, &n2, NULL, 1, n2, NULL, 1, n2, CUFFT_C2C, (int)rows) !=
	    CUFFT_SUCCESS)
		return 1;
	s->have_row = 1;
	return ctx->svc->symm_alloc(ctx, bytes, &s->a);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	float sh = (float)(1.0 / sqrt((double)s->h)), sw = (float)(1.0 / sqrt((double)s->wd));
	int64_t rows = s->b * s->hl, keep = s->wd / 2 + 1;

	to_complex_columns<<<dim3((unsigned)((s->wl + TILE - 1) / TILE),
				  (unsigned)((s->h + TILE - 1) / TILE), (unsigned)s->b),
			     THREADS, 0, st>>>((const float *)ctx->in[0].data, s->xc, s->h, s->wl);
	if (cufftSetStream(s->col_plan, st) != CUFFT_SUCCESS ||
	    cufftExecC2C(s->col_plan, s->xc, (cufftComplex *)s->a.local, CUFFT_FORWARD) !=
		    CUFFT_SUCCESS)
		return 1;
	pull<<<PULL_BLOCKS, THREADS, 0, st>>>(ctx->dev, (const cufftComplex *const *)s->a.peers_dev,
					      s->t, s->b, s->h, s->hl, s->wl, sh);
	if (cufftSetStream(s->row_plan, st) != CUFFT_SUCCESS ||
	    cufftExecC2C(s->row_plan, s->t, s->t, CUFFT_FORWARD) != CUFFT_SUCCESS)
		return 1;
	int64_t blocks = (rows * keep + THREADS - 1) / THREADS;
	truncate_scale<<<(unsigned)(blocks < 4096 ? blocks : 4096), THREADS, 0, st>>>(
		s->t, (cufftComplex *)ctx->out[0].data, rows, s->wd, sw);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->have_col)
		cufftDestroy(s->col_plan);
	if (s->have_row)
		cufftDestroy(s->row_plan);
	cudaFree(s->xc);
	cudaFree(s->t);
	free(s);
	ctx->user = NULL;
	return 0;
}
