/*
 * pkb_ref.cuh -- the host helpers every problem reference shares: check
 * macros for CUDA, NCCL, cuBLAS and cuFFT calls, the entry points' common parts
 * (the state pkb_init makes and pkb_fini frees, pkb_run's switch over the
 * dtype) and whole entry points made of them, checked dtype mappings, the
 * all-to-all NCCL does not have, a cuBLAS handle bound to the harness
 * stream, and the row-major GEMM call.
 *
 * References only. A candidate stays one self-contained file (it is what a
 * model writes and what a prompt shows): it does not include this header.
 *
 * Every helper reports through ctx->svc->log with file:line, the call and the
 * library's own message, and returns non-zero; a check macro returns 1 from
 * the entry point (pkb_init / pkb_run / pkb_fini) that uses it, which the
 * harness turns into runtime_error for the rank. An unsupported dtype is
 * refused, never mapped to a default.
 */
#ifndef PKB_REF_CUH
#define PKB_REF_CUH

#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include <nccl.h>
#include "pkb.h"

/* ---- checks ---------------------------------------------------------------- */

#define PKB_CK_CUDA(ctx, call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
	(ctx)->svc->log((ctx), "%s:%d %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
	return 1; } } while (0)
#define PKB_CK_NCCL(ctx, call) do { ncclResult_t e_ = (call); if (e_ != ncclSuccess) { \
	(ctx)->svc->log((ctx), "%s:%d %s: %s", __FILE__, __LINE__, #call, ncclGetErrorString(e_)); \
	return 1; } } while (0)
#define PKB_CK_BLAS(ctx, call) do { cublasStatus_t e_ = (call); if (e_ != CUBLAS_STATUS_SUCCESS) { \
	(ctx)->svc->log((ctx), "%s:%d %s: %s", __FILE__, __LINE__, #call, cublasGetStatusString(e_)); \
	return 1; } } while (0)
/* cuFFT (cufft.h, included by the references that use it, has no message
 * strings: the status number) */
#define PKB_CK_FFT(ctx, call) do { cufftResult e_ = (call); if (e_ != CUFFT_SUCCESS) { \
	(ctx)->svc->log((ctx), "%s:%d %s: cuFFT error %d", __FILE__, __LINE__, #call, (int)e_); \
	return 1; } } while (0)
/* a helper of this header (or any int-returning call) that logged already */
#define PKB_CK(call) do { if ((call) != 0) return 1; } while (0)
/* a launch: the configuration error, if any, is read right after it */
#define PKB_CK_LAUNCH(ctx) PKB_CK_CUDA(ctx, cudaGetLastError())

/* ---- the entry points ---------------------------------------------------------- */

/* pkb_init: *s = a zeroed S on ctx->user, for pkb_run and pkb_fini (which
 * frees it with pkb_ref_fini); 1, logged, when the host is out of memory */
template <typename S>
static inline int pkb_ref_state(pkb_ctx *ctx, S **s)
{
	*s = (S *)calloc(1, sizeof(S));
	if (!*s) {
		ctx->svc->log(ctx, "problem %d reference: out of host memory", ctx->problem_id);
		return 1;
	}
	ctx->user = *s;
	return 0;
}

/* pkb_fini: release(s), what the state holds, then the state itself, when
 * pkb_init made one (it may have failed before); ctx->user is NULL after */
template <typename S>
static inline int pkb_ref_fini(pkb_ctx *ctx, void (*release)(S *))
{
	S *s = (S *)ctx->user;
	if (s) {
		release(s);
		free(s);
	}
	ctx->user = NULL;
	return 0;
}

/* pkb_run's switch over a float dtype t: fn<T>(...) with T its element type
 * (bf16, fp16, fp32), the three instantiated in that order; 1 for any other
 * t (pkb_init refused it already: pkb_ref_float_dtype) */
