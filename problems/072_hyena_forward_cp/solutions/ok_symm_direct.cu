/*
 * 072_hyena_forward_cp, known-good: a direct causal convolution over
 * symmetric memory, no FFT and no NCCL. Rank r convolves its lc = C/W
 * channels over the whole sequence, reading z where it lies and pushing
 * each result to the rank that owns its position.
 *
 *   1. z = T(x2 v) into this rank's symmetric buffer zs (C, 2048): its own
 *      positions, every channel;
 *   2. conv: every block meets its copies on the other ranks (every zs
 *      written), then takes items of (channel, 1024 positions): the
 *      filter row and the 1024 + K - 1 samples of z before and in the item
 *      (natural order, pulled from the owners' zs under the zigzag; zero
 *      before the sequence) into shared memory, 4 outputs a thread; each
 *      sum in fp32 blocks of 64 taps added into fp64 (closer to exact
 *      than the reference's fp32 FFT); T(y + z b) stored into the owner's
 *      symmetric ys at (channel, its local position). A second meeting: all
 *      pushes landed, all reads of zs done;
 *   3. out[s][c] = T(x1[c][s] ys[c][s]), transposed in 32 x 32 tiles.
 *
 * Back-to-back calls: a rank rewrites zs (step 1) only after its conv
 * kernel's closing meeting, which every block of every rank reaches after
 * its reads; peers push into ys (step 2) only after meeting this rank's
 * blocks in the next call, after its step 3. The conv grid is all
 * resident (the meetings need it), the same on every rank.
 *
 * Work: lc L K = C 2048 K FMAs a rank (8.6 G, whatever W): milliseconds on
 * the CUDA cores, where the reference's FFT takes about 100 microseconds.
 * It need not be fast.
 */
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define TILE 32
#define LOCAL 2048
#define CHUNK 1024
#define FILT 4096
#define SPAN 1024                 /* positions per item: 4 per thread */
#define PER (SPAN / THREADS)
#define BLOCK_TAPS 64             /* fp32 partial sums this long, added in fp64 */

struct state {
	pkb_symm zs, ys;   /* (C, 2048) in T each */
	int grid;
};

/* The owner rank and its local position of natural position p (zigzag: rank
 * i holds chunks i and 2W-1-i). */
__device__ __forceinline__ int owner(int64_t p, int w, int64_t *s)
{
	int q = (int)(p / CHUNK);
	*s = (q < w ? 0 : CHUNK) + p % CHUNK;
	return q < w ? q : 2 * w - 1 - q;
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
mul(const T *x2, const T *v, T *z, int64_t len)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < len;
	     i += (int64_t)gridDim.x * THREADS)
		z[i] = pkb_from_float<T>(pkb_to_float(x2[i]) * pkb_to_float(v[i]));
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
conv(pkb_dev_comm comm, T *const *zp, T *const *yp, const T *h, const T *bias, int64_t lc)
{
	__shared__ float hs[FILT];
	__shared__ float zw[SPAN + FILT - 1];   /* z at p0 - (K-1) ... p0 + SPAN - 1 */
	int w = comm.world;
	int64_t len = (int64_t)LOCAL * w, spans = len / SPAN, c0 = (int64_t)comm.rank * lc;
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int64_t item = blockIdx.x; item < lc * spans; item += gridDim.x) {
		int64_t c = c0 + item / spans, p0 = item % spans * SPAN;
		for (int i = threadIdx.x; i < FILT; i += THREADS)
			hs[i] = pkb_to_float(h[c * FILT + i]);
		for (int i = threadIdx.x; i < SPAN + FILT - 1; i += THREADS) {
			int64_t q = p0 - (FILT - 1) + i, s;
			float v = 0.f;
			if (q >= 0) {
				int o = owner(q, w, &s);
				v = pkb_to_float(zp[o][c * LOCAL + s]);
			}
			zw[i] = v;
		}
		__syncthreads();
		double acc[PER] = {};
		for (int j0 = 0; j0 < FILT; j0 += BLOCK_TAPS) {
			float part[PER] = {};
			for (int j = j0; j < j0 + BLOCK_TAPS; j++) {
				float hj = hs[j];
#pragma unroll
				for (int m = 0; m < PER; m++)
					part[m] = fmaf(hj, zw[threadIdx.x + m * THREADS + FILT - 1 - j],
						       part[m]);
			}
#pragma unroll
			for (int m = 0; m < PER; m++)
				acc[m] += part[m];
		}
		float b = pkb_to_float(bias[c]);
#pragma unroll
		for (int m = 0; m < PER; m++) {
			int64_t p = p0 + threadIdx.x + m * THREADS, s;
			float z = zw[threadIdx.x + m * THREADS + FILT - 1];
			int o = owner(p, w, &s);
			yp[o][c * LOCAL + s] = pkb_from_float<T>(__fadd_rn((float)acc[m],
									   __fmul_rn(z, b)));
		}
		__syncthreads();   /* hs and zw are refilled next */
	}
	pkb_barrier_block(comm, blockIdx.x);
}

