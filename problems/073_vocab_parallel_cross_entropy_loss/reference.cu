/*
 * 073_vocab_parallel_cross_entropy_loss reference: Megatron's algorithm as
 * the original runs it -- a row max, an NCCL all-reduce MAX, the shifted
 * logits' target pick and sum of exponentials, two NCCL all-reduces SUM,
 * then the loss. Every intermediate is a tensor in T, so each is rounded
 * to T (T = the dtype, fp32 arithmetic in between):
 *     mx[i]   = max_j x[i,j]                      all-reduce MAX  (exact)
 *     z       = T(x - mx)                          (the original's in-place sub_)
 *     pred[i] = z[i, target[i] - r*K] if this rank owns it, else 0
 *                                                  all-reduce SUM (one non-zero: exact)
 *     se[i]   = T(sum_j T(exp(z[i,j])))           all-reduce SUM in T
 *     loss[i] = T(T(log se[i]) - pred[i])
 * The original subtracts the max from its input in place; pkb inputs are
 * read-only, so z is formed in registers where it is used.
 *
 * Bytes: the logits read twice (2 MiB at W = 4 in bf16); three all-reduces
 * of R = 8192 values in T.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256
#define WARPS (THREADS / 32)

struct state {
	void *mx;     /* [R] T: row max, all-reduced MAX */
	void *pred;   /* [R] T: target logit or 0, all-reduced SUM */
	void *se;     /* [R] T: sum of exponentials, all-reduced SUM */
};

/* a warp per row */
template <typename T>
__global__ void __launch_bounds__(THREADS)
row_max(const T *x, T *mx, int64_t rows, int k)
{
	int lane = threadIdx.x & 31;
	int64_t i = blockIdx.x * (int64_t)WARPS + (threadIdx.x >> 5);
	if (i >= rows)
		return;
	float m = -INFINITY;
	for (int j = lane; j < k; j += 32)
		m = fmaxf(m, pkb_to_float(x[i * k + j]));
	for (int o = 16; o > 0; o >>= 1)
		m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
	if (lane == 0)
		mx[i] = pkb_from_float<T>(m);   /* exact: a value of x */
}

/* a warp per row: the target pick and the shard's sum of T(exp(z)) */
template <typename T>
__global__ void __launch_bounds__(THREADS)
shifted_terms(const T *x, const int64_t *target, const T *mx, T *pred, T *se, int64_t rows,
	      int k, int64_t vocab_start)
{
	int lane = threadIdx.x & 31;
	int64_t i = blockIdx.x * (int64_t)WARPS + (threadIdx.x >> 5);
	if (i >= rows)
		return;
	float m = pkb_to_float(mx[i]);
	float s = 0.f;
	for (int j = lane; j < k; j += 32) {
		float z = pkb_to_float(pkb_from_float<T>(pkb_to_float(x[i * k + j]) - m));
		s += pkb_to_float(pkb_from_float<T>(expf(z)));
	}
	for (int o = 16; o > 0; o >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	if (lane == 0) {
		int64_t t = target[i] - vocab_start;
		bool mine = t >= 0 && t < k;
		pred[i] = mine ? pkb_from_float<T>(pkb_to_float(x[i * k + t]) - m)
			       : pkb_from_float<T>(0.f);
		se[i] = pkb_from_float<T>(s);
	}
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
finish(const T *se, const T *pred, T *loss, int64_t rows)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < rows;
	     i += (int64_t)gridDim.x * THREADS) {
		float l = pkb_to_float(pkb_from_float<T>(logf(pkb_to_float(se[i]))));
		loss[i] = pkb_from_float<T>(l - pkb_to_float(pred[i]));
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	size_t bytes = (size_t)ctx->out[0].numel * pkb_dtype_size(ctx->in[0].dtype);
	PKB_CK_CUDA(ctx, cudaMalloc(&s->mx, bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->pred, bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->se, bytes));
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));
	const T *x = (const T *)ctx->in[0].data;
	int64_t rows = ctx->out[0].numel;
	int k = (int)ctx->in[0].shape[2];
	unsigned blocks = (unsigned)((rows + WARPS - 1) / WARPS);
	row_max<T><<<blocks, THREADS, 0, st>>>(x, (T *)s->mx, rows, k);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclAllReduce(s->mx, s->mx, rows, nt, ncclMax, comm, st));
	shifted_terms<T><<<blocks, THREADS, 0, st>>>(x, (const int64_t *)ctx->in[1].data,
						     (const T *)s->mx, (T *)s->pred, (T *)s->se,
						     rows, k, (int64_t)ctx->rank * k);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclAllReduce(s->pred, s->pred, rows, nt, ncclSum, comm, st));
	PKB_CK_NCCL(ctx, ncclAllReduce(s->se, s->se, rows, nt, ncclSum, comm, st));
	finish<T><<<pkb_ref_blocks(rows, THREADS, 1024), THREADS, 0, st>>>(
		(const T *)s->se, (const T *)s->pred, (T *)ctx->out[0].data, rows);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	cudaFree(s->mx);
	cudaFree(s->pred);
	cudaFree(s->se);
}

PKB_REF_FLOAT_RUN_FINI(struct state, launch, release)
