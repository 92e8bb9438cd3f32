/*
 * 009_layernorm_backward, known-bad: the all-reduce is right, the outputs are
 * returned as (d_beta, d_gamma) -- the order the original computes them in,
 * and the usual (dbias, dweight) slip -- instead of (d_gamma, d_beta).
 * Otherwise identical to ok_symm_fp32_partials.cu.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define TILE_COLS 64
#define ROW_THREADS 8
#define MIN_CHUNK_ROWS 32
#define XTHREADS 256
#define MAX_XBLOCKS 256

struct state {
	float *ws;          /* [chunks][2][N] */
	pkb_symm sums;      /* [2][N] fp32 per rank */
	int chunks;
	int64_t chunk_rows;
};

template <typename T>
__global__ void __launch_bounds__(32 * ROW_THREADS)
colsum_partial(const T *xh, const T *dy, float *ws, int64_t m, int64_t n, int64_t chunk_rows)
{
	__shared__ float red[4][ROW_THREADS][32];
	int tx = threadIdx.x, ty = threadIdx.y;
	int64_t c[2] = { (int64_t)blockIdx.x * TILE_COLS + tx, (int64_t)blockIdx.x * TILE_COLS + tx + 32 };
	int64_t r0 = (int64_t)blockIdx.y * chunk_rows;
	int64_t r1 = r0 + chunk_rows < m ? r0 + chunk_rows : m;
	float g[2] = { 0.f, 0.f }, b[2] = { 0.f, 0.f };

	for (int64_t r = r0 + ty; r < r1; r += ROW_THREADS)
		for (int k = 0; k < 2; k++)
			if (c[k] < n) {
				float d = pkb_to_float(dy[r * n + c[k]]);
				g[k] += pkb_to_float(pkb_from_float<T>(__fmul_rn(d, pkb_to_float(xh[r * n + c[k]]))));
				b[k] += d;
			}
	red[0][ty][tx] = g[0];
	red[1][ty][tx] = g[1];
	red[2][ty][tx] = b[0];
	red[3][ty][tx] = b[1];
	__syncthreads();
	if (ty < 4) {
		float s = 0.f;
		for (int k = 0; k < ROW_THREADS; k++)
			s += red[ty][k][tx];
		int64_t col = c[ty & 1];
		if (col < n)
			ws[(int64_t)blockIdx.y * 2 * n + (ty >= 2 ? n : 0) + col] = s;
	}
}

template <typename T>
__global__ void __launch_bounds__(XTHREADS)
exchange(pkb_dev_comm comm, const float *ws, float *const *sums, T *d_gamma, T *d_beta,
	 int chunks, int64_t n)
{
	int64_t n2 = 2 * n;
	int64_t per = (n2 + gridDim.x - 1) / gridDim.x;
	int64_t j0 = per * blockIdx.x, j1 = j0 + per < n2 ? j0 + per : n2;
	float *mine = sums[comm.rank];

	for (int64_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
		float s = 0.f;
		for (int c = 0; c < chunks; c++)
			s += ws[(int64_t)c * n2 + j];
		mine[j] = s;
	}
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int64_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
		float s = 0.f;
		for (int r = 0; r < comm.world; r++)
			s += sums[r][j];
		if (j < n)
			d_gamma[j] = pkb_from_float<T>(s);
		else
			d_beta[j - n] = pkb_from_float<T>(s);
	}
	pkb_barrier_block(comm, blockIdx.x);   /* peers are done reading ours */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int64_t m = ctx->in[0].shape[0], n = ctx->in[0].shape[1];
	/* grid.y is at most 65535 */
	s->chunk_rows = (m + 65534) / 65535;
	if (s->chunk_rows < MIN_CHUNK_ROWS)
		s->chunk_rows = MIN_CHUNK_ROWS;
	s->chunks = (int)((m + s->chunk_rows - 1) / s->chunk_rows);
	if (ctx->world > XTHREADS)
		return 1;
	if (cudaMalloc(&s->ws, (size_t)s->chunks * 2 * n * sizeof(float)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * n * sizeof(float), &s->sums);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t m = ctx->in[0].shape[0], n = ctx->in[0].shape[1];
	dim3 grid((unsigned)((n + TILE_COLS - 1) / TILE_COLS), (unsigned)s->chunks);
	colsum_partial<T><<<grid, dim3(32, ROW_THREADS), 0, st>>>(
		(const T *)ctx->in[0].data, (const T *)ctx->in[1].data, s->ws, m, n, s->chunk_rows);
	int64_t blocks = (2 * n + XTHREADS - 1) / XTHREADS;
	blocks = blocks > MAX_XBLOCKS ? MAX_XBLOCKS : blocks;
	exchange<T><<<(unsigned)blocks, XTHREADS, 0, st>>>(
		ctx->dev, s->ws, (float *const *)s->sums.peers_dev,
		(T *)ctx->out[1].data, (T *)ctx->out[0].data, s->chunks, n);   /* swapped */
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
		cudaFree(s->ws);
		free(s);
	}
	return 0;
}
