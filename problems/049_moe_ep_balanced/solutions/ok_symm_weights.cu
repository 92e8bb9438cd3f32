/*
 * 049_moe_ep_balanced, known-good (the same file serves 050 and 051): move
 * the experts' weights, not the tokens.
 *
 * An expert MLP is 3*128*N + 256 + N elements (768 KiB in bf16 at N =
 * 1024); the tokens routed away and back are 2 top_k (G-1)/G M*N elements
 * (6 MiB at W = 4). So every rank stores its MLP in its symmetric slot,
 * meets every rank once, pulls the G-1 other MLPs of its EP group over
 * NVLink, and runs all of its own tokens through each of the G MLPs
 * (cuBLAS; G times the GEMM work of the routed rows, cheap at 128-wide
 * hidden layers). A token's slot j takes T(y * w_j) from the MLP of its
 * expert's owner; out = T(part_0 + part_1). Every biased layer's GEMM
 * writes fp32, and the bias is added before the one rounding to T, as the
 * reference (lib/linear.cuh) does: in route, silu_mul and take.
 *
 * The router is this rank's own: logits from cuBLAS (exact: the inputs make
 * every logit an exact fp32 sum), softmax by exp2f and one reciprocal (a
 * reordering of the reference's expf and divide: the same routing, weights
 * within an ulp), top_k with ties to the lower expert.
 *
 * Back to back: two halves of the slot by call parity (pkb_call_half in a
 * one-block kernel, passed on in a device word). A rank writes a half again
 * two calls later, after the barrier of the call in between, which every
 * peer reaches only once it pulled this call's half.
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

#define INTER 128
#define MAX_E 128
#define MAX_K 2
#define THREADS 256
#define BARRIER_THREADS 128

struct state {
	cublasHandle_t blas;
	void *ws;
	int64_t m, n;
	int e, k, g, el, base;
	pkb_symm slot;        /* two halves: this rank's six MLP tensors */
	size_t half, part[7]; /* byte offsets of the tensors in a half */
	uint32_t *calls;
	size_t *off;          /* [8]: this call's half, then part[] */
	void *weights;        /* [G][half]: the group's MLPs */
	float *logits;        /* [M][E] x Wr^T in fp32 */
	void *wts;            /* [M][K] of T */
	int *sel;             /* [M][K] */
	float *gate, *up;     /* [M][128] the fp32 products, bias not added */
	void *h;              /* [M][128] of T */
	float *y;             /* [M][N] one MLP's fp32 down product, bias not added */
	void *parts;          /* [K][M][N] */
};

/* row-major fp32 C (m, n) = A (m, kk) B^T, B (n, kk); fp32 accumulation,
 * beta 0: the caller adds the bias to the fp32 product and rounds once */
static int gemm_nt(struct state *s, cudaDataType dt, int64_t m, int64_t n, int64_t kk,
		   const void *a, const void *b, float *c)
{
	float one = 1.0f, zero = 0.0f;
	return cublasGemmEx(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)kk, &one, b,
			    dt, (int)kk, a, dt, (int)kk, &zero, c, CUDA_R_32F, (int)n,
			    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;
}

template <typename T> __device__ __forceinline__ float rt(float x)
{
	return pkb_to_float(pkb_from_float<T>(x));
}

/* one thread a token: logits = T(acc + br), softmax by exp2f and a
 * reciprocal, rounded to T; top_k, ties to the lower expert */
template <typename T>
__global__ void route(const float *acc, const T *br, T *wts, int *sel, int64_t m, int e, int k)
{
	int64_t t = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (t >= m)
		return;
	const float log2e = 1.4426950408889634f;
	float mx = -INFINITY, sum = 0, p[MAX_E];
	for (int i = 0; i < e; i++) {
		p[i] = rt<T>(acc[t * e + i] + pkb_to_float(br[i]));
		mx = fmaxf(mx, p[i]);
	}
	for (int i = 0; i < e; i++) {
		p[i] = exp2f((p[i] - mx) * log2e);
		sum += p[i];
	}
	float inv = 1.0f / sum;
	for (int i = 0; i < e; i++)
		p[i] = rt<T>(p[i] * inv);
	for (int j = 0; j < k; j++) {
		int best = -1;
		for (int i = 0; i < e; i++) {
			bool used = false;
			for (int jj = 0; jj < j; jj++)
				used |= sel[t * k + jj] == i;
			if (!used && (best < 0 || p[i] > p[best]))
				best = i;
		}
		sel[t * k + j] = best;
		wts[t * k + j] = pkb_from_float<T>(p[best]);
	}
}

