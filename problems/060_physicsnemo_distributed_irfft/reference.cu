/*
 * 060_physicsnemo_distributed_irfft reference: cuFFT for the two local
 * inverse transforms, NCCL point-to-point for the all-to-all.
 *
 * The Hermitian completion needs no communication. With Y the completed
 * spectrum, Y[h][Wd-k] = conj(Y[H-h][k]) for 0 < k < Wd/2, so the columns
 * Wd/2+1 .. Wd-1 contribute to ifft2(Y) the complex conjugate of what
 * columns 1 .. Wd/2-1 contribute, and
 *     real(ifft2(Y)) = real(ifft2(X'))
 *     X'[h][k] = X[h][k] for k = 0, Wd/2;  2 X[h][k] for 0 < k < Wd/2;  0 above
 * for any input (columns 0 and Wd/2 enter as they are in both). X' needs
 * only the rank's own rows, where the original all-gathers the whole
 * padded spectrum to fetch row H-h for row h. The rest is the original's
 * pencil algorithm:
 *   1. expand: X' rows (BC Hl rows of Wd), from x (BC, Hl, K);
 *   2. inverse C2C along Wd, batch BC Hl, in place;
 *   3. pack: columns [j Wl, (j+1) Wl) of every row to rank j's piece
 *      (BC, Hl, Wl), times 1/sqrt(Wd); the own piece into its receive slot;
 *   4. all-to-all: one NCCL group of a send and a receive per peer;
 *   5. unpack: piece j is rows [j Hl, (j+1) Hl) of each image's (H, Wl)
 *      block, stored transposed, (BC, Wl, H), so that the H transform is
 *      contiguous;
 *   6. inverse C2C along H, batch BC Wl, in place;
 *   7. real part times 1/sqrt(H), transposed back to (BC, H, Wl).
 *
 * Traffic per rank: (W-1)/W of 8 BC Hl Wd bytes over NVLink (31 MB at W =
 * 4); 8 passes over ~41 MB buffers in HBM.
 */
#include <math.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define TILE 32
#define ROWS 8
#define THREADS 256

struct state {
	cufftHandle row_plan, col_plan;
	int have_row, have_col;
	cufftComplex *z;     /* (BC Hl, Wd) */
	cufftComplex *send;  /* W pieces (BC, Hl, Wl); then v (BC, Wl, H) */
	cufftComplex *recv;  /* W pieces (BC, Hl, Wl) */
	int64_t bc, h, hl, k, wd, wl;
};

/* z[row][k] = X'[row][k] (above) from x[row][0 .. kx) */
__global__ void __launch_bounds__(THREADS)
expand(const cufftComplex *x, cufftComplex *z, int64_t rows, int64_t kx, int64_t wd)
{
	int64_t n = rows * wd, half = wd / 2;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t row = i / wd, k = i % wd;
		cufftComplex v = make_cuComplex(0.f, 0.f);
		if (k <= half) {
			v = x[row * kx + k];
			if (k > 0 && k < half) {
				v.x *= 2.f;
				v.y *= 2.f;
			}
		}
		z[i] = v;
	}
}

/* piece j of row `row` = z[row][j wl .. (j+1) wl) * scale; own piece to recv */
__global__ void __launch_bounds__(THREADS)
pack(const cufftComplex *z, cufftComplex *send, cufftComplex *recv, int me, int64_t rows,
     int64_t wl, int w, float scale)
{
	int64_t wd = wl * w, n = rows * wd, piece = rows * wl;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t row = i / wd, col = i % wd, j = col / wl;
		cufftComplex v = z[i];
		(j == me ? recv : send)[j * piece + row * wl + col % wl] =
			make_cuComplex(v.x * scale, v.y * scale);
	}
}

/*
 * v[bc][c][j hl + i] = piece j's (bc, i, c): each piece is an (hl, wl)
 * block per image, moved transposed. grid (wl/TILE, hl/TILE, bc * w).
 */
__global__ void __launch_bounds__(TILE * ROWS)
unpack_t(const cufftComplex *recv, cufftComplex *v, int64_t nbc, int64_t hl, int64_t wl, int w)
{
	__shared__ cufftComplex tile[TILE][TILE + 1];
	int64_t bc = blockIdx.z % nbc, j = blockIdx.z / nbc, h = hl * w;
	int64_t c0 = (int64_t)blockIdx.x * TILE, i0 = (int64_t)blockIdx.y * TILE;
	const cufftComplex *src = recv + (j * nbc + bc) * hl * wl;
	for (int k = threadIdx.y; k < TILE; k += ROWS) {
		int64_t i = i0 + k, c = c0 + threadIdx.x;
		if (i < hl && c < wl)
			tile[k][threadIdx.x] = src[i * wl + c];
	}
	__syncthreads();
	for (int k = threadIdx.y; k < TILE; k += ROWS) {
		int64_t c = c0 + k, i = i0 + threadIdx.x;
		if (i < hl && c < wl)
			v[(bc * wl + c) * h + j * hl + i] = tile[threadIdx.x][k];
	}
}

