/*
 * 025_importance_sampling_loss reference: cuBLAS for the logits, a block
 * per token for the log-softmax and the per-token chain, one block for the
 * local sums, NCCL all-reduces of the seven scalars (one group: a count,
 * four T sums, a min and a max), and one thread for the divisions.
 *
 * Rounding, as torch evaluates the original (T = the harness dtype):
 *     logits   T(fp32 GEMM)
 *     log-softmax of a row, fp32: (z - max) - log(sum exp(z - max)), rounded
 *              to T; CE = -that at the label (nll_loss), 0 where ignored
 *     delta    T(new_lp - old) masked to 0, clamped; ratio T(exp(delta))
 *     pg       -T(ratio * adv) masked; w = T(ratio * adv) masked;
 *              surrogate terms T(w * CE); k3 terms T(T(ratio - delta) - 1)
 *     sums     fp32 accumulation rounded to T (torch's sum of a T tensor),
 *              then the T all-reduce (NCCL rounds every partial sum)
 *     division the T sum promoted to fp32, over the fp32 count
 *     loss     (true_pg + surrogate) - surrogate in fp32
 *
 * Bytes per rank at M = N = 1024, bf16: the weight (62.5 MiB) read once by
 * the GEMM, the (M, V) logits (62.5 MiB) written and read once; the GEMM's
 * 67 GFLOP set the time (~70 us at 989 TFLOP/s).
 */
#include <math.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <cuda/functional>
#include <cub/block/block_reduce.cuh>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define ROW_THREADS 256
#define SUM_THREADS 1024

/* per-token terms that the local sums need (the others are outputs) */
enum { P_SUR, P_RATIO, P_MIN, P_MAX, P_K3, P_ENT, P_VALID, P_COUNT };

struct state {
	struct pkb_ref_blas blas;
	void *logits;      /* (M, V) T */
	float *part;       /* [P_COUNT][M] */
	void *sums;        /* T [4]: pg, ratio, k3, entropy (all-reduced) */
	void *mnmx;        /* T [2]: min, max */
	void *sur;         /* T [1]: the local surrogate sum */
	float *count;      /* [1]: valid tokens */
};

template <typename T>
__device__ __forceinline__ float rnd(float v)
{
	return pkb_to_float(pkb_from_float<T>(v));
}

/* one block per token: the row's max and sum of exponentials, then the
 * token's chain in thread 0 */
template <typename T>
__global__ void __launch_bounds__(ROW_THREADS)
token_rows(const T *logits, int64_t v, const int64_t *labels, const T *old_lp, const T *adv,
	   int64_t ignore, T *logprobs, T *pg_out, float *part, int64_t m)
{
	typedef cub::BlockReduce<float, ROW_THREADS> reduce;
	__shared__ typename reduce::TempStorage tmp;
	__shared__ float row_max;
	int64_t t = blockIdx.x;
	const T *z = logits + t * v;

	float mx = -INFINITY;
	for (int64_t j = threadIdx.x; j < v; j += ROW_THREADS)
		mx = fmaxf(mx, pkb_to_float(z[j]));
	mx = reduce(tmp).Reduce(mx, cuda::maximum<>());
	if (threadIdx.x == 0)
		row_max = mx;
	__syncthreads();
	mx = row_max;
	float s = 0.f;
	for (int64_t j = threadIdx.x; j < v; j += ROW_THREADS)
		s += expf(pkb_to_float(z[j]) - mx);
	s = reduce(tmp).Sum(s);
	if (threadIdx.x != 0)
		return;

	int64_t lab = labels[t];
	int valid = lab != ignore;
	float lp = -0.f, ce = 0.f, delta = 0.f;
	if (valid) {
		lp = rnd<T>(__fsub_rn(__fsub_rn(pkb_to_float(z[lab]), mx), logf(s)));
		ce = -lp;
		delta = rnd<T>(__fsub_rn(lp, pkb_to_float(old_lp[t])));
		delta = fminf(fmaxf(delta, -20.f), 20.f);
	}
	float ratio = rnd<T>(expf(delta));
	float w = valid ? rnd<T>(__fmul_rn(ratio, pkb_to_float(adv[t]))) : 0.f;
	logprobs[t] = pkb_from_float<T>(lp);
	pg_out[t] = pkb_from_float<T>(valid ? -w : 0.f);
	part[P_SUR * m + t] = rnd<T>(__fmul_rn(w, ce));
	part[P_RATIO * m + t] = valid ? ratio : 0.f;
	part[P_MIN * m + t] = valid ? ratio : INFINITY;
	part[P_MAX * m + t] = valid ? ratio : -INFINITY;
	part[P_K3 * m + t] = valid ? rnd<T>(__fsub_rn(rnd<T>(__fsub_rn(ratio, delta)), 1.f)) : 0.f;
	part[P_ENT * m + t] = ce;
	part[P_VALID * m + t] = (float)valid;
}