__global__ void pick_half(uint32_t *calls, size_t half, size_t *off)
{
	size_t o = pkb_call_half(calls, half);
	if (threadIdx.x == 0)
		*off = o;
}

struct six {
	const void *src[6];
	size_t bytes[6];
};

/* this rank's MLP into its slot; 16-byte units (every part is padded) */
__global__ void stage(struct six w, char *const *slots, int rank, const size_t *part,
		      const size_t *off)
{
	char *mine = slots[rank] + *off;
	for (int i = 0; i < 6; i++) {
		const uint4 *src = (const uint4 *)w.src[i];
		uint4 *dst = (uint4 *)(mine + part[i]);
		int64_t units = (int64_t)(w.bytes[i] / 16);
		for (int64_t u = blockIdx.x * (int64_t)THREADS + threadIdx.x; u < units;
		     u += (int64_t)gridDim.x * THREADS)
			dst[u] = src[u];
		/* a ragged end (a 2-byte tensor of odd 8-element count) */
		for (size_t b = units * 16 + blockIdx.x * THREADS + threadIdx.x; b < w.bytes[i];
		     b += (size_t)gridDim.x * THREADS)
			mine[part[i] + b] = ((const char *)w.src[i])[b];
	}
}

__global__ void meet(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

/* the group's G slots into local memory */
__global__ void pull(char *const *slots, int base, int g, const size_t *off, size_t half,
		     char *weights)
{
	int64_t units = (int64_t)(half / 16);
	for (int q = 0; q < g; q++) {
		const uint4 *src = (const uint4 *)(slots[base + q] + *off);
		uint4 *dst = (uint4 *)(weights + q * half);
		for (int64_t u = blockIdx.x * (int64_t)THREADS + threadIdx.x; u < units;
		     u += (int64_t)gridDim.x * THREADS)
			dst[u] = src[u];
	}
}

/* gate = T(ag + bg), up = T(au + bu) (the fp32 products ag, au),
 * h = T(T(silu(gate)) * up) */
template <typename T>
__global__ void silu_mul(const float *ag, const float *au, const T *bg, const T *bu, T *h,
			 int64_t count)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < count;
	     i += (int64_t)gridDim.x * THREADS) {
		float g = rt<T>(ag[i] + pkb_to_float(bg[i % INTER]));
		float u = rt<T>(au[i] + pkb_to_float(bu[i % INTER]));
		float s = rt<T>(g / (1.0f + expf(-g)));
		h[i] = pkb_from_float<T>(s * u);
	}
}

/* part_j[t] = T(y[t] * w_j), y = T(acc + bd) from the fp32 product acc, for
 * the slots whose expert member q owns */
template <typename T>
__global__ void take(const float *acc, const T *bd, const T *wts, const int *sel, T *parts,
		     int64_t m, int64_t n, int k, int base, int el, int g, int q)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < m * k * n;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t tj = i / n, c = i % n, t = tj / k;
		int j = (int)(tj % k);
		int owner = base + sel[tj] / el;
		(void)g;
		if (owner == base + q) {
			float y = rt<T>(acc[t * n + c] + pkb_to_float(bd[c]));
			parts[(j * m + t) * n + c] = pkb_from_float<T>(y * pkb_to_float(wts[tj]));
		}
	}
}

