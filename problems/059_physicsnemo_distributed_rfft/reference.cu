/*
 * 059_physicsnemo_distributed_rfft reference: cuFFT for the two local
 * transforms, NCCL point-to-point for the all-to-all, as the original's
 * torch.fft (cuFFT) and dist.all_to_all (grouped NCCL send/recv) do it.
 *
 *   1. transpose x (B, H, Wl) to columns xt (B, Wl, H), Wl = Wd/W: cuFFT
 *      wants each transform contiguous, and x's B and Wl batch dimensions
 *      do not merge into one stride;
 *   2. R2C along H, batch B*Wl (what torch.fft.fft does with real input:
 *      the one-sided transform, the other half by conjugate symmetry);
 *   3. pack: row h of column c goes to rank h / Hl's piece (B, Hl, Wl),
 *      Hl = H/W, conj(Y[H-h]) for h > H/2, times 1/sqrt(H) (ortho); this
 *      rank's own piece straight into its receive slot;
 *   4. all-to-all: one NCCL group of a send and a receive per peer;
 *   5. unpack: piece j fills columns [j Wl, (j+1) Wl) of t (B, Hl, Wd);
 *   6. C2C along Wd, batch B*Hl, in place;
 *   7. the first Wd/2+1 frequencies, times 1/sqrt(Wd), into out.
 *
 * Traffic per rank: (W-1)/W of its 8 B Hl Wl W bytes over NVLink (24 MiB
 * at the default W = 4); about 9 passes over 16-32 MiB buffers in HBM.
 */
#include <math.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define TILE 32
#define ROWS 8        /* a tile is moved by TILE x ROWS threads */
#define THREADS 256

struct state {
	cufftHandle r2c, c2c;
	int have_r2c, have_c2c;
	float *xt;           /* (B, Wl, H) */
	cufftComplex *yh;    /* (B, Wl, H/2+1) */
	cufftComplex *send;  /* W pieces (B, Hl, Wl); then t (B, Hl, Wd) */
	cufftComplex *recv;  /* W pieces (B, Hl, Wl) */
	int64_t b, h, wl, hl, wd;
};

/* xt[b][c][h] = x[b][h][c]; grid (Wl/TILE, H/TILE, B) rounded up */
__global__ void __launch_bounds__(TILE * ROWS)
to_columns(const float *x, float *xt, int64_t h, int64_t wl)
{
	__shared__ float tile[TILE][TILE + 1];
	int64_t b = blockIdx.z, c0 = (int64_t)blockIdx.x * TILE, h0 = (int64_t)blockIdx.y * TILE;
	const float *src = x + b * h * wl;
	float *dst = xt + b * h * wl;
	for (int k = threadIdx.y; k < TILE; k += ROWS) {
		int64_t r = h0 + k, c = c0 + threadIdx.x;
		if (r < h && c < wl)
			tile[k][threadIdx.x] = src[r * wl + c];
	}
	__syncthreads();
	for (int k = threadIdx.y; k < TILE; k += ROWS) {
		int64_t c = c0 + k, r = h0 + threadIdx.x;
		if (r < h && c < wl)
			dst[c * h + r] = tile[threadIdx.x][k];
	}
}

/*
 * The full H-point spectrum of column c from its one-sided half (Y[h] =
 * conj(Y[H-h]) for a real column), scaled, moved to its destination's
 * piece: dest j = h / hl, row h % hl, element (b, h % hl, c) of the piece.
 * Piece `me` goes to recv, the others to send. grid (H/TILE, Wl/TILE, B).
 */
__global__ void __launch_bounds__(TILE * ROWS)
pack(const cufftComplex *yh, cufftComplex *send, cufftComplex *recv, int me, int64_t nb,
     int64_t h, int64_t hl, int64_t wl, float scale)
{
	__shared__ cufftComplex tile[TILE][TILE + 1];
	int64_t b = blockIdx.z, h0 = (int64_t)blockIdx.x * TILE, c0 = (int64_t)blockIdx.y * TILE;
	int64_t half = h / 2 + 1, piece = nb * hl * wl;
	for (int k = threadIdx.y; k < TILE; k += ROWS) {
		int64_t c = c0 + k, r = h0 + threadIdx.x;
		if (r < h && c < wl) {
			const cufftComplex *col = yh + (b * wl + c) * half;
			cufftComplex v = r < half ? col[r] : col[h - r];
			if (r >= half)
				v.y = -v.y;
			v.x *= scale;
			v.y *= scale;
			tile[k][threadIdx.x] = v;
		}
	}
	__syncthreads();
	for (int k = threadIdx.y; k < TILE; k += ROWS) {
		int64_t r = h0 + k, c = c0 + threadIdx.x;
		if (r < h && c < wl) {
			int64_t j = r / hl;
			cufftComplex *dst = (j == me ? recv : send) + j * piece;
			dst[(b * hl + r % hl) * wl + c] = tile[threadIdx.x][k];
		}
	}
}