/* one block: this rank's sums (fp32, rounded to T), min, max and count */
template <typename T>
__global__ void __launch_bounds__(SUM_THREADS)
local_sums(const T *pg, const float *part, int64_t m, T *sums, T *mnmx, T *sur, float *count)
{
	typedef cub::BlockReduce<float, SUM_THREADS> reduce;
	__shared__ typename reduce::TempStorage tmp;
	float a[6] = { 0.f, 0.f, 0.f, 0.f, 0.f, 0.f }, lo = INFINITY, hi = -INFINITY;
	for (int64_t t = threadIdx.x; t < m; t += SUM_THREADS) {
		a[0] += pkb_to_float(pg[t]);
		a[1] += part[P_RATIO * m + t];
		a[2] += part[P_K3 * m + t];
		a[3] += part[P_ENT * m + t];
		a[4] += part[P_SUR * m + t];
		a[5] += part[P_VALID * m + t];
		lo = fminf(lo, part[P_MIN * m + t]);
		hi = fmaxf(hi, part[P_MAX * m + t]);
	}
	float r[6];
	for (int i = 0; i < 6; i++) {
		r[i] = reduce(tmp).Sum(a[i]);
		__syncthreads();
	}
	lo = reduce(tmp).Reduce(lo, cuda::minimum<>());
	__syncthreads();
	hi = reduce(tmp).Reduce(hi, cuda::maximum<>());
	if (threadIdx.x == 0) {
		for (int i = 0; i < 4; i++)
			sums[i] = pkb_from_float<T>(r[i]);
		*sur = pkb_from_float<T>(r[4]);
		*count = r[5];   /* an integer count, exact below 2^24 */
		mnmx[0] = pkb_from_float<T>(lo);
		mnmx[1] = pkb_from_float<T>(hi);
	}
}

template <typename T>
__global__ void finish(const T *sums, const T *mnmx, const T *sur, const float *count,
		       float *loss, float *metrics)
{
	float ng = fmaxf(*count, 1.f);
	float pg = __fdiv_rn(pkb_to_float(sums[0]), ng);
	float s = __fdiv_rn(pkb_to_float(*sur), ng);
	*loss = __fsub_rn(__fadd_rn(pg, s), s);
	metrics[0] = __fdiv_rn(pkb_to_float(sums[1]), ng);
	metrics[1] = pkb_to_float(mnmx[0]);
	metrics[2] = pkb_to_float(mnmx[1]);
	metrics[3] = __fdiv_rn(pkb_to_float(sums[2]), ng);
	metrics[4] = __fdiv_rn(pkb_to_float(sums[3]), ng);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	int64_t m = ctx->in[0].shape[0], v = ctx->in[1].shape[0];
	size_t e = pkb_dtype_size(ctx->in[0].dtype);
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->logits, (size_t)m * v * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->part, (size_t)P_COUNT * m * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->sums, 4 * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->mnmx, 2 * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->sur, e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->count, sizeof(float)));
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	pkb_dtype dt = ctx->in[0].dtype;
	int64_t m = ctx->in[0].shape[0], n = ctx->in[0].shape[1], v = ctx->in[1].shape[0];
	int64_t ignore = (int64_t)pkb_param_get(ctx, "ignore_index", -100);
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, dt, &nt));

	/* logits (M, V) = hidden (M, N) @ weight (V, N)^T */
	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 1, m, v, n, 1.0, ctx->in[0].data, n,
			       ctx->in[1].data, n, 0.0, s->logits, v, dt));
	token_rows<T><<<(unsigned)m, ROW_THREADS, 0, st>>>(
		(const T *)s->logits, v, (const int64_t *)ctx->in[2].data,
		(const T *)ctx->in[3].data, (const T *)ctx->in[4].data, ignore,
		(T *)ctx->out[1].data, (T *)ctx->out[2].data, s->part, m);
	PKB_CK_LAUNCH(ctx);
	local_sums<T><<<1, SUM_THREADS, 0, st>>>((const T *)ctx->out[2].data, s->part, m,
						 (T *)s->sums, (T *)s->mnmx, (T *)s->sur, s->count);
	PKB_CK_LAUNCH(ctx);
	T *mnmx = (T *)s->mnmx;
	PKB_CK_NCCL(ctx, ncclGroupStart());
	PKB_CK_NCCL(ctx, ncclAllReduce(s->count, s->count, 1, ncclFloat32, ncclSum, comm, st));
	PKB_CK_NCCL(ctx, ncclAllReduce(s->sums, s->sums, 4, nt, ncclSum, comm, st));
	PKB_CK_NCCL(ctx, ncclAllReduce(mnmx, mnmx, 1, nt, ncclMin, comm, st));
	PKB_CK_NCCL(ctx, ncclAllReduce(mnmx + 1, mnmx + 1, 1, nt, ncclMax, comm, st));
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	finish<T><<<1, 1, 0, st>>>((const T *)s->sums, mnmx, (const T *)s->sur, s->count,
				   (float *)ctx->out[0].data, (float *)ctx->out[3].data);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->logits);
	cudaFree(s->part);
	cudaFree(s->sums);
	cudaFree(s->mnmx);
	cudaFree(s->sur);
	cudaFree(s->count);
}

PKB_REF_FLOAT_RUN_FINI(struct state, launch, release)