#define PKB_REF_FLOAT_CALL(t, fn, ...)                                  \
	((t) == PKB_BF16 ? fn<__nv_bfloat16>(__VA_ARGS__) :             \
	 (t) == PKB_FP16 ? fn<__half>(__VA_ARGS__) :                    \
	 (t) == PKB_FP32 ? fn<float>(__VA_ARGS__) : 1)

static inline const char *pkb_ref_dtype_name(pkb_dtype t)
{
	static const char *const names[PKB_DTYPE_COUNT] = {
		"bf16", "fp16", "fp32", "fp64", "int8", "uint8", "int32", "int64",
		"bool", "fp8_e4m3", "fp8_e5m2", "complex64",
	};
	return (unsigned)t < PKB_DTYPE_COUNT ? names[t] : "?";
}

/* ---- dtype mappings (refuse what the library cannot take) -------------------- */

static inline int pkb_ref_nccl_type(pkb_ctx *ctx, pkb_dtype t, ncclDataType_t *out)
{
	switch (t) {
	case PKB_BF16: *out = ncclBfloat16; return 0;
	case PKB_FP16: *out = ncclFloat16; return 0;
	case PKB_FP32: *out = ncclFloat32; return 0;
	case PKB_FP64: *out = ncclFloat64; return 0;
	case PKB_I8: *out = ncclInt8; return 0;
	case PKB_U8: case PKB_BOOL: *out = ncclUint8; return 0;
	case PKB_I32: *out = ncclInt32; return 0;
	case PKB_I64: *out = ncclInt64; return 0;
	case PKB_FP8_E4M3: *out = ncclFloat8e4m3; return 0;
	case PKB_FP8_E5M2: *out = ncclFloat8e5m2; return 0;
	default:
		/* complex64 moves as 2 fp32: callers say so with pkb_ref_nccl_count */
		ctx->svc->log(ctx, "problem %d reference: no NCCL type for dtype %s",
			      ctx->problem_id, pkb_ref_dtype_name(t));
		return 1;
	}
}

/* The NCCL type and element count that move `numel` elements of dtype t
 * (complex64 as twice as many fp32: only for data movement and sums). */
static inline int pkb_ref_nccl_count(pkb_ctx *ctx, pkb_dtype t, size_t numel,
				     ncclDataType_t *type, size_t *count)
{
	if (t == PKB_C64) {
		*type = ncclFloat32;
		*count = 2 * numel;
		return 0;
	}
	*count = numel;
	return pkb_ref_nccl_type(ctx, t, type);
}

static inline int pkb_ref_blas_type(pkb_ctx *ctx, pkb_dtype t, cudaDataType *out)
{
	switch (t) {
	case PKB_BF16: *out = CUDA_R_16BF; return 0;
	case PKB_FP16: *out = CUDA_R_16F; return 0;
	case PKB_FP32: *out = CUDA_R_32F; return 0;
	case PKB_FP64: *out = CUDA_R_64F; return 0;
	case PKB_I8: *out = CUDA_R_8I; return 0;
	case PKB_FP8_E4M3: *out = CUDA_R_8F_E4M3; return 0;
	case PKB_FP8_E5M2: *out = CUDA_R_8F_E5M2; return 0;
	case PKB_C64: *out = CUDA_C_32F; return 0;
	default:
		ctx->svc->log(ctx, "problem %d reference: no cuBLAS type for dtype %s",
			      ctx->problem_id, pkb_ref_dtype_name(t));
		return 1;
	}
}

/* Refuse a dtype outside {bf16, fp16, fp32}, the harness dtypes of most
 * problems, naming the problem: call it from pkb_init. */
static inline int pkb_ref_float_dtype(pkb_ctx *ctx, pkb_dtype t)
{
	if (t == PKB_BF16 || t == PKB_FP16 || t == PKB_FP32)
		return 0;
	ctx->svc->log(ctx, "problem %d reference: unsupported dtype %s",
		      ctx->problem_id, pkb_ref_dtype_name(t));
	return 1;
}

/* ---- whole entry points ------------------------------------------------------ */

