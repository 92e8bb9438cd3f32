/*
 * 076_opensora_conv3d_allreduce, known-good: im2col + cuBLAS GEMM straight
 * into symmetric memory, then a one-shot pull all-reduce with the bias add
 * fused. No NCCL.
 *
 * The partial conv of this rank lands in its staging buffer as [Cout][P]
 * (the GEMM of each chunk of output rows writes its columns with ldc = P).
 * The reduce kernel then meets the other ranks (pkb_barrier_block; every
 * rank's GEMMs have finished once any of its blocks arrives), sums the W
 * partials of its share in fp32 in rank order, rounds (what the all-reduce
 * returns), adds the bias, rounds again, and meets the others once more so
 * that no rank's next GEMM overwrites a buffer a peer is still reading.
 *
 * Traffic: every rank reads (W-1) * 512 * 69632 * e bytes from peers
 * (213 MB at bf16, W = 4): slower than a reduce-scatter + all-gather, but
 * simple.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
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
	pkb_symm stage;        /* this rank's partial conv, [Cout][P] */
	int cin, cout, tin, hin, win, to, ho, wo;
	int rows_per_chunk;
	int64_t P, K;
};

#include "im2col.cuh"   /* vec16, geom, im2col */

/* out[i] = round(round(sum_j stage_j[i]) + bias[i / P]), V elements a step */
template <typename T>
__global__ void __launch_bounds__(RED_THREADS)
reduce_bias(pkb_dev_comm comm, T *const *stage, const T *bias, T *out, int64_t P, int64_t n)
{
	const int V = 16 / sizeof(T);
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	int64_t nv = n / V;
	int64_t per = (nv + gridDim.x - 1) / gridDim.x;
	int64_t v0 = min(nv, per * blockIdx.x), v1 = min(nv, v0 + per);
	for (int64_t v = v0 + threadIdx.x; v < v1; v += blockDim.x) {
		float acc[16 / sizeof(T)];
#pragma unroll
		for (int e = 0; e < V; e++)
			acc[e] = 0.f;
		for (int j = 0; j < comm.world; j++) {
			vec16<T> p = ((const vec16<T> *)stage[j])[v];
#pragma unroll
			for (int e = 0; e < V; e++)
				acc[e] += pkb_to_float(p.v[e]);
		}
		float b = pkb_to_float(bias[v * V / P]);
		vec16<T> o;
#pragma unroll
		for (int e = 0; e < V; e++)
			o.v[e] = pkb_from_float<T>(pkb_to_float(pkb_from_float<T>(acc[e])) + b);
		((vec16<T> *)out)[v] = o;
	}
	pkb_barrier_block(comm, blockIdx.x);   /* peers are done reading ours */
}

static cudaDataType_t cuda_type(pkb_dtype t)
{
	return t == PKB_BF16 ? CUDA_R_16BF : t == PKB_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	if (t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32)
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
	return ctx->svc->symm_alloc(ctx, (size_t)s->cout * s->P * e, &s->stage);
}

template <typename T>
static int run_t(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const T *x = (const T *)ctx->in[0].data, *w = (const T *)ctx->in[1].data;
	T *col = (T *)s->col, *part = (T *)s->stage.local;
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
	reduce_bias<T><<<RED_BLOCKS, RED_THREADS, 0, st>>>(
		ctx->dev, (T *const *)s->stage.peers_dev, (const T *)ctx->in[2].data,
		(T *)ctx->out[0].data, s->P, (int64_t)s->cout * s->P);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return run_t<__nv_bfloat16>(ctx, s);
	case PKB_FP16: return run_t<__half>(ctx, s);
	case PKB_FP32: return run_t<float>(ctx, s);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->blas)
		cublasDestroy(s->blas);
	cudaFree(s->col);
	free(s);
	return 0;
}
