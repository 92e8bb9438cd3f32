/*
 * 032_fused_moe_fwd_lora, known-good: 031's ok_symm_weights with the LoRA
 * factors moved along with the MLP.
 *
 * A rank's MLP with its LoRA factors is 3*128*N + 256 + N + 24 N + 3072
 * elements (816 KiB in bf16 at N = 1024); the tokens it routes away and
 * their results back are about 2 * 1.86 (W-1)/W M*N elements (5.6 MiB at
 * M = N = 1024, W = 4). So every rank copies its twelve tensors into its
 * symmetric slot, and one kernel stages them, meets the peers and pulls all
 * W sets into one local array, set q at q * half bytes. Every token then
 * runs through every rank's MLP in strided batched GEMMs (batch W, the
 * tokens broadcast with stride 0; W times the GEMM work of the routed
 * rows), each LoRA product rounded to T as the reference does:
 *     g = T(T(x Wg^T + bg) + T(T(x A_g^T) B_g^T)), u likewise,
 *     h = T(T(silu(g)) * u), y = T(h Wd^T + bd), l = T(T(h A_d^T) B_d^T),
 * and the combine adds y and l of the owner of each of a token's two
 * experts: out = T(T(T(y_q0 + l_q0) w_0) + T(T(y_q1 + l_q1) w_1)).
 * Every biased layer's GEMM writes fp32, and the bias is added before the
 * one rounding to T, as the reference (lib/linear.cuh) does: in route,
 * silu_mul and combine, which read the fp32 products; the LoRA GEMMs write
 * T, rounded by cuBLAS as the reference's.
 *
 * The router is this rank's own: logits from cuBLAS (exact: the inputs make
 * every logit an exact fp32 sum), softmax by exp2f and one reciprocal (a
 * reordering of the reference's expf and divide: the same routing, weights
 * within an ulp), top 2 with ties to the lower expert.
 *
 * The exchange kernel: block b stages units [b*per, (b+1)*per) of this
 * rank's slot, meets block b of every rank (pkb_barrier_block), and pulls
 * the same units of every rank's slot: what it reads is what the peers'
 * block b staged before the barrier. Back to back, the slot has two halves
 * by call parity (pkb_call_half): a block writes a half again two calls
 * later, after the barrier of the call in between, which a peer's block
 * reaches only once it has pulled this call's half.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define EXPERTS 8
#define TOP_K 2
#define INTER 128
#define LORA_R 8
#define NW 12          /* the MLP's and LoRA's tensors: in[3 .. 14] */
#define THREADS 256
#define XBLOCKS 128    /* exchange blocks: barrier slots 0 .. 127 */

struct state {
	cublasHandle_t blas;
	void *ws;
	int64_t m, n;
	int w, el;
	pkb_symm slot;         /* two halves: this rank's MLP */
	size_t half, part[NW]; /* byte offsets of the tensors in a half */
	uint32_t *calls;       /* [XBLOCKS] for pkb_call_half */
	void *weights;         /* [W][half]: every rank's MLP */
	float *logits;         /* [M][8] x Wr^T in fp32 */
	void *wts;             /* [M][2] of T */
	int *own;              /* [M][2] the rank of each chosen expert */
	float *gate, *up;      /* [W][M][128] the fp32 products, bias not added */
	void *h;               /* [W][M][128] of T */
	void *lg, *lu;         /* [W][M][128] the gate and up LoRA terms */
	void *xa;              /* [W][M][8] a LoRA A product (reused) */
	float *y;              /* [W][M][N] the down projection's fp32 product */
	void *ld;              /* [W][M][N] its LoRA term */
};

struct mlp_src {
	const char *p[NW];
	size_t bytes[NW], part[NW];
};

/* row-major C (m, n) = A (m, k) B^T, B (n, k), C of type ct (fp32 for a
 * biased layer: the caller adds the bias and rounds once; T for a LoRA
 * factor: cuBLAS rounds), batch of `batch` with element strides sa, sb, sc;
 * fp32 accumulation */