/*
 * pkb_run hands a reference's run function ctx (and the state pkb_init made)
 * with ctx's stream and communicator typed: run(ctx, [s,] st, comm). A
 * "FLOAT" macro calls the template launch<T> instead, T the element type of
 * in[0]'s float dtype (PKB_REF_FLOAT_CALL), as pkb_init has checked it.
 */
#define PKB_REF_RUN_ARGS_(ctx) (cudaStream_t)(ctx)->stream, (ncclComm_t)(ctx)->nccl_comm

/* pkb_init's checks of a stateless reference: none; in[0]'s dtype one NCCL
 * can move; in[0]'s dtype bf16, fp16 or fp32 */
static inline int pkb_ref_init_none(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}

static inline int pkb_ref_init_nccl(pkb_ctx *ctx)
{
	ncclDataType_t t;
	return pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &t);
}

static inline int pkb_ref_init_float(pkb_ctx *ctx)
{
	return pkb_ref_float_dtype(ctx, ctx->in[0].dtype);
}

/* The three entry points of a reference without state: pkb_init is
 * init(ctx), pkb_run run(ctx, st, comm) (FLOAT: launch<T>(ctx, st, comm)),
 * pkb_fini has nothing to free. */
#define PKB_REF_STATELESS(init, run)                                          \
	extern "C" int pkb_init(pkb_ctx *ctx) { return init(ctx); }           \
	extern "C" int pkb_run(pkb_ctx *ctx)                                  \
	{                                                                     \
		return run(ctx, PKB_REF_RUN_ARGS_(ctx));                      \
	}                                                                     \
	extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
#define PKB_REF_FLOAT_STATELESS(init, launch)                                 \
	extern "C" int pkb_init(pkb_ctx *ctx) { return init(ctx); }           \
	extern "C" int pkb_run(pkb_ctx *ctx)                                  \
	{                                                                     \
		return PKB_REF_FLOAT_CALL(ctx->in[0].dtype, launch, ctx,      \
					  PKB_REF_RUN_ARGS_(ctx));            \
	}                                                                     \
	extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }

/* pkb_init's usual start: refuse in[0]'s dtype unless it is a float one
 * (pkb_ref_float_dtype), then *s = a zeroed S (pkb_ref_state) */
template <typename S>
static inline int pkb_ref_float_state(pkb_ctx *ctx, S **s)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	return pkb_ref_state(ctx, s);
}

/* pkb_run and pkb_fini of a reference whose pkb_init made an S
 * (pkb_ref_state): pkb_run is run(ctx, s, st, comm) (FLOAT: launch<T>(ctx,
 * s, st, comm)), pkb_fini frees s with release (pkb_ref_fini). */
#define PKB_REF_RUN_FINI(S, run, release)                                     \
	extern "C" int pkb_run(pkb_ctx *ctx)                                  \
	{                                                                     \
		return run(ctx, (S *)ctx->user, PKB_REF_RUN_ARGS_(ctx));      \
	}                                                                     \
	extern "C" int pkb_fini(pkb_ctx *ctx) { return pkb_ref_fini(ctx, release); }
#define PKB_REF_FLOAT_RUN_FINI(S, launch, release)                            \
	extern "C" int pkb_run(pkb_ctx *ctx)                                  \
	{                                                                     \
		return PKB_REF_FLOAT_CALL(ctx->in[0].dtype, launch, ctx,      \
					  (S *)ctx->user, PKB_REF_RUN_ARGS_(ctx)); \
	}                                                                     \
	extern "C" int pkb_fini(pkb_ctx *ctx) { return pkb_ref_fini(ctx, release); }

/* Refuse a world above `most`, the ranks a reference's fixed tables hold. */
static inline int pkb_ref_max_world(pkb_ctx *ctx, int most)
{
	if (ctx->world <= most)
		return 0;
	ctx->svc->log(ctx, "problem %d reference: at most %d ranks", ctx->problem_id, most);
	return 1;
}

/* ---- all-to-all ---------------------------------------------------------------- */

