/*
 * 086_tp_muon_orthogonalization, known-bad: the Newton-Schulz iteration in
 * bf16, as most Muon implementations run it -- X, A and B = bA + cA^2 kept
 * in bf16 between the GEMMs (bf16 tensor cores, fp32 accumulation), the
 * Gram partials exchanged in bf16 and summed in fp32. The original iterates
 * in fp32; simulated on the host, bf16 steps leave an l2 error of 1.5-2.0
 * bf16 ulp (u) in the output against u/5 allowed, and break element bounds.
 * The exchange is ok_symm_allreduce's.
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define ROWS 512
#define THREADS 512
#define AR_BLOCKS 64

static const float coef_quintic[5][3] = {
	{ 4.0848f, -6.8946f, 2.9270f }, { 3.9505f, -6.3029f, 2.6377f },
	{ 3.7418f, -5.5913f, 2.3037f }, { 2.8769f, -3.1427f, 1.2046f },
	{ 2.8366f, -3.0525f, 1.2012f },
};

typedef __nv_bfloat16 bf16;

struct state {
	cublasHandle_t blas;
	pkb_symm gsym;          /* this rank's Gram partial, 512x512 bf16 */
	pkb_symm nsym;          /* this rank's sum of squares, one fp32 */
	bf16 *X[2], *A, *U;
	float *nrm;
	int c, steps;
};

__global__ void __launch_bounds__(THREADS)
global_norm(pkb_dev_comm comm, const bf16 *x, int64_t n, float *const *nsym, float *nrm)
{
	__shared__ float red[THREADS / 32];
	float acc = 0.f;
	for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
		float v = __bfloat162float(x[i]);
		acc += v * v;
	}
	for (int o = 16; o > 0; o >>= 1)
		acc += __shfl_xor_sync(0xffffffffu, acc, o);
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = acc;
	__syncthreads();
	if (threadIdx.x == 0) {
		float s = 0.f;
		for (int w = 0; w < THREADS / 32; w++)
			s += red[w];
		nsym[comm.rank][0] = s;
	}
	if (!pkb_barrier_block(comm, 0))
		return;
	if (threadIdx.x == 0) {
		float s = 0.f;
		for (int j = 0; j < comm.world; j++)
			s += nsym[j][0];
		*nrm = fmaxf(sqrtf(s), 1e-7f);
	}
	pkb_barrier_block(comm, 0);
}

__global__ void __launch_bounds__(THREADS)
normalize(const bf16 *x, int64_t n, const float *nrm, bf16 *X)
{
	float d = *nrm;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		X[i] = __float2bfloat16(__bfloat162float(x[i]) / d);
}

__global__ void __launch_bounds__(THREADS)
gram_allreduce(pkb_dev_comm comm, bf16 *const *gram, bf16 *A, int64_t n)
{
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t i0 = min(n, per * blockIdx.x), i1 = min(n, i0 + per);
	for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
		float s = 0.f;
		for (int j = 0; j < comm.world; j++)
			s += __bfloat162float(gram[j][i]);
		A[i] = __float2bfloat16(s);
	}
	pkb_barrier_block(comm, blockIdx.x);
}

/* bf16 in and out, fp32 accumulation; column-major as in the reference */
static int gemm(struct state *s, cublasOperation_t ta, int m, int n, int k, float alpha,
		const bf16 *A, int lda, const bf16 *B, int ldb, float beta, bf16 *C, int ldc)
{
	return cublasGemmEx(s->blas, ta, CUBLAS_OP_N, m, n, k, &alpha, A, CUDA_R_16BF, lda, B,
			    CUDA_R_16BF, ldb, &beta, C, CUDA_R_16BF, ldc, CUBLAS_COMPUTE_32F,
			    CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->in[0].dtype != PKB_BF16 || ctx->in[0].shape[0] != ROWS || ctx->world > THREADS)
		return 1;
	s->c = (int)ctx->in[0].shape[1];
	s->steps = (int)pkb_param_get(ctx, "steps", 5);
	if ((int)pkb_param_get(ctx, "coefficient_type", 1) != 1 || s->steps % 5)
		return 1;
	size_t xb = (size_t)ROWS * s->c * 2, ab = (size_t)ROWS * ROWS * 2;
	if (ctx->svc->symm_alloc(ctx, ab, &s->gsym) || ctx->svc->symm_alloc(ctx, 16, &s->nsym))
		return 1;
	if (cudaMalloc(&s->X[0], xb) || cudaMalloc(&s->X[1], xb) || cudaMalloc(&s->A, ab) ||
	    cudaMalloc(&s->U, ab) || cudaMalloc(&s->nrm, sizeof(float)))
		return 1;
	return cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const bf16 *x = (const bf16 *)ctx->in[0].data;
	int64_t n = (int64_t)ROWS * s->c;
	unsigned blocks = (unsigned)((n + THREADS - 1) / THREADS);
	bf16 *gram = (bf16 *)s->gsym.local;
	int c = s->c;

	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS)
		return 1;
	global_norm<<<1, THREADS, 0, st>>>(ctx->dev, x, n, (float *const *)s->nsym.peers_dev, s->nrm);
	normalize<<<blocks, THREADS, 0, st>>>(x, n, s->nrm, s->X[0]);
	for (int i = 0; i < s->steps; i++) {
		const float *k = coef_quintic[i % 5];
		bf16 *X = s->X[i & 1], *Xn = s->X[(i + 1) & 1];
		if (gemm(s, CUBLAS_OP_T, ROWS, ROWS, c, 1.f, X, c, X, c, 0.f, gram, ROWS))
			return 1;
		gram_allreduce<<<AR_BLOCKS, THREADS, 0, st>>>(
			ctx->dev, (bf16 *const *)s->gsym.peers_dev, s->A, (int64_t)ROWS * ROWS);
		/* cublasGemmEx updates C in place: seed U with A and X' with X */
		if (cudaMemcpyAsync(s->U, s->A, (size_t)ROWS * ROWS * 2, cudaMemcpyDeviceToDevice, st) ||
		    gemm(s, CUBLAS_OP_N, ROWS, ROWS, ROWS, k[2], s->A, ROWS, s->A, ROWS, k[1], s->U, ROWS) ||
		    cudaMemcpyAsync(Xn, X, (size_t)n * 2, cudaMemcpyDeviceToDevice, st) ||
		    gemm(s, CUBLAS_OP_N, c, ROWS, ROWS, 1.f, X, c, s->U, ROWS, k[0], Xn, c))
			return 1;
	}
	return cudaMemcpyAsync(ctx->out[0].data, s->X[s->steps & 1], (size_t)n * 2,
			       cudaMemcpyDeviceToDevice, st) != cudaSuccess ||
	       cudaGetLastError() != cudaSuccess;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->blas)
		cublasDestroy(s->blas);
	cudaFree(s->X[0]);
	cudaFree(s->X[1]);
	cudaFree(s->A);
	cudaFree(s->U);
	cudaFree(s->nrm);
	free(s);
	return 0;
}