static int gemm_nt(struct state *s, cudaDataType dt, int64_t m, int64_t n, int64_t k,
		   const void *a, long long sa, const void *b, long long sb, void *c,
		   cudaDataType ct, long long sc, int batch)
{
	float one = 1.0f, zero = 0.0f;
	return cublasGemmStridedBatchedEx(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m,
					  (int)k, &one, b, dt, (int)k, sb, a, dt, (int)k, sa,
					  &zero, c, ct, (int)n, sc, batch, CUBLAS_COMPUTE_32F,
					  CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;
}

template <typename T> __device__ __forceinline__ float rt(float x)
{
	return pkb_to_float(pkb_from_float<T>(x));
}

/* one thread a token: logits = T(acc + br), softmax by exp2f and a
 * reciprocal, rounded to T; top 2, ties to the lower expert; the owner
 * rank of each */
template <typename T>
__global__ void route(const float *acc, const T *br, T *wts, int *own, int64_t m, int el)
{
	int64_t t = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (t >= m)
		return;
	const float log2e = 1.4426950408889634f;
	float l[EXPERTS], mx = -INFINITY, sum = 0;
	for (int i = 0; i < EXPERTS; i++) {
		l[i] = rt<T>(acc[t * EXPERTS + i] + pkb_to_float(br[i]));
		mx = fmaxf(mx, l[i]);
	}
	for (int i = 0; i < EXPERTS; i++) {
		l[i] = exp2f((l[i] - mx) * log2e);
		sum += l[i];
	}
	float inv = 1.0f / sum;
	for (int i = 0; i < EXPERTS; i++)
		l[i] = rt<T>(l[i] * inv);
	int first = 0;
	for (int i = 1; i < EXPERTS; i++)
		if (l[i] > l[first])
			first = i;
	int second = first == 0 ? 1 : 0;
	for (int i = second + 1; i < EXPERTS; i++)
		if (i != first && l[i] > l[second])
			second = i;
	wts[t * TOP_K] = pkb_from_float<T>(l[first]);
	wts[t * TOP_K + 1] = pkb_from_float<T>(l[second]);
	own[t * TOP_K] = first / el;
	own[t * TOP_K + 1] = second / el;
}

/* stage this block's units of our MLP, meet, pull those units of every
 * rank's slot into weights[q] */
__global__ void __launch_bounds__(THREADS)
exchange_mlps(pkb_dev_comm comm, struct mlp_src w, char *const *slots, uint32_t *calls,
	      size_t half, char *weights)
{
	size_t off = pkb_call_half(calls, half);
	int64_t units = (int64_t)(half / 16), per = (units + gridDim.x - 1) / gridDim.x;
	int64_t u0 = per * blockIdx.x, u1 = u0 + per < units ? u0 + per : units;
	char *mine = slots[comm.rank] + off;
	for (int i = 0; i < NW; i++) {
		/* tensor i's bytes in [u0, u1) units; part[i] is 16-aligned */
		int64_t a = (int64_t)w.part[i], b = a + (int64_t)w.bytes[i];
		int64_t lo = a > u0 * 16 ? a : u0 * 16, hi = b < u1 * 16 ? b : u1 * 16;
		if (lo >= hi)
			continue;
		int64_t whole = (hi - lo) / 16;
		const char *src = w.p[i] + (lo - a);
		for (int64_t u = threadIdx.x; u < whole; u += THREADS)
			((uint4 *)(mine + lo))[u] = ((const uint4 *)src)[u];
		/* a ragged end: a bias of N elements, N * e not a multiple of 16 */
		for (int64_t c = whole * 16 + threadIdx.x; c < hi - lo; c += THREADS)
			mine[lo + c] = src[c];
	}
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int q = 0; q < comm.world; q++) {
		const uint4 *from = (const uint4 *)(slots[q] + off);
		uint4 *to = (uint4 *)(weights + q * half);
		for (int64_t u = u0 + threadIdx.x; u < u1; u += THREADS)
			to[u] = from[u];
	}
}

/* for MLP q = i / (M*128): g = T(T(ag + bg_q) + lg), u = T(T(au + bu_q) +
 * lu) (the fp32 products ag, au), h = T(T(silu(g)) * u); MLP q's biases
 * are sw elements after MLP q-1's */
