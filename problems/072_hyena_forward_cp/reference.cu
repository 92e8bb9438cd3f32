/*
 * 072_hyena_forward_cp reference: NCCL for the two all-to-alls, cuFFT for
 * the long convolution (the original's torch.fft is cuFFT), plain kernels
 * for the rest. With lc = C/W channels per rank, L = 2048 W, n = 2L:
 *
 *   1. zl = T(x2 v) on this rank's (C, 2048) positions: the product is
 *      formed before the exchange (the same bits wherever it is formed),
 *      so x2 and v cross as one tensor; x1 never crosses (step 6);
 *   2. all-to-all: channel group j of zl to rank j, rank i's group of this
 *      rank's channels into zr[i] (lc, 2048) -- one NCCL group;
 *   3. un-zigzag into fp32 rows of length n: a[c] = z of channel c in
 *      natural order, zero past L; a[lc + c] = h's row of channel c, zero
 *      past K = 4096;
 *   4. one batched R2C of the 2 lc rows; spec_z *= spec_h / n (the
 *      original's kernel_f = rfft(h, n) / n, then the product); C2R
 *      (unnormalised: norm='forward' puts no scale on the inverse) into
 *      a's first lc rows: y = the causal linear convolution, no wrap;
 *   5. ys[i][c][s] = T(y[c][p] + z[c][p] conv_bias[c]) for rank i's
 *      position s (p in chunk i, then chunk 2W-1-i): the zigzag again;
 *   6. all-to-all back: yr[j] (lc, 2048) = channel group j at this rank's
 *      positions; out[0][s][c] = T(x1[c][s] yr[c / lc][c % lc][s]), the
 *      transpose in 32 x 32 tiles.
 *
 * Traffic per rank: (W-1)/W of 2 x C x 2048 elements each way (12 MiB at
 * bf16, W = 4, against the original's 4 tensors). FFT work: 3 lc
 * transforms of length n (~1 GFLOP per rank at W = 4); the fp32 rows are
 * 32 MiB whatever W.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cufft.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"
#include "pkb_device.cuh"   /* pkb_to_float, pkb_from_float */

PKB_SOLUTION;

#define THREADS 256
#define TILE 32
#define LOCAL 2048
#define CHUNK 1024

struct state {
	cufftHandle r2c, c2r;
	int have_r2c, have_c2r;
	void *zl, *zr, *ys, *yr;   /* (C, 2048) each, in T */
	float *a;                  /* (2 lc, n): z rows, then h rows; y over the z rows */
	cufftComplex *spec;        /* (2 lc, n/2 + 1) */
	int64_t c, lc, k, n;
};

/* zl = T(x2 v), element-wise */
template <typename T>
__global__ void __launch_bounds__(THREADS)
mul(const T *x2, const T *v, T *zl, int64_t len)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < len;
	     i += (int64_t)gridDim.x * THREADS)
		zl[i] = pkb_from_float<T>(pkb_to_float(x2[i]) * pkb_to_float(v[i]));
}

/* Natural position p of rank i's local position s under the zigzag: chunk i,
 * then chunk 2W-1-i. */
__device__ __forceinline__ int64_t natural(int i, int64_t s, int w)
{
	return s < CHUNK ? i * (int64_t)CHUNK + s : (2 * (int64_t)w - 1 - i) * CHUNK + s - CHUNK;
}

/* The owner rank and its local position of natural position p. */
__device__ __forceinline__ int owner(int64_t p, int w, int64_t *s)
{
	int q = (int)(p / CHUNK);
	*s = (q < w ? 0 : CHUNK) + p % CHUNK;
	return q < w ? q : 2 * w - 1 - q;
}

/* a[c][p] = z (natural order, zero past L); a[lc + c][j] = h[c0 + c][j] (zero
 * past K), both fp32 */