template <typename T>
__global__ void combine(const T *parts, T *out, int64_t mn, int k)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < mn;
	     i += (int64_t)gridDim.x * THREADS)
		out[i] = k == 1 ? parts[i]
				: pkb_from_float<T>(pkb_to_float(parts[i]) + pkb_to_float(parts[mn + i]));
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
	s->e = (int)pkb_param_get(ctx, "num_experts", ctx->world);
	s->k = (int)pkb_param_get(ctx, "top_k", 2);
	if (s->e > MAX_E || s->k > MAX_K || s->k > s->e || ctx->world > BARRIER_THREADS)
		return 1;
	s->g = s->e >= ctx->world ? ctx->world : s->e;
	s->el = s->e / s->g;
	s->base = ctx->rank / s->g * s->g;
	for (int i = 0; i < 6; i++)
		s->part[i + 1] = s->part[i] + ((ctx->in[3 + i].bytes + 15) & ~(size_t)15);
	s->half = s->part[6];
	size_t es = pkb_dtype_size(ctx->in[0].dtype), mn = (size_t)(s->m * s->n);
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetMathMode(s->blas, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
			      CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) != CUBLAS_STATUS_SUCCESS ||
	    cudaMalloc(&s->ws, 32u << 20) != cudaSuccess ||
	    cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, 8 * sizeof(size_t)) != cudaSuccess ||
	    cudaMalloc(&s->weights, s->g * s->half) != cudaSuccess ||
	    cudaMalloc(&s->logits, s->m * s->e * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->wts, s->m * s->k * es) != cudaSuccess ||
	    cudaMalloc(&s->sel, s->m * s->k * sizeof(int)) != cudaSuccess ||
	    cudaMalloc(&s->gate, s->m * INTER * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->up, s->m * INTER * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->h, s->m * INTER * es) != cudaSuccess ||
	    cudaMalloc(&s->y, mn * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->parts, s->k * mn * es) != cudaSuccess)
		return 1;
	/* the part offsets, for the kernels, after the half's offset */
	if (cudaMemcpy(s->off + 1, s->part, 7 * sizeof(size_t), cudaMemcpyHostToDevice) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->slot);
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaDataType dt)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t m = s->m, n = s->n, mn = m * n;
	const T *x = (const T *)ctx->in[0].data;
	char *const *slots = (char *const *)s->slot.peers_dev;
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetWorkspace(s->blas, s->ws, 32u << 20) != CUBLAS_STATUS_SUCCESS)
		return 1;

	/* router */
	if (gemm_nt(s, dt, m, s->e, n, x, ctx->in[1].data, s->logits))
		return 1;
	route<T><<<blocks(m, 1u << 20), THREADS, 0, st>>>(s->logits, (const T *)ctx->in[2].data,
							   (T *)s->wts, s->sel, m, s->e, s->k);

	/* the group's MLPs: stage ours, meet, pull */
	struct six w;
	for (int i = 0; i < 6; i++) {
		w.src[i] = ctx->in[3 + i].data;
		w.bytes[i] = ctx->in[3 + i].bytes;
	}
	const size_t *part = s->off + 1;
	pick_half<<<1, 32, 0, st>>>(s->calls, s->half, s->off);
	stage<<<blocks((int64_t)(s->half / 16), 512), THREADS, 0, st>>>(w, slots, ctx->rank, part,
									  s->off);
	meet<<<1, BARRIER_THREADS, 0, st>>>(ctx->dev);
	pull<<<blocks((int64_t)(s->half / 16), 512), THREADS, 0, st>>>(
		slots, s->base, s->g, s->off, s->half, (char *)s->weights);

	/* every token through every member's MLP; keep the slots it owns */
	for (int q = 0; q < s->g; q++) {
		const char *wq = (const char *)s->weights + q * s->half;
		const T *wg = (const T *)(wq + s->part[0]), *bg = (const T *)(wq + s->part[1]);
		const T *wu = (const T *)(wq + s->part[2]), *bu = (const T *)(wq + s->part[3]);
		const T *wd = (const T *)(wq + s->part[4]), *bd = (const T *)(wq + s->part[5]);
		if (gemm_nt(s, dt, m, INTER, n, x, wg, s->gate) ||
		    gemm_nt(s, dt, m, INTER, n, x, wu, s->up))
			return 1;
		silu_mul<T><<<blocks(m * INTER, 2048), THREADS, 0, st>>>(s->gate, s->up, bg, bu,
									 (T *)s->h, m * INTER);
		if (gemm_nt(s, dt, m, n, INTER, s->h, wd, s->y))
			return 1;
		take<T><<<blocks(m * s->k * n, 2048), THREADS, 0, st>>>(
			s->y, bd, (const T *)s->wts, s->sel, (T *)s->parts, m, n, s->k, s->base,
			s->el, s->g, q);
	}
	combine<T><<<blocks(mn, 2048), THREADS, 0, st>>>((const T *)s->parts,
							 (T *)ctx->out[0].data, mn, s->k);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return launch<__nv_bfloat16>(ctx, s, CUDA_R_16BF);
	case PKB_FP16: return launch<__half>(ctx, s, CUDA_R_16F);
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
		void *bufs[] = { s->ws, s->calls, s->off, s->weights, s->logits, s->wts, s->sel,
				 s->gate, s->up, s->h, s->y, s->parts };
		for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
			cudaFree(bufs[i]);
	}
	free(s);
	return 0;
}