/* t[b][r][j wl + c] = piece j's (b, r, c): the received pieces side by side */
__global__ void __launch_bounds__(THREADS)
unpack(const cufftComplex *recv, cufftComplex *t, int64_t nb, int64_t hl, int64_t wl, int w)
{
	int64_t wd = wl * w, n = nb * hl * wd, piece = nb * hl * wl;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t col = i % wd, row = i / wd;   /* row = b * hl + r */
		int64_t j = col / wl, c = col % wl;
		t[i] = recv[j * piece + row * wl + c];
	}
}

/* out[row][k] = t[row][k] * scale for k < wd/2 + 1 */
__global__ void __launch_bounds__(THREADS)
truncate_scale(const cufftComplex *t, cufftComplex *out, int64_t rows, int64_t wd, float scale)
{
	int64_t keep = wd / 2 + 1, n = rows * keep;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		cufftComplex v = t[(i / keep) * wd + i % keep];
		v.x *= scale;
		v.y *= scale;
		out[i] = v;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	const pkb_tensor *x = &ctx->in[0], *o = &ctx->out[0];
	if (x->dtype != PKB_FP32 || o->dtype != PKB_C64 || x->ndim != 3) {
		ctx->svc->log(ctx, "059 reference: x must be fp32 (B, H, Wl), out complex64");
		return 1;
	}
	s->b = x->shape[0];
	s->h = x->shape[1];
	s->wl = x->shape[2];
	s->hl = s->h / ctx->world;
	s->wd = s->wl * ctx->world;
	if (s->h % ctx->world || o->shape[1] != s->hl || o->shape[2] != s->wd / 2 + 1) {
		ctx->svc->log(ctx, "059 reference: shapes do not match W = %d", ctx->world);
		return 1;
	}
	int64_t cols = s->b * s->wl, rows = s->b * s->hl;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->xt, (size_t)cols * s->h * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->yh, (size_t)cols * (s->h / 2 + 1) * sizeof(cufftComplex)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, (size_t)rows * s->wd * sizeof(cufftComplex)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, (size_t)rows * s->wd * sizeof(cufftComplex)));
	int n1 = (int)s->h, n2 = (int)s->wd;
	PKB_CK_FFT(ctx, cufftPlanMany(&s->r2c, 1, &n1, NULL, 1, n1, NULL, 1, n1 / 2 + 1, CUFFT_R2C,
				      (int)cols));
	s->have_r2c = 1;
	PKB_CK_FFT(ctx, cufftPlanMany(&s->c2c, 1, &n2, NULL, 1, n2, NULL, 1, n2, CUFFT_C2C,
				      (int)rows));
	s->have_c2c = 1;
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const float *x = (const float *)ctx->in[0].data;
	cufftComplex *out = (cufftComplex *)ctx->out[0].data;
	int64_t piece = s->b * s->hl * s->wl, rows = s->b * s->hl;
	float sh = (float)(1.0 / sqrt((double)s->h)), sw = (float)(1.0 / sqrt((double)s->wd));

	dim3 blk(TILE, ROWS);
	to_columns<<<dim3((unsigned)((s->wl + TILE - 1) / TILE), (unsigned)((s->h + TILE - 1) / TILE),
			  (unsigned)s->b), blk, 0, st>>>(x, s->xt, s->h, s->wl);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_FFT(ctx, cufftSetStream(s->r2c, st));
	PKB_CK_FFT(ctx, cufftExecR2C(s->r2c, s->xt, s->yh));
	pack<<<dim3((unsigned)((s->h + TILE - 1) / TILE), (unsigned)((s->wl + TILE - 1) / TILE),
		    (unsigned)s->b), blk, 0, st>>>(s->yh, s->send, s->recv, ctx->rank, s->b, s->h,
						   s->hl, s->wl, sh);
	PKB_CK_LAUNCH(ctx);

	/* complex64 travels as pairs of fp32; pack placed this rank's own piece */
	PKB_CK(pkb_ref_all_to_all_others(ctx, s->send, s->recv, (size_t)(2 * piece), ncclFloat32,
					 sizeof(float)));

	/* t reuses the send buffer: NCCL is done with it in stream order */
	cufftComplex *t = s->send;
	unpack<<<pkb_ref_blocks(rows * s->wd, THREADS, 4096), THREADS, 0, st>>>(
		s->recv, t, s->b, s->hl, s->wl, ctx->world);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_FFT(ctx, cufftSetStream(s->c2c, st));
	PKB_CK_FFT(ctx, cufftExecC2C(s->c2c, t, t, CUFFT_FORWARD));
	truncate_scale<<<pkb_ref_blocks(rows * (s->wd / 2 + 1), THREADS, 4096), THREADS, 0, st>>>(
		t, out, rows, s->wd, sw);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	if (s->have_r2c)
		cufftDestroy(s->r2c);
	if (s->have_c2c)
		cufftDestroy(s->c2c);
	cudaFree(s->xt);
	cudaFree(s->yh);
	cudaFree(s->send);
	cudaFree(s->recv);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