template <typename T>
__global__ void __launch_bounds__(THREADS)
fill_rows(const T *zr, const T *h, float *a, int64_t lc, int64_t k, int64_t n, int64_t c0,
	  int w)
{
	int64_t len = n / 2, total = 2 * lc * n;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < total;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t row = i / n, p = i % n;
		float v = 0.f;
		if (row < lc && p < len) {
			int64_t s;
			int src = owner(p, w, &s);
			v = pkb_to_float(zr[((int64_t)src * lc + row) * LOCAL + s]);
		} else if (row >= lc && p < k) {
			v = pkb_to_float(h[(c0 + row - lc) * k + p]);
		}
		a[i] = v;
	}
}

/* spec[c][f] *= spec[lc + c][f] / n, as the original: kernel_f scaled, then
 * the complex product in fp32 */
__global__ void __launch_bounds__(THREADS)
spectral_product(cufftComplex *spec, int64_t lc, int64_t nf, float inv_n)
{
	int64_t total = lc * nf;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < total;
	     i += (int64_t)gridDim.x * THREADS) {
		cufftComplex x = spec[i], hk = spec[total + i];
		hk.x *= inv_n;
		hk.y *= inv_n;
		spec[i] = make_cuComplex(__fsub_rn(__fmul_rn(x.x, hk.x), __fmul_rn(x.y, hk.y)),
					 __fadd_rn(__fmul_rn(x.x, hk.y), __fmul_rn(x.y, hk.x)));
	}
}

/* ys[i][c][s] = T(y[c][p] + z[c][p] b[c0 + c]), p = natural(i, s): the fp32
 * product and sum rounded apart, as the original's two torch ops */
template <typename T>
__global__ void __launch_bounds__(THREADS)
add_bias_pack(const float *y, const T *zr, const T *bias, T *ys, int64_t lc, int64_t n,
	      int64_t c0, int w)
{
	int64_t total = (int64_t)w * lc * LOCAL;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < total;
	     i += (int64_t)gridDim.x * THREADS) {
		int dst = (int)(i / (lc * LOCAL));
		int64_t c = i / LOCAL % lc, p = natural(dst, i % LOCAL, w), s;
		int src = owner(p, w, &s);
		float z = pkb_to_float(zr[((int64_t)src * lc + c) * LOCAL + s]);
		float b = pkb_to_float(bias[c0 + c]);
		ys[i] = pkb_from_float<T>(__fadd_rn(y[c * n + p], __fmul_rn(z, b)));
	}
}

/* out[s][c] = T(x1[c][s] yr[c][s]): yr is (C, 2048) in global channel order
 * (group j from rank j); grid (2048/TILE, C/TILE), THREADS threads */
template <typename T>
__global__ void __launch_bounds__(THREADS)
finish(const T *x1, const T *yr, T *out, int64_t nc)
{
	__shared__ float tile[TILE][TILE + 1];
	int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
	int64_t s0 = (int64_t)blockIdx.x * TILE, c0 = (int64_t)blockIdx.y * TILE;
	for (int r = ty; r < TILE; r += THREADS / TILE) {
		int64_t i = (c0 + r) * LOCAL + s0 + tx;
		tile[r][tx] = pkb_to_float(x1[i]) * pkb_to_float(yr[i]);
	}
	__syncthreads();
	for (int r = ty; r < TILE; r += THREADS / TILE)
		out[(s0 + r) * nc + c0 + tx] = pkb_from_float<T>(tile[tx][r]);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	if (t != PKB_BF16 && t != PKB_FP32) {
		ctx->svc->log(ctx, "072 reference: dtype must be bf16 or fp32");
		return 1;
	}
	s->c = ctx->in[0].shape[1];
	s->k = ctx->in[3].shape[1];
	s->lc = s->c / ctx->world;
	s->n = 2 * (int64_t)LOCAL * ctx->world;
	if (ctx->in[0].shape[2] != LOCAL || s->c % ctx->world || s->c % TILE ||
	    s->k > s->n / 2 || s->n > (1 << 30)) {
		ctx->svc->log(ctx, "072 reference: unsupported shapes");
		return 1;
	}
	size_t bytes = (size_t)s->c * LOCAL * pkb_dtype_size(t), nf = (size_t)(s->n / 2 + 1);
	PKB_CK_CUDA(ctx, cudaMalloc(&s->zl, bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->zr, bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->ys, bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->yr, bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->a, (size_t)2 * s->lc * s->n * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->spec, (size_t)2 * s->lc * nf * sizeof(cufftComplex)));
	int n = (int)s->n;
	PKB_CK_FFT(ctx, cufftPlanMany(&s->r2c, 1, &n, NULL, 1, n, NULL, 1, (int)nf, CUFFT_R2C,
				      (int)(2 * s->lc)));
	s->have_r2c = 1;
	PKB_CK_FFT(ctx, cufftPlanMany(&s->c2r, 1, &n, NULL, 1, (int)nf, NULL, 1, n, CUFFT_C2R,
				      (int)s->lc));
	s->have_c2r = 1;
	return 0;
}