template <typename T>
__global__ void silu_mul(const float *ag, const T *lg, const float *au, const T *lu,
			 const T *bg, const T *bu, long long sw, T *h, int64_t m, int w)
{
	int64_t per = m * INTER;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < w * per;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t q = i / per, j = i % INTER;
		float g = rt<T>(ag[i] + pkb_to_float(bg[q * sw + j]));
		float u = rt<T>(au[i] + pkb_to_float(bu[q * sw + j]));
		g = rt<T>(g + pkb_to_float(lg[i]));
		u = rt<T>(u + pkb_to_float(lu[i]));
		float s = rt<T>(g / (1.0f + expf(-g)));
		h[i] = pkb_from_float<T>(s * u);
	}
}

/* out[t] = T(T(T(y + l)[q0][t] w_0) + T(T(y + l)[q1][t] w_1)), y[q] =
 * T(acc[q] + bd_q) from the fp32 products acc; bd_q at bd + q sw */
template <typename T>
__global__ void combine(const float *acc, const T *ld, const T *bd, long long sw,
			const T *wts, const int *own, T *out, int64_t m, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < m * n;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t t = i / n, c = i % n, q0 = own[t * TOP_K], q1 = own[t * TOP_K + 1];
		int64_t i0 = q0 * m * n + i, i1 = q1 * m * n + i;
		float a = rt<T>(acc[i0] + pkb_to_float(bd[q0 * sw + c]));
		float b = rt<T>(acc[i1] + pkb_to_float(bd[q1 * sw + c]));
		a = rt<T>(rt<T>(a + pkb_to_float(ld[i0])) * pkb_to_float(wts[t * TOP_K]));
		b = rt<T>(rt<T>(b + pkb_to_float(ld[i1])) * pkb_to_float(wts[t * TOP_K + 1]));
		out[i] = pkb_from_float<T>(a + b);
	}
}