/* One all-to-all's buffers: block j of send (`bytes` bytes, blocks `stride`
 * bytes apart) goes to rank j; rank j's block lands in block j of recv. */
struct pkb_ref_a2a {
	const void *send;
	void *recv;
	size_t bytes, stride;
};

/*
 * n all-to-alls over ctx's communicator and stream as one NCCL group of
 * send/recv pairs (NCCL has no all-to-all): step k pairs this rank with
 * rank+k sending and rank-k receiving, so every step is a permutation and
 * no rank is flooded; within a step, x[0] .. x[n-1] in order. The group is
 * ended even after a failed call. 0, or 1 after logging.
 */
static inline int pkb_ref_all_to_all_n(pkb_ctx *ctx, const struct pkb_ref_a2a *x, int n)
{
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int me = ctx->rank, w = ctx->world;
	ncclResult_t r = ncclGroupStart();
	for (int k = 0; k < w && r == ncclSuccess; k++) {
		int to = (me + k) % w, from = (me - k + w) % w;
		for (int i = 0; i < n && r == ncclSuccess; i++) {
			r = ncclSend((const char *)x[i].send + to * x[i].stride, x[i].bytes, ncclUint8,
				     to, comm, st);
			if (r == ncclSuccess)
				r = ncclRecv((char *)x[i].recv + from * x[i].stride, x[i].bytes,
					     ncclUint8, from, comm, st);
		}
	}
	ncclResult_t e = ncclGroupEnd();
	if (r == ncclSuccess)
		r = e;
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "all-to-all send/recv: %s", ncclGetErrorString(r));
		return 1;
	}
	return 0;
}

/* one all-to-all of contiguous blocks of `bytes` bytes */
static inline int pkb_ref_all_to_all(pkb_ctx *ctx, const void *send, void *recv, size_t bytes)
{
	struct pkb_ref_a2a x = { send, recv, bytes, bytes };
	return pkb_ref_all_to_all_n(ctx, &x, 1);
}

/* The same but for this rank's own block, which the caller moves: block p of
 * send (count elements of nt, esize bytes each) to rank p, rank p's into
 * block p of recv, peers in rank order, in one NCCL group. */
