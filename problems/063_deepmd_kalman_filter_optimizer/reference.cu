/*
 * 063_deepmd_kalman_filter_optimizer reference: the original's fp64 chain
 * with cuBLAS for the three products per block (batched over the 8 blocks,
 * in the original's association: (H^T P) H, then P H), NCCL for the sum of
 * tmp and for the all-gather of the updated weights, plain kernels for the
 * element-wise updates. Every rounding as torch does it, with no FMA
 * contraction (__dmul_rn / __dadd_rn):
 *     tmp   = sum_i (lam + s_i), i in order           s_i = (H_i^T P_i) H_i
 *     A     = 1 / tmp                                 (after the all-reduce)
 *     w'    = w + (A * err) * K                       K = P H
 *     P'    = fl(1/lam) * (P - A * (K_r K_c))         (1/lam: torch's reciprocal)
 *     lam'  = (nue * lam + 1) - nue
 * The weights are written straight into this rank's slice of the output and
 * all-gathered in place.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256
#define BLOCKS 8

struct state {
	struct pkb_ref_blas blas;
	double *v;     /* [8][n] H_i^T P_i */
	double *s;     /* [8] (H_i^T P_i) H_i */
	double *k;     /* [8][n] P_i H_i */
	double *tmp;   /* [1] */
};

/* one thread: the original's running sum over the blocks */
__global__ void sum_tmp(const double *s, double *tmp, double lam)
{
	double acc = 0.0;
	for (int i = 0; i < BLOCKS; i++)
		acc = __dadd_rn(acc, __dadd_rn(lam, s[i]));
	*tmp = acc;
}

__global__ void __launch_bounds__(THREADS)
update_weights(const double *w, const double *k, const double *err, const double *tmp,
	       double *out, int64_t total)
{
	int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (i >= total)
		return;
	double ae = __dmul_rn(__drcp_rn(*tmp), *err);
	out[i] = __dadd_rn(w[i], __dmul_rn(ae, k[i]));
}

/* grid (n/THREADS, n, 8): element (b, r, c) */
__global__ void __launch_bounds__(THREADS)
update_p(const double *p, const double *k, const double *tmp, double *out, int64_t n,
	 double inv_lam)
{
	int64_t c = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (c >= n)
		return;
	int64_t r = blockIdx.y, b = blockIdx.z;
	const double *kb = k + b * n;
	double a = __drcp_rn(*tmp);
	int64_t idx = (b * n + r) * n + c;
	double d = __dsub_rn(p[idx], __dmul_rn(a, __dmul_rn(kb[r], kb[c])));
	out[idx] = __dmul_rn(inv_lam, d);
}

__global__ void lambda_next(double *out, double lam, double nue)
{
	*out = __dsub_rn(__dadd_rn(__dmul_rn(nue, lam), 1.0), nue);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	if (ctx->in[3].shape[0] != BLOCKS) {
		ctx->svc->log(ctx, "063 reference: want %d blocks", BLOCKS);
		return 1;
	}
	int64_t n = ctx->in[0].shape[1];
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->v, (size_t)BLOCKS * n * sizeof(double)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->k, (size_t)BLOCKS * n * sizeof(double)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->s, BLOCKS * sizeof(double)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->tmp, sizeof(double)));
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t n = ctx->in[0].shape[1], nw = (int64_t)BLOCKS * n;
	const double *h = (const double *)ctx->in[0].data;
	const double *err = (const double *)ctx->in[1].data;
	const double *w = (const double *)ctx->in[2].data;
	const double *p = (const double *)ctx->in[3].data;
	double *wout = (double *)ctx->out[0].data;
	double lam = pkb_param_get(ctx, "kalman_lambda", 0.98);
	double nue = pkb_param_get(ctx, "kalman_nue", 0.9987);
	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));
	cublasHandle_t hd = s->blas.h;

	/* v_i (1, n) = H_i^T (1, n) @ P_i (n, n); H_i is (n, 1): row stride 1 */
	PKB_CK(pkb_ref_gemm_rm_batched(ctx, hd, 1, 0, 1, n, n, 1.0, h, 1, n, p, n, n * n,
				       0.0, s->v, n, n, BLOCKS, PKB_FP64));
	/* s_i (1, 1) = v_i (1, n) @ H_i (n, 1) */
	PKB_CK(pkb_ref_gemm_rm_batched(ctx, hd, 0, 0, 1, 1, n, 1.0, s->v, n, n, h, 1, n,
				       0.0, s->s, 1, 1, BLOCKS, PKB_FP64));
	/* K_i (n, 1) = P_i (n, n) @ H_i (n, 1) */
	PKB_CK(pkb_ref_gemm_rm_batched(ctx, hd, 0, 0, n, 1, n, 1.0, p, n, n * n, h, 1, n,
				       0.0, s->k, 1, n, BLOCKS, PKB_FP64));
	sum_tmp<<<1, 1, 0, st>>>(s->s, s->tmp, lam);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclAllReduce(s->tmp, s->tmp, 1, ncclFloat64, ncclSum,
				       (ncclComm_t)ctx->nccl_comm, st));
	double *mine = wout + (int64_t)ctx->rank * nw;
	update_weights<<<pkb_ref_blocks(nw, THREADS, 1u << 30), THREADS, 0, st>>>(
		w, s->k, err, s->tmp, mine, nw);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclAllGather(mine, wout, (size_t)nw, ncclFloat64,
				       (ncclComm_t)ctx->nccl_comm, st));
	/* torch's 1 / lam: the reciprocal, rounded once */
	double inv_lam = 1.0 / lam;
	update_p<<<dim3(pkb_ref_blocks(n, THREADS, 65535), (unsigned)n, BLOCKS), THREADS, 0, st>>>(
		p, s->k, s->tmp, (double *)ctx->out[1].data, n, inv_lam);
	PKB_CK_LAUNCH(ctx);
	lambda_next<<<1, 1, 0, st>>>((double *)ctx->out[2].data, lam, nue);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->v);
	cudaFree(s->k);
	cudaFree(s->s);
	cudaFree(s->tmp);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
