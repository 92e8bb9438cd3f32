/*
 * 086_tp_muon_orthogonalization reference: fp32 cuBLASLt GEMMs (no TF32),
 * NCCL all-reduces of the norm partials and of each Gram matrix, small
 * kernels for the rest -- the original's ops one for one.
 *
 * Rank r holds x_r (512, c), c = C/W columns of G, bf16. In fp32:
 *   nsq = allreduce(sum x_r^2);  X = x_r / max(sqrt(nsq), 1e-7)
 *   per step (a, b, c):  A = allreduce(X X^T)         512 x c x 512
 *                        U = b A + c A A               512^3, replicated
 *                        X = a X + U X                 512 x 512 x c
 *   out = bf16(X)
 *
 * Layout: X is row-major (512, c), i.e. column-major (c, 512) with ld = c,
 * which is what cuBLAS sees. A and U are (nearly) symmetric, but the
 * products below are written so that every buffer, read row-major, holds
 * exactly torch's result:
 *   A_cm = Xc^T Xc              (T, N; m = n = 512, k = c)
 *   U_cm = b A_cm + c A_cm A_cm (N, N; 512^3)   row-major: b A + c A A
 *   Xc'  = a Xc + Xc U_cm       (N, N; m = c, n = 512, k = 512)
 *                                row-major: X' = a X + U X
 * cuBLASLt takes C and D separately, so neither addmm needs a copy.
 *
 * Traffic per rank: 5 all-reduces of 1 MiB fp32 (7.5 MiB received at W = 4
 * in a ring) plus one of 256 bytes; FLOPs per step 4*512^2*c + 2*512^3
 * (0.4 GFLOP at c = 128), all fp32 on CUDA cores.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublasLt.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"
#include "block_sum.cuh"   /* defines: block_sum */

PKB_SOLUTION;

#define ROWS 512
#define NORM_BLOCKS 64     /* partial sums of squares, all-reduced as a vector */
#define THREADS 256
#define WS_BYTES (8u << 20)

/* the original's tables, in its order */
static const float coef_simple[][3] = { { 3.4445f, -4.7750f, 2.0315f } };
static const float coef_quintic[][3] = {
	{ 4.0848f, -6.8946f, 2.9270f }, { 3.9505f, -6.3029f, 2.6377f },
	{ 3.7418f, -5.5913f, 2.3037f }, { 2.8769f, -3.1427f, 1.2046f },
	{ 2.8366f, -3.0525f, 1.2012f },
};
static const float coef_polar[][3] = {
	{ 8.2051f, -22.9019f, 16.4607f }, { 4.0664f, -2.8612f, 0.5184f },
	{ 3.9096f, -2.8234f, 0.5250f }, { 3.2856f, -2.4647f, 0.5074f },
	{ 2.2779f, -1.6447f, 0.4162f }, { 1.8726f, -1.2307f, 0.3585f },
	{ 1.8564f, -1.2132f, 0.3568f }, { 1.8750f, -1.2500f, 0.3750f },
};
static const float coef_aol[][3] = {
	{ 4.0098f, -7.0585f, 2.4635f }, { 3.4585f, -5.5479f, 2.5959f },
	{ 2.7573f, -3.2939f, 1.4254f }, { 2.7215f, -3.0494f, 1.3169f },
};
static const struct { const float (*c)[3]; int n; } coef_tables[] = {
	{ coef_simple, 1 }, { coef_quintic, 5 }, { coef_polar, 8 }, { coef_aol, 4 },
};

struct lt_gemm {
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t a, b, c;
	cublasLtMatmulAlgo_t algo;
};

struct state {
	cublasLtHandle_t lt;
	void *ws;
	struct lt_gemm gram, upd, step;
	float *X[2], *A, *U, *nsq;
	int c, steps, table;
};

/* ------------------------------------------------------------------------ */
/* kernels */

/* partial[b] = sum of x^2 over block b's grid-stride share */
__global__ void __launch_bounds__(THREADS)
sum_squares(const __nv_bfloat16 *x, int64_t n, float *partial)
{
	__shared__ float red[THREADS / 32];
	float acc = 0.f;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		float v = __bfloat162float(x[i]);
		acc += v * v;
	}
	float s = block_sum<THREADS>(acc, red);
	if (threadIdx.x == 0)
		partial[blockIdx.x] = s;
}

/* X = x / max(sqrt(sum of the all-reduced partials), 1e-7) */
__global__ void __launch_bounds__(THREADS)
normalize(const __nv_bfloat16 *x, int64_t n, const float *partial, float *X)
{
	__shared__ float nrm;
	if (threadIdx.x == 0) {
		float s = 0.f;
		for (int b = 0; b < NORM_BLOCKS; b++)
			s += partial[b];
		nrm = fmaxf(sqrtf(s), 1e-7f);
	}
	__syncthreads();
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		X[i] = __bfloat162float(x[i]) / nrm;
}

__global__ void to_bf16(const float *X, __nv_bfloat16 *out, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		out[i] = __float2bfloat16(X[i]);
}

/* ------------------------------------------------------------------------ */
/* cuBLASLt plans: fp32 in and out, CUBLAS_COMPUTE_32F (no TF32) */