static unsigned blocks(int64_t n, unsigned cap)
{
	int64_t b = (n + THREADS - 1) / THREADS;
	return b < 1 ? 1u : b > cap ? cap : (unsigned)b;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->m = ctx->in[0].shape[0];
	s->n = ctx->in[0].shape[1];
	s->w = ctx->world;
	if (EXPERTS % s->w || s->w > THREADS)
		return 1;
	s->el = EXPERTS / s->w;
	for (int i = 0; i < NW; i++)
		s->part[i] = s->half, s->half += (ctx->in[3 + i].bytes + 15) & ~(size_t)15;
	size_t es = pkb_dtype_size(ctx->in[0].dtype), wm = (size_t)s->w * s->m;
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetMathMode(s->blas, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
			      CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) != CUBLAS_STATUS_SUCCESS ||
	    cudaMalloc(&s->ws, 32u << 20) != cudaSuccess ||
	    cudaMalloc(&s->calls, XBLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, XBLOCKS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->weights, s->w * s->half) != cudaSuccess ||
	    cudaMalloc(&s->logits, s->m * EXPERTS * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->wts, s->m * TOP_K * es) != cudaSuccess ||
	    cudaMalloc(&s->own, s->m * TOP_K * sizeof(int)) != cudaSuccess ||
	    cudaMalloc(&s->gate, wm * INTER * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->up, wm * INTER * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->h, wm * INTER * es) != cudaSuccess ||
	    cudaMalloc(&s->lg, wm * INTER * es) != cudaSuccess ||
	    cudaMalloc(&s->lu, wm * INTER * es) != cudaSuccess ||
	    cudaMalloc(&s->xa, wm * LORA_R * es) != cudaSuccess ||
	    cudaMalloc(&s->y, wm * s->n * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->ld, wm * s->n * es) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->slot);
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaDataType dt)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t m = s->m, n = s->n, w = s->w;
	const T *x = (const T *)ctx->in[0].data;
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetWorkspace(s->blas, s->ws, 32u << 20) != CUBLAS_STATUS_SUCCESS)
		return 1;

	/* every rank's MLP and LoRA */
	struct mlp_src src;
	for (int i = 0; i < NW; i++) {
		src.p[i] = (const char *)ctx->in[3 + i].data;
		src.bytes[i] = ctx->in[3 + i].bytes;
		src.part[i] = s->part[i];
	}
	unsigned xb = blocks((int64_t)(s->half / 16), XBLOCKS);
	exchange_mlps<<<xb, THREADS, 0, st>>>(ctx->dev, src, (char *const *)s->slot.peers_dev,
					      s->calls, s->half, (char *)s->weights);

	/* router */
	if (gemm_nt(s, dt, m, EXPERTS, n, x, 0, ctx->in[1].data, 0, s->logits, CUDA_R_32F, 0, 1))
		return 1;
	route<T><<<blocks(m, 1u << 20), THREADS, 0, st>>>(s->logits, (const T *)ctx->in[2].data,
							   (T *)s->wts, s->own, m, s->el);

	/* every token through every MLP: MLP q's tensors are `stride` bytes
	 * after MLP q-1's */
	const char *mlps = (const char *)s->weights;
	size_t stride = s->half;
	long long sw = (long long)(stride / sizeof(T));
	const char *wg = mlps + s->part[0], *wu = mlps + s->part[2], *wd = mlps + s->part[4];
	const char *ag = mlps + s->part[6], *bgl = mlps + s->part[7];
	const char *au = mlps + s->part[8], *bul = mlps + s->part[9];
	const char *ad = mlps + s->part[10], *bdl = mlps + s->part[11];
	long long mi = m * INTER, mr = m * LORA_R, mn = m * n;
	const cudaDataType f32 = CUDA_R_32F;
	if (gemm_nt(s, dt, m, INTER, n, x, 0, wg, sw, s->gate, f32, mi, (int)w) ||
	    gemm_nt(s, dt, m, INTER, n, x, 0, wu, sw, s->up, f32, mi, (int)w) ||
	    gemm_nt(s, dt, m, LORA_R, n, x, 0, ag, sw, s->xa, dt, mr, (int)w) ||
	    gemm_nt(s, dt, m, INTER, LORA_R, s->xa, mr, bgl, sw, s->lg, dt, mi, (int)w) ||
	    gemm_nt(s, dt, m, LORA_R, n, x, 0, au, sw, s->xa, dt, mr, (int)w) ||
	    gemm_nt(s, dt, m, INTER, LORA_R, s->xa, mr, bul, sw, s->lu, dt, mi, (int)w))
		return 1;
	silu_mul<T><<<blocks(w * m * INTER, 4096), THREADS, 0, st>>>(
		s->gate, (const T *)s->lg, s->up, (const T *)s->lu,
		(const T *)(mlps + s->part[1]), (const T *)(mlps + s->part[3]), sw, (T *)s->h, m,
		(int)w);
	if (gemm_nt(s, dt, m, n, INTER, s->h, mi, wd, sw, s->y, f32, mn, (int)w) ||
	    gemm_nt(s, dt, m, LORA_R, INTER, s->h, mi, ad, sw, s->xa, dt, mr, (int)w) ||
	    gemm_nt(s, dt, m, n, LORA_R, s->xa, mr, bdl, sw, s->ld, dt, mn, (int)w))
		return 1;

	combine<T><<<blocks(m * n, 4096), THREADS, 0, st>>>(
		s->y, (const T *)s->ld, (const T *)(mlps + s->part[5]), sw, (const T *)s->wts,
		s->own, (T *)ctx->out[0].data, m, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return launch<__nv_bfloat16>(ctx, s, CUDA_R_16BF);
	case PKB_FP32: return launch<float>(ctx, s, CUDA_R_32F);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		if (s->blas)
			cublasDestroy(s->blas);
		void *bufs[] = { s->ws, s->calls, s->weights, s->logits, s->wts, s->own,
				 s->gate, s->up, s->h, s->lg, s->lu, s->xa, s->y, s->ld };
		for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
			cudaFree(bufs[i]);
	}
	free(s);
	return 0;
}
