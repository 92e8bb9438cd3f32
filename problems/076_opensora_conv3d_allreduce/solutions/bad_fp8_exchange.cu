/*
 * 076_opensora_conv3d_allreduce, known-bad: ok_gemm_pull, but the partials
 * are exchanged as fp8 e5m2 (1 byte instead of 2: half the NVLink traffic,
 * the tempting shortcut for a 71 MB all-reduce). e5m2 keeps 3 significant
 * bits: simulated on the host, the result is off by l2 0.053 (limit 0.018
 * at W = 4), and 0.2-28% of the elements leave their bound (W = 8 .. 2).
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define NCHUNK 8
#define THREADS 256
#define RED_THREADS 512
#define RED_BLOCKS 256   /* all co-resident at 512 threads: the barrier needs it */

struct state {
	cublasHandle_t blas;
	void *col;             /* im2col of one chunk, [K][np] */
	void *part;            /* this rank's partial conv, [Cout][P], bf16 */
	pkb_symm stage;        /* the same as e5m2 bytes: the shortcut */
	int cin, cout, tin, hin, win, to, ho, wo;
	int rows_per_chunk;
	int64_t P, K;
};

#include "im2col.cuh"   /* vec16, geom, im2col */

/* stage[i] = e5m2(part[i]): half the bytes of bf16 to exchange */
__global__ void to_e5m2(const __nv_bfloat16 *part, uint8_t *stage, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		stage[i] = __nv_cvt_float_to_fp8(__bfloat162float(part[i]), __NV_SATFINITE, __NV_E5M2);
}

__device__ __forceinline__ float e5m2_to_f(uint8_t b)
{
	return __half2float(__half(__nv_cvt_fp8_to_halfraw(b, __NV_E5M2)));
}

/* out[i] = round(round(sum_j decode(stage_j[i])) + bias[i / P]) */
__global__ void __launch_bounds__(RED_THREADS)
reduce_bias(pkb_dev_comm comm, uint8_t *const *stage, const __nv_bfloat16 *bias,
	    __nv_bfloat16 *out, int64_t P, int64_t n)
{
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t i0 = min(n, per * blockIdx.x), i1 = min(n, i0 + per);
	for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
		float acc = 0.f;
		for (int j = 0; j < comm.world; j++)
			acc += e5m2_to_f(stage[j][i]);
		float b = __bfloat162float(bias[i / P]);
		out[i] = __float2bfloat16(__bfloat162float(__float2bfloat16(acc)) + b);
	}
	pkb_barrier_block(comm, blockIdx.x);
}

static cudaDataType_t cuda_type(pkb_dtype t)
{
	return t == PKB_BF16 ? CUDA_R_16BF : t == PKB_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	if (t != PKB_BF16)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	const int64_t *xs = ctx->in[0].shape, *ws = ctx->in[1].shape;
	s->cin = (int)xs[1];
	s->tin = (int)xs[2];
	s->hin = (int)xs[3];
	s->win = (int)xs[4];
	s->cout = (int)ws[0];
	s->to = s->tin - 2;
	s->ho = s->hin - 2;
	s->wo = s->win - 2;
	s->P = (int64_t)s->to * s->ho * s->wo;
	s->K = 27 * (int64_t)s->cin;
	size_t e = pkb_dtype_size(t);
	if (s->wo % (16 / (int)e) || ctx->world > RED_THREADS)
		return 1;
	s->rows_per_chunk = (s->to * s->ho + NCHUNK - 1) / NCHUNK;
	if (cudaMalloc(&s->col, (size_t)s->K * s->rows_per_chunk * s->wo * e))
		return 1;
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS)
		return 1;
	if (cudaMalloc(&s->part, (size_t)s->cout * s->P * e))
		return 1;
	return ctx->svc->symm_alloc(ctx, (size_t)s->cout * s->P, &s->stage);
}

template <typename T>
static int run_t(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const T *x = (const T *)ctx->in[0].data, *w = (const T *)ctx->in[1].data;
	T *col = (T *)s->col, *part = (T *)s->part;
	cudaDataType_t ct = cuda_type(ctx->in[0].dtype);
	struct geom g = { s->cin, s->tin, s->hin, s->win, s->ho, s->wo };
	int rows = s->to * s->ho, K = (int)s->K;
	const float one = 1.f, zero = 0.f;

	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS)
		return 1;
	for (int r0 = 0; r0 < rows; r0 += s->rows_per_chunk) {
		int r1 = r0 + s->rows_per_chunk < rows ? r0 + s->rows_per_chunk : rows;
		int p0 = r0 * s->wo, np = (r1 - r0) * s->wo;
		int units = s->cin * (r1 - r0);
		im2col<T><<<units < 1056 ? units : 1056, THREADS, 9 * s->win * sizeof(T), st>>>(
			x, col, g, r0, r1 - r0, np);
		/* columns p0 .. p0+np of the [Cout][P] partial: ldc = P */
		if (cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, np, s->cout, K, &one, col, ct,
				 np, w, ct, K, &zero, part + p0, ct, (int)s->P, CUBLAS_COMPUTE_32F,
				 CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
			return 1;
	}
	int64_t n = (int64_t)s->cout * s->P;
	to_e5m2<<<1056, 256, 0, st>>>((const __nv_bfloat16 *)part, (uint8_t *)s->stage.local, n);
	reduce_bias<<<RED_BLOCKS, RED_THREADS, 0, st>>>(
		ctx->dev, (uint8_t *const *)s->stage.peers_dev, (const __nv_bfloat16 *)ctx->in[2].data,
		(__nv_bfloat16 *)ctx->out[0].data, s->P, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	return run_t<__nv_bfloat16>(ctx, s);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->blas)
		cublasDestroy(s->blas);
	cudaFree(s->col);
	cudaFree(s->part);
	free(s);
	return 0;
}