/* one NCCL group: piece j of send (lc x 2048) to rank j, rank j's into recv */
static int all_to_all(pkb_ctx *ctx, struct state *s, const void *send, void *recv,
		      cudaStream_t st)
{
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));
	size_t piece = (size_t)s->lc * LOCAL, e = pkb_dtype_size(ctx->in[0].dtype);
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int j = 0; j < ctx->world; j++) {
		PKB_CK_NCCL(ctx, ncclSend((const char *)send + j * piece * e, piece, nt, j, comm,
					  st));
		PKB_CK_NCCL(ctx, ncclRecv((char *)recv + j * piece * e, piece, nt, j, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	return 0;
}

template <typename T>
static int run_t(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int w = ctx->world;
	int64_t all = s->c * LOCAL, nf = s->n / 2 + 1, c0 = (int64_t)ctx->rank * s->lc;
	T *zl = (T *)s->zl, *zr = (T *)s->zr, *ys = (T *)s->ys, *yr = (T *)s->yr;

	mul<T><<<pkb_ref_blocks(all, THREADS, 4096), THREADS, 0, st>>>(
		(const T *)ctx->in[1].data, (const T *)ctx->in[2].data, zl, all);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(all_to_all(ctx, s, zl, zr, st));
	fill_rows<T><<<pkb_ref_blocks(2 * s->lc * s->n, THREADS, 8192), THREADS, 0, st>>>(
		zr, (const T *)ctx->in[3].data, s->a, s->lc, s->k, s->n, c0, w);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_FFT(ctx, cufftSetStream(s->r2c, st));
	PKB_CK_FFT(ctx, cufftExecR2C(s->r2c, s->a, s->spec));
	spectral_product<<<pkb_ref_blocks(s->lc * nf, THREADS, 8192), THREADS, 0, st>>>(
		s->spec, s->lc, nf, (float)(1.0 / (double)s->n));
	PKB_CK_LAUNCH(ctx);
	PKB_CK_FFT(ctx, cufftSetStream(s->c2r, st));
	PKB_CK_FFT(ctx, cufftExecC2R(s->c2r, s->spec, s->a));
	add_bias_pack<T><<<pkb_ref_blocks(all, THREADS, 4096), THREADS, 0, st>>>(
		s->a, zr, (const T *)ctx->in[4].data, ys, s->lc, s->n, c0, w);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(all_to_all(ctx, s, ys, yr, st));
	finish<T><<<dim3(LOCAL / TILE, (unsigned)(s->c / TILE)), THREADS, 0, st>>>(
		(const T *)ctx->in[0].data, yr, (T *)ctx->out[0].data, s->c);
	PKB_CK_LAUNCH(ctx);
	return 0;
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

static void release(struct state *s)
{
	if (s->have_r2c)
		cufftDestroy(s->r2c);
	if (s->have_c2r)
		cufftDestroy(s->c2r);
	cudaFree(s->zl);
	cudaFree(s->zr);
	cudaFree(s->ys);
	cudaFree(s->yr);
	cudaFree(s->a);
	cudaFree(s->spec);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