/* out[s][c] = T(x1[c][s] y[c][s]); grid (2048/TILE, C/TILE) */
template <typename T>
__global__ void __launch_bounds__(THREADS)
finish(const T *x1, const T *y, T *out, int64_t nc)
{
	__shared__ float tile[TILE][TILE + 1];
	int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
	int64_t s0 = (int64_t)blockIdx.x * TILE, c0 = (int64_t)blockIdx.y * TILE;
	for (int r = ty; r < TILE; r += THREADS / TILE) {
		int64_t i = (c0 + r) * LOCAL + s0 + tx;
		tile[r][tx] = pkb_to_float(x1[i]) * pkb_to_float(y[i]);
	}
	__syncthreads();
	for (int r = ty; r < TILE; r += THREADS / TILE)
		out[(s0 + r) * nc + c0 + tx] = pkb_from_float<T>(tile[tx][r]);
}

template <typename T>
static int resident(int *grid)
{
	int dev, sms, per;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
	    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, conv<T>, THREADS, 0) !=
		    cudaSuccess || per < 1)
		return 1;
	*grid = sms * per < PKB_SIGNAL_SLOTS ? sms * per : PKB_SIGNAL_SLOTS;
	return 0;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	pkb_dtype t = ctx->in[0].dtype;
	int64_t nc = ctx->in[0].shape[1];
	if (ctx->in[0].shape[2] != LOCAL || ctx->in[3].shape[1] != FILT || nc % ctx->world ||
	    nc % TILE || ctx->world > THREADS)
		return 1;
	if (t == PKB_BF16 ? resident<__nv_bfloat16>(&s->grid)
			  : t == PKB_FP32 ? resident<float>(&s->grid) : 1)
		return 1;
	size_t bytes = (size_t)nc * LOCAL * pkb_dtype_size(t);
	if (ctx->svc->symm_alloc(ctx, bytes, &s->zs) || ctx->svc->symm_alloc(ctx, bytes, &s->ys))
		return 1;
	return 0;
}

template <typename T>
static int run_t(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t nc = ctx->in[0].shape[1], all = nc * LOCAL, lc = nc / ctx->world;
	mul<T><<<(unsigned)((all + THREADS - 1) / THREADS), THREADS, 0, st>>>(
		(const T *)ctx->in[1].data, (const T *)ctx->in[2].data, (T *)s->zs.local, all);
	conv<T><<<s->grid, THREADS, 0, st>>>(ctx->dev, (T *const *)s->zs.peers_dev,
					      (T *const *)s->ys.peers_dev,
					      (const T *)ctx->in[3].data,
					      (const T *)ctx->in[4].data, lc);
	finish<T><<<dim3(LOCAL / TILE, (unsigned)(nc / TILE)), THREADS, 0, st>>>(
		(const T *)ctx->in[0].data, (const T *)s->ys.local, (T *)ctx->out[0].data, nc);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return run_t<__nv_bfloat16>(ctx, s);
	case PKB_FP32: return run_t<float>(ctx, s);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	free(ctx->user);
	ctx->user = NULL;
	return 0;
}