static int lt_plan(struct state *s, struct lt_gemm *g, cublasOperation_t ta,
		   cublasOperation_t tb, int m, int n, int k, int lda, int ldb, int ldc)
{
	if (cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) ||
	    cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) ||
	    cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) ||
	    cublasLtMatrixLayoutCreate(&g->a, CUDA_R_32F, ta == CUBLAS_OP_N ? m : k,
				       ta == CUBLAS_OP_N ? k : m, lda) ||
	    cublasLtMatrixLayoutCreate(&g->b, CUDA_R_32F, tb == CUBLAS_OP_N ? k : n,
				       tb == CUBLAS_OP_N ? n : k, ldb) ||
	    cublasLtMatrixLayoutCreate(&g->c, CUDA_R_32F, m, n, ldc))
		return 1;
	cublasLtMatmulPreference_t pref;
	size_t ws = WS_BYTES;
	if (cublasLtMatmulPreferenceCreate(&pref) ||
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
						 &ws, sizeof ws))
		return 1;
	cublasLtMatmulHeuristicResult_t res;
	int found = 0;
	cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(s->lt, g->op, g->a, g->b, g->c, g->c,
							   pref, 1, &res, &found);
	cublasLtMatmulPreferenceDestroy(pref);
	if (st != CUBLAS_STATUS_SUCCESS || found == 0)
		return 1;
	g->algo = res.algo;
	return 0;
}

static void lt_free(struct lt_gemm *g)
{
	if (g->a) cublasLtMatrixLayoutDestroy(g->a);
	if (g->b) cublasLtMatrixLayoutDestroy(g->b);
	if (g->c) cublasLtMatrixLayoutDestroy(g->c);
	if (g->op) cublasLtMatmulDescDestroy(g->op);
}

/* D = alpha op(A) op(B) + beta C */
static int lt_run(pkb_ctx *ctx, struct state *s, struct lt_gemm *g, float alpha,
		  const float *A, const float *B, float beta, const float *C, float *D)
{
	return cublasLtMatmul(s->lt, g->op, &alpha, A, g->a, B, g->b, &beta, C, g->c, D, g->c,
			      &g->algo, s->ws, WS_BYTES, (cudaStream_t)ctx->stream) !=
	       CUBLAS_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------------ */

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	if (ctx->in[0].dtype != PKB_BF16 || ctx->in[0].shape[0] != ROWS)
		return 1;
	s->c = (int)ctx->in[0].shape[1];
	s->steps = (int)pkb_param_get(ctx, "steps", 5);
	s->table = (int)pkb_param_get(ctx, "coefficient_type", 1);
	if (s->table < 0 || s->table > 3 || s->steps % coef_tables[s->table].n ||
	    (int)pkb_param_get(ctx, "partition_dim", 1) != 1) {
		ctx->svc->log(ctx, "086 reference: unsupported steps/coefficient_type/partition_dim");
		return 1;
	}
	size_t xb = (size_t)ROWS * s->c * sizeof(float), ab = (size_t)ROWS * ROWS * sizeof(float);
	if (cudaMalloc(&s->X[0], xb) || cudaMalloc(&s->X[1], xb) || cudaMalloc(&s->A, ab) ||
	    cudaMalloc(&s->U, ab) || cudaMalloc(&s->nsq, NORM_BLOCKS * sizeof(float)) ||
	    cudaMalloc(&s->ws, WS_BYTES))
		return 1;
	if (cublasLtCreate(&s->lt) != CUBLAS_STATUS_SUCCESS)
		return 1;
	if (lt_plan(s, &s->gram, CUBLAS_OP_T, CUBLAS_OP_N, ROWS, ROWS, s->c, s->c, s->c, ROWS) ||
	    lt_plan(s, &s->upd, CUBLAS_OP_N, CUBLAS_OP_N, ROWS, ROWS, ROWS, ROWS, ROWS, ROWS) ||
	    lt_plan(s, &s->step, CUBLAS_OP_N, CUBLAS_OP_N, s->c, ROWS, ROWS, s->c, ROWS, s->c)) {
		ctx->svc->log(ctx, "086 reference: no cuBLASLt fp32 algorithm");
		return 1;
	}
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	const __nv_bfloat16 *x = (const __nv_bfloat16 *)ctx->in[0].data;
	int64_t n = (int64_t)ROWS * s->c;
	ncclResult_t r;

	sum_squares<<<NORM_BLOCKS, THREADS, 0, st>>>(x, n, s->nsq);
	if ((r = ncclAllReduce(s->nsq, s->nsq, NORM_BLOCKS, ncclFloat32, ncclSum, comm, st)))
		goto nccl_fail;
	normalize<<<(unsigned)((n + THREADS - 1) / THREADS), THREADS, 0, st>>>(x, n, s->nsq, s->X[0]);

	for (int i = 0; i < s->steps; i++) {
		const float *k = coef_tables[s->table].c[i % coef_tables[s->table].n];
		float *X = s->X[i & 1], *Xn = s->X[(i + 1) & 1];
		if (lt_run(ctx, s, &s->gram, 1.f, X, X, 0.f, s->A, s->A))
			return 1;
		if ((r = ncclAllReduce(s->A, s->A, (size_t)ROWS * ROWS, ncclFloat32, ncclSum, comm, st)))
			goto nccl_fail;
		if (lt_run(ctx, s, &s->upd, k[2], s->A, s->A, k[1], s->A, s->U) ||
		    lt_run(ctx, s, &s->step, 1.f, X, s->U, k[0], X, Xn))
			return 1;
	}
	to_bf16<<<(unsigned)((n + THREADS - 1) / THREADS), THREADS, 0, st>>>(
		s->X[s->steps & 1], (__nv_bfloat16 *)ctx->out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;

nccl_fail:
	ctx->svc->log(ctx, "086 reference: ncclAllReduce: %s", ncclGetErrorString(r));
	return 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	lt_free(&s->gram);
	lt_free(&s->upd);
	lt_free(&s->step);
	if (s->lt)
		cublasLtDestroy(s->lt);
	cudaFree(s->X[0]);
	cudaFree(s->X[1]);
	cudaFree(s->A);
	cudaFree(s->U);
	cudaFree(s->nsq);
	cudaFree(s->ws);
	free(s);
	return 0;
}