static inline int pkb_ref_all_to_all_others(pkb_ctx *ctx, const void *send, void *recv,
					    size_t count, ncclDataType_t nt, size_t esize)
{
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int p = 0; p < ctx->world; p++) {
		size_t at = p * count * esize;
		if (p == ctx->rank)
			continue;
		PKB_CK_NCCL(ctx, ncclSend((const char *)send + at, count, nt, p, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv((char *)recv + at, count, nt, p, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	return 0;
}

/* ---- cuBLAS ------------------------------------------------------------------ */

#define PKB_REF_BLAS_WORKSPACE (32u << 20)   /* cuBLAS's recommendation for Hopper */

/* A handle with its own workspace, bound to the stream of the call. */
struct pkb_ref_blas {
	cublasHandle_t h;
	cudaStream_t bound;
	int is_bound;
	void *workspace;
};

/* Create the handle: fp32 reductions inside cuBLAS (split-K), as the fp32
 * accumulation the tolerances assume, and no TF32 (torch's default). */
static inline int pkb_ref_blas_init(pkb_ctx *ctx, struct pkb_ref_blas *b)
{
	PKB_CK_BLAS(ctx, cublasCreate(&b->h));
	PKB_CK_BLAS(ctx, cublasSetMathMode(b->h, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
		CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
	PKB_CK_CUDA(ctx, cudaMalloc(&b->workspace, PKB_REF_BLAS_WORKSPACE));
	return 0;
}

/* Bind the handle to stream st (a no-op when it is bound to it already). */
static inline int pkb_ref_blas_bind(pkb_ctx *ctx, struct pkb_ref_blas *b, cudaStream_t st)
{
	if (b->is_bound && b->bound == st)
		return 0;
	/* cublasSetStream drops the user workspace: set it again after */
	PKB_CK_BLAS(ctx, cublasSetStream(b->h, st));
	PKB_CK_BLAS(ctx, cublasSetWorkspace(b->h, b->workspace, PKB_REF_BLAS_WORKSPACE));
	b->bound = st;
	b->is_bound = 1;
	return 0;
}

static inline void pkb_ref_blas_fini(struct pkb_ref_blas *b)
{
	if (b->h)
		cublasDestroy(b->h);
	cudaFree(b->workspace);
	b->h = NULL;
	b->workspace = NULL;
	b->is_bound = 0;
}

/*
 * Row-major C (m, n) = alpha * op(A) (m, k) @ op(B) (k, n) + beta * C, all of
 * dtype t (lda, ldb, ldc: row strides in elements, as torch has them), with
 * fp32 accumulation (fp64 for fp64). A row-major (r, c) buffer is the
 * column-major c x r matrix of its transpose, so C^T = op(B)^T op(A)^T: the
 * operands swap and m, n swap; the ops stay as given. alpha and beta are
 * host floats (doubles for fp64).
 */
static inline int pkb_ref_gemm_rm(pkb_ctx *ctx, cublasHandle_t h, int trans_a, int trans_b,
				  int64_t m, int64_t n, int64_t k, double alpha,
				  const void *a, int64_t lda, const void *b, int64_t ldb,
				  double beta, void *c, int64_t ldc, pkb_dtype t)
{
	cudaDataType dt;
	PKB_CK(pkb_ref_blas_type(ctx, t, &dt));
	cublasOperation_t oa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	if (t == PKB_FP64) {
		PKB_CK_BLAS(ctx, cublasGemmEx(h, ob, oa, (int)n, (int)m, (int)k, &alpha,
					      b, dt, (int)ldb, a, dt, (int)lda, &beta,
					      c, dt, (int)ldc, CUBLAS_COMPUTE_64F,
					      CUBLAS_GEMM_DEFAULT));
		return 0;
	}
	const float fa = (float)alpha, fb = (float)beta;
	PKB_CK_BLAS(ctx, cublasGemmEx(h, ob, oa, (int)n, (int)m, (int)k, &fa,
				      b, dt, (int)ldb, a, dt, (int)lda, &fb,
				      c, dt, (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* The same, for `batch` GEMMs whose operands are `stride_*` elements apart. */
static inline int pkb_ref_gemm_rm_batched(pkb_ctx *ctx, cublasHandle_t h, int trans_a,
					  int trans_b, int64_t m, int64_t n, int64_t k,
					  double alpha, const void *a, int64_t lda,
					  int64_t stride_a, const void *b, int64_t ldb,
					  int64_t stride_b, double beta, void *c, int64_t ldc,
					  int64_t stride_c, int64_t batch, pkb_dtype t)
{
	cudaDataType dt;
	PKB_CK(pkb_ref_blas_type(ctx, t, &dt));
	cublasOperation_t oa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	const float fa = (float)alpha, fb = (float)beta;
	const void *pa = t == PKB_FP64 ? (const void *)&alpha : (const void *)&fa;
	const void *pb = t == PKB_FP64 ? (const void *)&beta : (const void *)&fb;
	PKB_CK_BLAS(ctx, cublasGemmStridedBatchedEx(h, ob, oa, (int)n, (int)m, (int)k, pa,
						    b, dt, (int)ldb, stride_b, a, dt, (int)lda,
						    stride_a, pb, c, dt, (int)ldc, stride_c,
						    (int)batch,
						    t == PKB_FP64 ? CUBLAS_COMPUTE_64F
								  : CUBLAS_COMPUTE_32F,
						    CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* ---- launches ------------------------------------------------------------------ */

/* blocks of `threads` covering n items, capped at `cap` (grid-stride loops) */
static inline unsigned pkb_ref_blocks(int64_t n, unsigned threads, unsigned cap)
{
	int64_t b = (n + threads - 1) / threads;
	return b < 1 ? 1u : b > (int64_t)cap ? cap : (unsigned)b;
}

#endif /* PKB_REF_CUH */