/* out[bc][r][c] = real(v[bc][c][r]) * scale; grid (h/TILE, wl/TILE, bc) */
__global__ void __launch_bounds__(TILE * ROWS)
real_rows(const cufftComplex *v, float *out, int64_t h, int64_t wl, float scale)
{
	__shared__ float tile[TILE][TILE + 1];
	int64_t bc = blockIdx.z, r0 = (int64_t)blockIdx.x * TILE, c0 = (int64_t)blockIdx.y * TILE;
	for (int k = threadIdx.y; k < TILE; k += ROWS) {
		int64_t c = c0 + k, r = r0 + threadIdx.x;
		if (r < h && c < wl)
			tile[k][threadIdx.x] = v[(bc * wl + c) * h + r].x * scale;
	}
	__syncthreads();
	for (int k = threadIdx.y; k < TILE; k += ROWS) {
		int64_t r = r0 + k, c = c0 + threadIdx.x;
		if (r < h && c < wl)
			out[(bc * h + r) * wl + c] = tile[threadIdx.x][k];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	const pkb_tensor *x = &ctx->in[0], *o = &ctx->out[0];
	if (x->dtype != PKB_C64 || o->dtype != PKB_FP32 || x->ndim != 4 || o->ndim != 4) {
		ctx->svc->log(ctx, "060 reference: x must be complex64 (B, C, Hl, K), out fp32");
		return 1;
	}
	s->bc = x->shape[0] * x->shape[1];
	s->hl = x->shape[2];
	s->k = x->shape[3];
	s->h = s->hl * ctx->world;
	s->wd = (int64_t)pkb_param_get(ctx, "s_1", 2.0 * (double)(s->k - 1));
	s->wl = s->wd / ctx->world;
	if (s->wd != 2 * (s->k - 1) || s->wd % ctx->world || o->shape[2] != s->h ||
	    o->shape[3] != s->wl) {
		ctx->svc->log(ctx, "060 reference: shapes do not match W = %d", ctx->world);
		return 1;
	}
	int64_t rows = s->bc * s->hl, cols = s->bc * s->wl;
	size_t bytes = (size_t)rows * s->wd * sizeof(cufftComplex);
	PKB_CK_CUDA(ctx, cudaMalloc(&s->z, bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, bytes));
	int n1 = (int)s->wd, n2 = (int)s->h;
	PKB_CK_FFT(ctx, cufftPlanMany(&s->row_plan, 1, &n1, NULL, 1, n1, NULL, 1, n1, CUFFT_C2C,
				      (int)rows));
	s->have_row = 1;
	PKB_CK_FFT(ctx, cufftPlanMany(&s->col_plan, 1, &n2, NULL, 1, n2, NULL, 1, n2, CUFFT_C2C,
				      (int)cols));
	s->have_col = 1;
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t rows = s->bc * s->hl, piece = rows * s->wl, n = rows * s->wd;
	float sw = (float)(1.0 / sqrt((double)s->wd)), sh = (float)(1.0 / sqrt((double)s->h));
	unsigned blocks = pkb_ref_blocks(n, THREADS, 4096);

	expand<<<blocks, THREADS, 0, st>>>((const cufftComplex *)ctx->in[0].data, s->z, rows, s->k,
					   s->wd);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_FFT(ctx, cufftSetStream(s->row_plan, st));
	PKB_CK_FFT(ctx, cufftExecC2C(s->row_plan, s->z, s->z, CUFFT_INVERSE));
	pack<<<blocks, THREADS, 0, st>>>(s->z, s->send, s->recv, ctx->rank, rows, s->wl,
					 ctx->world, sw);
	PKB_CK_LAUNCH(ctx);

	/* complex64 travels as pairs of fp32; pack placed this rank's own piece */
	PKB_CK(pkb_ref_all_to_all_others(ctx, s->send, s->recv, (size_t)(2 * piece), ncclFloat32,
					 sizeof(float)));

	/* v reuses the send buffer: NCCL is done with it in stream order */
	cufftComplex *v = s->send;
	dim3 blk(TILE, ROWS);
	unpack_t<<<dim3((unsigned)((s->wl + TILE - 1) / TILE), (unsigned)((s->hl + TILE - 1) / TILE),
			(unsigned)(s->bc * ctx->world)), blk, 0, st>>>(s->recv, v, s->bc, s->hl, s->wl,
								       ctx->world);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_FFT(ctx, cufftSetStream(s->col_plan, st));
	PKB_CK_FFT(ctx, cufftExecC2C(s->col_plan, v, v, CUFFT_INVERSE));
	real_rows<<<dim3((unsigned)((s->h + TILE - 1) / TILE), (unsigned)((s->wl + TILE - 1) / TILE),
			 (unsigned)s->bc), blk, 0, st>>>(v, (float *)ctx->out[0].data, s->h, s->wl,
							 sh);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	if (s->have_row)
		cufftDestroy(s->row_plan);
	if (s->have_col)
		cufftDestroy(s->col_plan);
	cudaFree(s->z);
	cudaFree(s->send);
	cudaFree(s->recv);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
